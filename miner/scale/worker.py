"""One stage of one repository, run in a child process: `python -m miner.scale.worker JOB.json`.

The child calls the same library functions as `extract`, `build` and `validate` and writes its result
as JSON to job["result"] (atomically). A child per stage gives the run a hard time budget (its process
group is killed), keeps one repository's crash out of the run, and dies with the parent (PDEATHSIG), so
a killed run leaves no process writing into the dataset.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from miner.dataset import atomic

_ACTIVE: set[subprocess.Popen[bytes]] = set()  # children running now, killed by kill_active on an interrupt


def _die_with_parent() -> None:
    """preexec_fn: SIGKILL this child when the process that started it dies (Linux prctl PR_SET_PDEATHSIG)."""
    os.setsid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Run one job in a child process under its time budget; returns the child's result or a failure."""
    result_path = Path(job["result"])
    result_path.unlink(missing_ok=True)
    log_path = Path(job["log"])
    log_path.parent.mkdir(parents=True, exist_ok=True)
    spec = result_path.with_suffix(".job.json")
    atomic.write_json(spec, job)
    t0 = time.monotonic()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in [str(Path(__file__).resolve().parents[2]),
                                                                  os.environ.get("PYTHONPATH", "")] if p))
    with open(log_path, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "miner.scale.worker", str(spec)], stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                preexec_fn=_die_with_parent)
        _ACTIVE.add(proc)
        try:
            rc = proc.wait(timeout=max(0.01, float(job["timeout"])))
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            left = max(0.0, job["timeout"])
            return {"status": "failed", "seconds": time.monotonic() - t0,
                    "error": f"time budget exceeded ({left:.1f} s were left for the repo) in {job['stage']}"}
        except BaseException:
            _kill_group(proc)
            raise
        finally:
            _ACTIVE.discard(proc)
    seconds = time.monotonic() - t0
    try:
        res = json.loads(result_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"status": "failed", "seconds": seconds,
                "error": f"{job['stage']} worker exited with code {rc} and no result: {_tail(log_path)}"}
    res.setdefault("seconds", seconds)
    return res


def kill_active() -> None:
    for proc in list(_ACTIVE):
        _kill_group(proc)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()


def _tail(path: Path) -> str:
    try:
        lines = [x for x in path.read_text(encoding="utf-8", errors="replace").splitlines() if x.strip()]
    except OSError:
        return "(no log)"
    return lines[-1][:300] if lines else "(empty log)"


# --- in the child ------------------------------------------------------------------------------------------

def _extract(job: dict[str, Any]) -> dict[str, Any]:
    from miner.errors import MinerError, NothingToDo
    from miner.extract import ExtractOptions, extract

    staging = Path(job["staging"])
    opts = ExtractOptions(paths=[job["path"]], out_dir=str(staging), jobs=job["jobs"], frontend=job["frontend"],
                          units=job["units"], record=False)  # a staging folder is extracted into once
    try:
        rep = extract(opts)
    except MinerError as exc:
        if isinstance(exc, NothingToDo):  # a repo without kernels is done, not failed
            return {"status": "ok", "kernels": [], "files": [], "failures": [], "notes": [str(exc)], "n_files": 0}
        return {"status": "failed", "error": str(exc)}
    per_file: dict[str, int] = {}
    kernels = []
    for m in rep.kernels:
        src = m["source"]
        per_file[src["path"]] = per_file.get(src["path"], 0) + 1
        kernels.append({"id": m["id"], "path": src["path"], "name": m["name"], "start_line": src["start_line"],
                        "license": src.get("license")})
    root = os.path.realpath(job["path"])
    files = [{"path": p, "kernels": n, "error": None} for p, n in sorted(per_file.items())]
    for line in rep.failures:
        path, _, why = line.partition(": ")
        rel = os.path.relpath(path, root) if path.startswith(root + os.sep) else path
        files.append({"path": rel, "kernels": per_file.get(rel, 0), "error": why or line})
    return {"status": "ok", "kernels": kernels, "files": files, "failures": rep.failures, "notes": rep.notes,
            "n_files": rep.files}


def _build(job: dict[str, Any]) -> dict[str, Any]:
    from miner.builder import BuildOptions, build_dataset, find_nvcc

    b = job["build"]
    opts = BuildOptions(arch=b["arch"], jobs=job["jobs"], timeout=b["timeout"], batch_size=b["batch_size"],
                        cache_dir=Path(b["cache_dir"]) if b.get("cache_dir") else None)
    rep = build_dataset(Path(job["ds"]), opts, find_nvcc(b.get("nvcc")), job["kernels"])
    return {"status": "ok", "units": rep.units, "ok": rep.ok, "failed": rep.failed, "timeout": rep.timeout,
            "skipped": rep.skipped, "cached": rep.cached, "kernels_ok": rep.kernels_ok, "nvcc_calls": rep.nvcc_calls}


def _validate(job: dict[str, Any]) -> dict[str, Any]:
    from collections import Counter

    from miner.validate.pipeline import Options, validate_dataset

    v = job["validate"]
    opts = Options(jobs=job["jobs"], timeout=v["timeout"], kernels=job["kernels"], oracles=v["oracles"],
                   tests_from=[Path(job["path"])], sandbox=v.get("sandbox", True))
    summary = validate_dataset(Path(job["ds"]), opts)
    counts = Counter(r["outcome"] for r in summary["results"].values())
    return {"status": "ok", "outcomes": dict(sorted(counts.items())), "cached": summary["cached"]}


STAGE_FUNCS = {"extract": _extract, "build": _build, "validate": _validate}


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    t0 = time.monotonic()
    try:
        res = STAGE_FUNCS[job["stage"]](job)
    except Exception as exc:  # noqa: BLE001 - any failure of one repo is recorded, the run goes on
        traceback.print_exc()
        res = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
    res["seconds"] = time.monotonic() - t0
    atomic.write_json(job["result"], res)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
