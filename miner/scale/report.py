"""`kernel-miner report DS`: one self-contained HTML page (inline SVG plots, inline JS table, no network)."""

from __future__ import annotations

import html
import json
import os
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any

from miner import __version__, dataset
from miner.dataset import atomic
from miner.errors import UsageError
from miner.scale import svg
from miner.scale.ledger import LEDGER


def _repo_label(meta: dict[str, Any], trees: dict[str, str]) -> str:
    """owner/name of the remote, else the folder a `mine` run took the kernel from."""
    url = (meta.get("source") or {}).get("repo")
    if url:
        parts = url.rstrip("/").removesuffix(".git").replace(":", "/").split("/")
        return "/".join(parts[-2:])
    return trees.get(str(meta.get("id")), "(local tree)")


def _ledger(ds: Path) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Kernel id -> repo folder name, and per repo its stage rows, from a `mine` ledger (if any)."""
    if not (ds / LEDGER).is_file():
        return {}, []
    db = sqlite3.connect(f"file:{ds / LEDGER}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        trees = {r["id"]: os.path.basename(r["repo"]) for r in db.execute("SELECT id, repo FROM kernels")}
        stages = [dict(r) for r in db.execute("SELECT repo, stage, state, attempts, seconds, error FROM stages "
                                              "ORDER BY repo, stage")]
    except sqlite3.Error:
        return {}, []
    finally:
        db.close()
    for s in stages:
        s["repo"] = os.path.basename(s["repo"])
    return trees, stages


def _metas(ds: Path) -> list[dict[str, Any]]:
    records = [r for r in dataset.read_index(ds) if isinstance(r.get("id"), str)]
    seen = {r["id"] for r in records}
    for d in dataset.kernel_dirs(ds):
        if d.name not in seen:
            try:
                records.append(dataset.load_metadata(d))
            except (OSError, ValueError):
                continue
    return list({r["id"]: r for r in records}.values())


def collect(ds: Path) -> dict[str, Any]:
    metas = _metas(ds)
    trees, stages = _ledger(ds)
    per_repo: Counter[str] = Counter()
    build: Counter[str] = Counter()
    validation: Counter[str] = Counter()
    origins: Counter[str] = Counter()
    regs: list[float] = []
    smem: list[float] = []
    speedups: list[float] = []
    cluster_sizes: Counter[str] = Counter()
    rows = []
    for m in metas:
        repo = _repo_label(m, trees)
        per_repo[repo] += 1
        b = m.get("build")
        b_state = "not built" if not isinstance(b, dict) else ("ok" if b.get("pass_call") else
                                                               "failed" if b.get("units") else "none")
        build[b_state] += 1
        v = m.get("validation") if isinstance(m.get("validation"), dict) else {}
        validation[v.get("outcome") or "not validated"] += 1
        if isinstance(v.get("speedup"), (int, float)) and v["speedup"] > 0:
            speedups.append(float(v["speedup"]))
        for inst in m.get("instantiations") or []:
            origins[str(inst.get("origin"))] += 1
            res = (inst.get("build") or {}).get("resources") or {}
            if isinstance(res.get("registers"), (int, float)):
                regs.append(float(res["registers"]))
            if isinstance(res.get("shared_bytes"), (int, float)):
                smem.append(float(res["shared_bytes"]))
        dd = m.get("dedupe") or {}
        if dd.get("cluster"):
            cluster_sizes[dd["cluster"]] += 1
        src = m.get("source") or {}
        rows.append({"id": m["id"], "name": m.get("name"), "repo": repo, "path": src.get("path"),
                     "line": src.get("start_line"), "license": src.get("license") or "unknown",
                     "frontend": m.get("frontend"), "units": len(m.get("instantiations") or []), "build": b_state,
                     "validation": v.get("outcome") or "", "speedup": v.get("speedup"),
                     "duplicate_of": dd.get("duplicate_of") or "", "dup": dd.get("kind") or ""})
    size_hist: Counter[int] = Counter(cluster_sizes.values())
    return {"metas": len(metas), "per_repo": per_repo, "build": build, "validation": validation,
            "origins": origins, "registers": regs, "shared": smem, "speedups": speedups,
            "cluster_size_hist": size_hist, "clusters": cluster_sizes, "rows": rows, "stages": stages}


# One colour per plot, none shared with the outcome colours, so a plot can be told apart on a screenshot.
COLORS = {"kernels-per-repo": "#4C78A8", "origins": "#6F4E9C", "registers": "#8C6D31", "shared": "#637939",
          "speedups": "#E6550D", "dedupe": "#C0392B", "stage-time": "#2F8F9D"}

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:0 0 8px}
.sub{color:#666;margin-bottom:18px}.grid{display:flex;flex-wrap:wrap;gap:16px}
figure.plot{border:1px solid #ddd;border-radius:6px;padding:12px;margin:0;background:#fff}
figcaption{font-weight:600;margin-bottom:6px}.kpi{display:flex;gap:24px;margin:12px 0 20px}
.kpi div{background:#f4f6f8;border-radius:6px;padding:8px 14px}.kpi b{display:block;font-size:20px}
table{border-collapse:collapse;font-size:12px;width:100%}th,td{border-bottom:1px solid #eee;padding:3px 6px;
text-align:left;white-space:nowrap}th{cursor:pointer;background:#f4f6f8;position:sticky;top:0}
#filter{width:360px;padding:5px;margin:8px 0}td a{color:#2a5db0}.muted{color:#888}
"""

