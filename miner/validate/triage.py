"""Collect, for every failed kernel, what a person needs to reproduce and fix it in one folder."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from miner import dataset
from miner.builder.single import nvcc_command
from miner.dataset.atomic import write_text
from miner.validate.process import NOT_FAILED

_REPRO = """#!/usr/bin/env bash
# Reproduce: {kid} -> {outcome}
# {reason}
# Runs from this folder, which mirrors the kernel's folder (units/, tests/, metadata.json).
set -u
cd "$(dirname "$0")"
{build}
export PYTHONFAULTHANDLER=1 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 KM_ORACLES={oracles}
# In the sandbox validate used (no network, only this folder writable, no API keys in the
# environment; writes elsewhere are listed in violations.jsonl). KM_NO_SANDBOX=1 runs it directly.
sandbox=(python -m miner.sandbox --work "$PWD" --cwd "$PWD" --report "$PWD/violations.jsonl" --)
[ "${{KM_NO_SANDBOX:-0}}" = 1 ] && sandbox=()
# Add "compute-sanitizer --tool memcheck" in front of python to look for memory errors.
timeout -s KILL {timeout} "${{sandbox[@]}}" {sanitize}python -m pytest -p miner.validate.plugin \\
    -p miner.sandbox.audit -p no:cacheprovider -c /dev/null --rootdir . --noconftest --import-mode=importlib \\
    tests "$@"
echo "exit code: $?"
"""


def summary_text(kid: str, meta: dict[str, Any], v: dict[str, Any], stderr_tail: str) -> str:
    lines = [
        f"kernel:    {kid} ({meta.get('name', '?')})",
        f"source:    {(meta.get('source') or {}).get('path', '?')}:{(meta.get('source') or {}).get('start_line', '?')}",
        f"outcome:   {v.get('outcome')}",
        f"reason:    {v.get('reason', '')}",
    ]
    if v.get("signal"):
        lines.append(f"signal:    {v['signal']}")
    if v.get("test"):
        lines.append(f"test:      {v['test']}")
    lines.append(f"exit code: {v.get('exit_code')}")
    lines.append(f"pass_call: {v.get('pass_call')}  pass_exe: {v.get('pass_exe')}  pass_perf: {v.get('pass_perf')}")
    build = v.get("build") or {}
    for inst, err in (build.get("failed") or {}).items():
        lines.append(f"build {inst}: {err}")
    summ = v.get("oracle_summary") or {}
    if summ:
        lines.append("oracles:   " + ", ".join(f"{k}={x.get('status')}" for k, x in summ.items() if isinstance(x, dict))
                     + ("" if summ.get("enabled", True) else " (run with --no-oracles)"))
    if v.get("timing"):
        lines.append("timing:    " + ", ".join(f"{k}={val}" for k, val in v["timing"].items() if val is not None))
    lines.append(f"validated: {v.get('validated_at')} with {v.get('tool')}")
    lines.append(f"command:   {v.get('command')}")
    if stderr_tail:
        lines += ["", "last lines of stderr:", stderr_tail]
    return "\n".join(lines) + "\n"


def triage(root: Path, out: Path, timeout: float = 120) -> list[Path]:
    """One folder per kernel whose recorded outcome is a failure; returns the folders written."""
    written = []
    for kdir in dataset.kernel_dirs(root):
        meta = dataset.load_metadata(kdir)
        v = meta.get("validation") or {}
        if not v.get("outcome") or v["outcome"] in NOT_FAILED:  # a skip has no failure to reproduce
            continue
        dest = out / kdir.name
        tmp = out / f".{kdir.name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name in (dataset.METADATA, dataset.KERNEL_TEXT):
            if (kdir / name).is_file():
                shutil.copy2(kdir / name, tmp / name)
        if (kdir / "tests").is_dir():
            shutil.copytree(kdir / "tests", tmp / "tests",
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        builds = []
        for inst in meta.get("instantiations") or []:
            rel = Path(dataset.unit_rel(inst))
            src_dir = (kdir / rel).parent
            if not src_dir.is_dir():
                continue
            (tmp / rel.parent).mkdir(parents=True, exist_ok=True)
            for f in ("unit.cu", "host_wrapper.cu", "kernel_wrapper.py"):
                if (src_dir / f).is_file():
                    shutil.copy2(src_dir / f, tmp / rel.parent / f)
            library = rel.with_name(dataset.LIBRARY)
            cmd = " ".join(nvcc_command(rel, library))
            builds.append(f"[ -f {library} ] || {cmd} || exit 1")
        logs = v.get("logs") or {}
        tail = ""
        for key in ("stdout", "stderr", "result"):
            src = kdir / logs[key] if logs.get(key) else None
            if src and src.is_file():
                shutil.copy2(src, tmp / src.name)
        err_file = tmp / "stderr.txt"
        if err_file.is_file():
            tail = "\n".join(err_file.read_text(encoding="utf-8", errors="replace").splitlines()[-60:])
        sanitize = "compute-sanitizer --tool memcheck " if v.get("sanitize") else ""
        write_text(tmp / "repro.sh", _REPRO.format(
            kid=kdir.name, outcome=v["outcome"], reason=str(v.get("reason", "")).replace("\n", " "),
            build="\n".join(builds) or ":", timeout=int(timeout), sanitize=sanitize,
            oracles=0 if (v.get("oracle_summary") or {}).get("enabled") is False else 1))
        (tmp / "repro.sh").chmod(0o755)
        write_text(tmp / "summary.txt", summary_text(kdir.name, meta, v, tail))
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
        written.append(dest)
    return written
