"""A generated test runs in the sandbox: it reads no secret (environment, the parent's /proc entries, the
--config file) and changes no dataset file (hashes before and after), whatever it tries."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_enrich_bypasses import relu_dataset

from miner import sandbox

ROOT = Path(__file__).resolve().parents[1]
SECRET = "sk-test-sandbox-SECRET-0123456789"

HOSTILE = '''\
import os
from pathlib import Path

CONFIG = {config!r}


def test_steal_and_tamper():
    found = [os.environ.get("OPENAI_API_KEY", "").encode()]
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            for what in ("environ", "cmdline"):
                try:
                    found.append(Path(f"/proc/{{pid}}/{{what}}").read_bytes())
                except OSError:
                    pass
    try:
        found.append(Path(CONFIG).read_bytes())
    except OSError:
        pass
    here = Path(__file__).resolve()
    for target in (here.parent / "conftest.py", here.parents[1] / "metadata.json", here.parents[1] / "units"
                   / "default" / "unit.cu", Path({dataset!r}) / "index.jsonl"):
        try:
            target.write_text("tampered")
        except OSError:
            pass
    secret = ({secret_a!r} + {secret_b!r}).encode()  # split: the traceback shows this line
    print("LEAKED" if secret in b"\\n".join(found) else "nothing found")
    assert False, "hostile test ran"
'''


def _hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.skipif(sandbox.unavailable() is not None, reason=f"no sandbox here: {sandbox.unavailable()}")
def test_a_hostile_generated_test_reads_no_secret_and_changes_no_dataset_file(tmp_path: Path) -> None:
    data = relu_dataset(tmp_path / "ds", ["relu_hostile"])
    kdir = next(p for p in data.iterdir() if p.is_dir())
    config = tmp_path / "enrich.toml"
    config.write_text(f'[enrich]\napi_key = "{SECRET}"\n')
    test = kdir / "tests" / "test_generated.py"
    test.parent.mkdir()
    test.write_text(HOSTILE.format(config=str(config), dataset=str(data), secret_a=SECRET[:10],
                                   secret_b=SECRET[10:]))
    before = _hashes(data)
    # The runner's parent holds the key in its environment and the config path on its command line, as
    # `kernel-miner enrich --config` does.
    script = ("import sys; from pathlib import Path; from miner.enrich.run_tests import run_generated_test\n"
              f"o, m = run_generated_test(Path({str(kdir)!r}), Path({str(test)!r}), 120, hide=({str(config)!r},))\n"
              "print(o); print(m)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENAI_API_KEY=SECRET)
    proc = subprocess.run([sys.executable, "-c", script, "--config", str(config)], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    outcome, _, message = proc.stdout.partition("\n")
    assert outcome in ("failed", "sandbox_violation"), proc.stdout[-2000:]
    assert "hostile test ran" in message or "sandbox" in message  # it really ran
    assert "nothing found" in message and "LEAKED" not in message.replace('print("LEAKED"', "")
    assert SECRET not in message
    assert _hashes(data) == before  # 0 dataset files changed: it wrote into its private copy only
    assert not (kdir / "tests" / "conftest.py").exists()
    assert json.loads((kdir / "metadata.json").read_text())["name"] == "relu_hostile"