_JS = """
(function(){
  const rows = JSON.parse(document.getElementById('kernel-data').textContent);
  const cols = ['name','repo','path','line','license','frontend','units','build','validation','speedup','dup',
                'duplicate_of'];
  const body = document.querySelector('#kernels tbody');
  const info = document.getElementById('shown');
  let key = null, dir = 1;
  function cell(r, c){
    if (c === 'name') return '<a href="' + encodeURIComponent(r.id) + '/kernel.cu">' + esc(r.name) + '</a>';
    if (c === 'speedup') return r.speedup == null ? '' : Number(r.speedup).toFixed(2);
    return esc(r[c] == null ? '' : r[c]);
  }
  function esc(s){ return String(s).replace(/[&<>"]/g, ch => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[ch])); }
  function draw(){
    const q = document.getElementById('filter').value.toLowerCase();
    let shown = rows.filter(r => !q || cols.some(c => String(r[c] == null ? '' : r[c]).toLowerCase().includes(q)));
    if (key) shown.sort((a, b) => (a[key] > b[key] ? 1 : a[key] < b[key] ? -1 : 0) * dir);
    body.innerHTML = shown.slice(0, 1000).map(r => '<tr>' + cols.map(c => '<td>' + cell(r, c) + '</td>').join('')
                                                 + '</tr>').join('');
    info.textContent = shown.length + ' of ' + rows.length + ' kernels'
                       + (shown.length > 1000 ? ' (first 1000 shown)' : '');
  }
  document.querySelectorAll('#kernels th').forEach((th, i) => th.addEventListener('click', () => {
    dir = key === cols[i] ? -dir : 1; key = cols[i]; draw(); }));
  document.getElementById('filter').addEventListener('input', draw);
  draw();
})();
"""


def _figure(fid: str, caption: str, chart: str) -> str:
    return f'<figure class="plot" id="plot-{fid}"><figcaption>{html.escape(caption)}</figcaption>{chart}</figure>'


