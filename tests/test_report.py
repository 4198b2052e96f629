"""`kernel-miner report`: a self-contained HTML page, opened in a real headless Chromium (screenshot and DOM)."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from miner.scale.report import COLORS
from tests.conftest import run_miner

PLOTS = ["kernels-per-repo", "outcomes", "origins", "registers", "shared", "speedups", "dedupe", "stage-time"]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# As root, in a closed network: no sandbox, no GPU, no background connections (machines/python.md).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture()
def page(mined_repos: Path, tmp_path: Path) -> Path:
    ds = tmp_path / "ds"
    shutil.copytree(mined_repos, ds)
    res = run_miner("report", ds)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"7 kernels from 3 repositories -> {ds / 'report.html'}"
    return ds / "report.html"


def test_page_is_self_contained_with_every_plot(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    # Nothing fetched: no external script, style, image or font; the only URL is the SVG namespace.
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", text)
    assert set(re.findall(r"https?://[^\s\"'<>]+", text)) <= {"http://www.w3.org/2000/svg"}
    for plot in PLOTS:
        m = re.search(rf'<figure class="plot" id="plot-{plot}">(.*?)</figure>', text, re.S)
        assert m and "<svg" in m.group(1), plot
    kpr = re.search(r'id="plot-kernels-per-repo">(.*?)</figure>', text, re.S).group(1)
    assert re.findall(r"<title>(\w+): (\d+)</title>", kpr) == [("alpha", "3"), ("beta", "3"), ("gamma", "1")]
    dd = re.search(r'id="plot-dedupe">(.*?)</figure>', text, re.S).group(1)
    assert "2 clusters with copies, 2 duplicate kernels" in dd
    if shutil.which("nvcc"):  # the fixture dataset was built: ptxas resource usage is plotted
        assert "nothing measured" not in re.search(r'id="plot-registers">(.*?)</figure>', text, re.S).group(1)


def _chromium(page: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args, page.as_uri()],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (apt-get install chromium)")
def test_headless_browser_renders_plots_and_table(page: Path, tmp_path: Path) -> None:
    Image = pytest.importorskip("PIL.Image")
    dom = _chromium(page, tmp_path, "--virtual-time-budget=5000", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    # The script ran: it filled the table from the embedded data.
    assert "7 of 7 kernels" in html
    body = re.search(r"<tbody>(.*?)</tbody>", html, re.S).group(1)
    assert body.count("<tr>") == 7 and 'href="add_one-' in body
    assert len(re.findall(r'<figure class="plot" id="plot-[\w-]+"><figcaption>[^<]+</figcaption><svg', html)) == 8
    shot = tmp_path / "shot.png"
    res = _chromium(page, tmp_path, "--window-size=1400,1600", f"--screenshot={shot}")
    assert res.returncode == 0 and shot.is_file(), res.stderr[-2000:]
    img = Image.open(shot).convert("RGB")
    assert img.size == (1400, 1600)
    colors = Counter({rgb: n for n, rgb in img.getcolors(maxcolors=1 << 24)})
    # Each plot draws in its own colour: find its bars on the screenshot.
    shown = ["kernels-per-repo", "origins", "dedupe", "stage-time"] + (["registers"] if shutil.which("nvcc") else [])
    for name in shown:
        rgb = tuple(int(COLORS[name][i:i + 2], 16) for i in (1, 3, 5))
        assert colors[rgb] > 150, f"{name}: its bars are not on the screenshot"



