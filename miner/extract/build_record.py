"""The whole-run record of `extract --build` (docs/scale.md, "extract --build reruns"): the run's extract record
(run_record.RunRecord: every input, option and tool the extract stage reads) with the build's own inputs added to
its key, and every file under each kernel's folder (units, libraries, logs, metadata with its `build` blocks)
and the index checked as its outputs. An unchanged rerun into the same folder checks them and prints the
recorded summaries: no discovery, no parse, no unit read, no cache lookup, no compiler call, nothing written.

The build's inputs besides the extract's: --arch and --toolchain as given (their defaults are the miner's code,
which the extract key hashes), the nvcc that `build` would find (its path, its stat and `nvcc --version`, what
the build cache's keys carry; the host compiler is in the extract key by stat), and the CUDA library wheels
installed (their `include` folders and distributions: a header they add turns a failed unit into one that
builds). The unit texts, the project's flags and the vendored copies are outputs of the extract stage, checked
with the others. The build cache is not: a result is a function of the key, so a rerun would place the same
libraries and record the same results whether the cache still holds them or not.

Recorded only for the nvcc toolchain (the default; --toolchain with hip or a dataset with Triton kernels runs the
stages each time) and for runs whose extract stage reported no failure and no failed parse, as the extract
record; failed or timed-out units are recorded (the build cache answers them the same way on a rerun).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from miner.extract.run_record import RunRecord

FORMAT = 1
SUMMARY_FIELDS = ("units", "ok", "failed", "timeout", "skipped", "kernels", "kernels_ok", "with_findings")


class BuildRecord(RunRecord):
    whole_folders = True


def _nvcc() -> list[Any]:
    """The nvcc `build` finds (miner.builder.toolchain.find_nvcc's order) by path and stat, and its --version."""
    found = shutil.which("nvcc")
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if not found and home and os.access(Path(home) / "bin" / "nvcc", os.X_OK):
            found = str(Path(home) / "bin" / "nvcc")
    if not found:
        return [None]
    path = os.path.realpath(found)
    try:
        st = os.stat(path)
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60, check=False)
        version = [out.returncode, out.stdout]
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [path, repr(exc)]
    return [path, st.st_size, st.st_mtime_ns, st.st_ino, version]


def _wheels() -> list[Any]:
    """The CUDA library wheels (miner.cuda_libs: `site-packages/nvidia/*/include`, `nvidia-*` distributions) as
    the names and stats of those folders and of the `nvidia*` entries on sys.path."""
    out: list[Any] = []
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        spec = None
    for base in (spec.submodule_search_locations or []) if spec is not None else []:
        for d in sorted(Path(base).glob("*/include")):
            try:
                st = d.stat()
            except OSError:
                continue
            out.append([str(d), st.st_mtime_ns, st.st_ino])
    for entry in sys.path:
        try:
            names = sorted(n for n in os.listdir(entry or ".") if n.lower().startswith("nvidia"))
        except OSError:
            continue
        out.append([entry, names])
    return out


def open_record(run: Any) -> BuildRecord | None:
    """The record of an `extract --build` run (`commands.options.ExtractRun`), or None where none is kept."""
    names = [s.strip() for s in (run.build_toolchain or "cuda").split(",") if s.strip()]
    if names != ["cuda"]:
        return None
    extra = ["build", FORMAT, run.build_arch, run.build_toolchain, _nvcc(), _wheels()]
    rec = BuildRecord.open(run.extract, Path(run.extract.out_dir), extra)
    return rec if isinstance(rec, BuildRecord) else None


def summary(name: str, compiler: str, label: bool, res: Any) -> dict[str, Any]:
    """What a replay prints of one toolchain's build (`builder.driver.BuildReport`)."""
    return {"name": name, "compiler": compiler, "label": label, "failures": list(res.failures),
            **{k: getattr(res, k) for k in SUMMARY_FIELDS}}


def save(rec: BuildRecord, report: Any, builds: list[dict[str, Any]] | None) -> None:
    """Record a finished `extract --build` (its extract report and each toolchain's summary), or forget the
    record where a rerun must take the stages (a Triton or HIP build, an extract failure)."""
    if not builds or any(b.get("name") != "cuda" for b in builds) or report is None:
        rec._forget()
        return
    if any(m.get("language") == "triton" for m in report.kernels):
        rec._forget()
        return
    rec.save(report, build=builds)
