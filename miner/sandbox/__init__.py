"""The sandbox every child that runs generated or third-party code goes through.

Used by validate (miner.validate.runner), the oracles' replays (they run inside validate's test
process), triage reproductions and enrich's test runs. Linux only, no Docker, no root needed:
unprivileged user namespaces. What a sandboxed child gets (miner/sandbox/confine.py):

- its own user, PID, mount and network namespace: no network at all (no interface is up), no view
  of the parent's processes (/proc is the namespace's own), no capability (bounding set emptied,
  no_new_privs, uid 0 inside regains nothing by exec);
- every mount read-only except its private work area and a private /dev/shm; $HOME hidden (or, where
  Python or the dataset lives under it, its credential files: ~/.ssh, ~/.aws, ...); /run hidden;
  device nodes (/dev/nvidia*, /dev/kfd) and driver libraries stay usable;
- an environment from an allow-list (PATH, Python, CUDA/ROCm, torch, KM_*), never *_API_KEY,
  *_TOKEN, *SECRET*, AWS_*, ... (miner/sandbox/policy.py); HOME and TMPDIR inside the work area;
- rlimits (Policy): RLIMIT_DATA (memory; not RLIMIT_AS, which CUDA's address-space reservation
  breaks), RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_NPROC plus the namespace's own pid_max (Linux 6.14+,
  the bound that also holds for root), RLIMIT_CPU, no core files.

API
---
`unavailable() -> str | None`
    None where the sandbox works here, else the one-line reason (probed once per process).
`Policy(memory_bytes=..., file_bytes=..., open_files=..., processes=..., cpu_seconds=..., visible=(dataset,))`
    limits; `visible` lists paths that must stay readable (the dataset root).
`environment(base=None, extra=None) -> dict`
    `base` (default os.environ) and `extra` through the allow-list.
`run(argv, kernel_dir, results_to, timeout=..., policy=..., env=..., sandbox=True) -> Completed`
    the one-shot form (triage, enrich, validate --mode spawn): copies `kernel_dir` into a private work
    area (WORK/<kernel name>/, the command's cwd), runs `argv` confined in its own process group,
    kills the group at `timeout`, then copies only the regular files of the copy's result area
    (WORK/<kernel name>/validation/, where stdout.txt and stderr.txt are written) into `results_to`
    and deletes the work area. Completed: returncode, timed_out, wall_s, copied, violations.
`pytest_args(tests="tests") -> list[str]`
    pytest options for an untrusted test folder: no cache, an empty config (-c /dev/null), rootdir
    the cwd, no conftest.py discovery, importlib import mode.
`confine(work, policy)`
    the building block: confines the calling single-threaded process (the validate zygote's forked
    children call it before they create their CUDA context; `python -m miner.sandbox` calls it and
    then execs its command).
`audit.install_from_env()` / `-p miner.sandbox.audit`
    in the sandboxed Python process: records writes outside the work area and network attempts to
    <result area>/violations.jsonl; `audit.read(path)`, `audit.limit_hits(*texts)` turn what a child
    left into `violations` entries ({"kind": write|network|processes|memory|file_size|open_files,
    "what": ...}). A child with violations gets the outcome `sandbox_violation`.
"""

from __future__ import annotations

import os

from miner.sandbox import audit, workspace
from miner.sandbox.confine import SandboxUnavailable, confine, unavailable
from miner.sandbox.policy import Policy, environment
from miner.sandbox.run import Completed, command, run

__all__ = ["Completed", "Policy", "SandboxUnavailable", "audit", "command", "confine", "environment",
           "pytest_args", "run", "unavailable", "workspace"]


def pytest_args(tests: str = "tests") -> list[str]:
    return ["-q", "-p", "no:cacheprovider", "-c", os.devnull, "--rootdir", ".", "--noconftest",
            "--import-mode=importlib", tests]