def render(ds: Path, data: dict[str, Any]) -> str:
    top_repos = data["per_repo"].most_common(25)
    dup_hist = sorted(data["cluster_size_hist"].items())
    clusters = data["clusters"]
    multi = sum(1 for n in clusters.values() if n > 1)
    dup_kernels = sum(n - 1 for n in clusters.values() if n > 1)
    stage_secs: dict[str, float] = {}
    for s in data["stages"]:
        if s.get("seconds"):
            stage_secs[s["stage"]] = stage_secs.get(s["stage"], 0.0) + float(s["seconds"])
    stage_states: dict[str, dict[str, int]] = {}
    for s in data["stages"]:
        stage_states.setdefault(s["stage"], {}).setdefault(s["state"], 0)
        stage_states[s["stage"]][s["state"]] += 1
    figures = [
        _figure("kernels-per-repo", f"Kernels per repository (top {len(top_repos)} of {len(data['per_repo'])})",
                svg.hbars("kernels per repository", top_repos, color=COLORS["kernels-per-repo"])),
        _figure("outcomes", "Build and validation outcomes (kernels)",
                svg.stacked("outcomes", [("build", dict(data["build"])), ("validation", dict(data["validation"]))]
                            + [(f"{k} (repos)", v) for k, v in sorted(stage_states.items())])),
        _figure("origins", "Instantiation origins (units)",
                svg.hbars("instantiation origins", data["origins"].most_common(), color=COLORS["origins"])),
        _figure("registers", "Registers per thread (built units, ptxas)",
                svg.histogram("registers", data["registers"], color=COLORS["registers"])),
        _figure("shared", "Static shared memory per unit (bytes)",
                svg.histogram("shared memory", data["shared"], color=COLORS["shared"])),
        _figure("speedups", "Speedup over the reference (validated kernels with a benchmark)",
                svg.histogram("speedups", data["speedups"], log2=True, unit="x", color=COLORS["speedups"])),
        _figure("dedupe", f"Duplicate clusters: {multi} clusters with copies, {dup_kernels} duplicate kernels "
                          f"(bars: clusters by size)",
                svg.hbars("cluster sizes", [(f"size {k}", v) for k, v in dup_hist], color=COLORS["dedupe"])),
        _figure("stage-time", "Time per stage (seconds, all repositories, from the ledger)",
                svg.hbars("stage seconds", sorted(stage_secs.items()), color=COLORS["stage-time"], fmt="{:.1f}")),
    ]
    built = data["build"].get("ok", 0)
    passed = data["validation"].get("passed", 0)
    kpis = [("kernels", data["metas"]), ("repositories", len(data["per_repo"])), ("compile", built),
            ("pass", passed), ("duplicates", dup_kernels)]
    heads = ["name", "repo", "path", "line", "license", "frontend", "units", "build", "validation", "speedup",
             "duplicate", "duplicate of"]
    payload = json.dumps(data["rows"], ensure_ascii=False).replace("</", "<\\/")
    return "".join([
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>kernel-miner report: {html.escape(ds.resolve().name)}</title><style>{_CSS}</style></head><body>",
        f"<h1>kernel-miner report: {html.escape(ds.resolve().name)}</h1>",
        f"<div class=\"sub\">{data['metas']} kernels · kernel-miner {__version__} · "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}</div>",
        "<div class=\"kpi\">" + "".join(f"<div><b>{v}</b>{k}</div>" for k, v in kpis) + "</div>",
        "<div class=\"grid\">", *figures, "</div>",
        "<h2 style=\"margin-top:24px\">Kernels</h2>",
        "<input id=\"filter\" placeholder=\"filter: name, repo, path, license, outcome ...\"> "
        "<span id=\"shown\" class=\"muted\"></span>",
        "<table id=\"kernels\"><thead><tr>" + "".join(f"<th>{h}</th>" for h in heads) + "</tr></thead>"
        "<tbody></tbody></table>",
        f"<script type=\"application/json\" id=\"kernel-data\">{payload}</script>",
        f"<script>{_JS}</script></body></html>\n",
    ])


def write_report(ds: Path, out: Path | None = None) -> tuple[Path, dict[str, Any]]:
    if not ds.is_dir() or (not (ds / dataset.INDEX).exists() and not dataset.kernel_dirs(ds)):
        raise UsageError(f"{ds}: not a dataset folder (no index.jsonl, no kernel folders)")
    data = collect(ds)
    out = out or ds / "report.html"
    atomic.write_text(out, render(ds, data))
    return out, data
