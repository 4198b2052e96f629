"""Build stage for Triton units: ahead-of-time compile for a named target (sm_90) without a GPU.

Each unit is compiled by `miner.triton.compile_child` in its own process group, fed one task at a time,
so a unit that hangs costs its timeout and a unit that kills the interpreter costs one restart. Results
are cached by content (unit text, task, Triton release, target); the PTX lands beside the unit.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miner import dataset, lazy_re
from miner.dataset import atomic
from miner.targets import SM

PTX_NAME = "kernel.ptx"
LOG_NAME = "build.log"
DEFAULT_TIMEOUT = 120.0
REPAIR_BUDGET = 60.0  # seconds of trial compiles per unit before its best error is reported

# First error -> failure class (first match wins). Every failure gets one: the corpus table counts them.
_CLASSES = [
    ("missing_module", lazy_re.compile(r"ModuleNotFoundError|No module named")),
    ("non_constexpr_global", lazy_re.compile(r"Cannot access global variable")),
    # The kernel calls a `tl.*` API the installed Triton no longer has (`tl._experimental_descriptor_load`,
    # gone in 3.6): the project's code targets an older release, no signature can fix it.
    ("removed_triton_api", lazy_re.compile(r"module 'triton(\.\w+)*' has no attribute")),
    ("unresolved_name", lazy_re.compile(r"NameError|is not defined|has no attribute")),
    # Code the installed Triton does not accept whatever the signature (a dtype called as a constructor,
    # `tl.float32(0.0)`): not a guessed type, so not signature_type although the text says "dtype".
    ("compile_error", lazy_re.compile(r"object is not callable")),
    # A jit helper of the project called with arguments it does not take: the code, not a guessed signature.
    ("compile_error", lazy_re.compile(
        r"\w+\(\) (?:got an unexpected keyword argument|takes \d+ positional arguments? but|"
                                 r"missing \d+ required)")),
    ("constexpr_value", lazy_re.compile(r"constexpr|power of 2|arange|must be a|shape|static_assert", re.I)),
    ("signature_type", lazy_re.compile(r"pointer|ptr|dtype|type|cast|Unsupported|scalar", re.I)),
]


# A `tl.*` call whose keyword or arity an older Triton accepted (`tl.dot(a, b, trans_b=True)`, gone in 2.x): the
# TypeError is raised inside triton/language itself, which tells it from a project helper called wrongly.
_REMOVED_ARGUMENT = lazy_re.compile(
    r'/triton/language/[^"\n]*", line \d+, in \w+\n(?:[^\n]*\n){0,4}?TypeError: \w+\(\) '
                               r"(?:got an unexpected keyword argument|takes \d+ positional arguments? but|"
                               r"missing \d+ required)")


_AT_CONTEXT = lazy_re.compile(r" \(at \d+:\d+: [^\n]*\)$")


def classify(stage: str, error: str | None, status: str, log: str | None = None) -> str | None:
    if status == "ok":
        return None
    if status == "timeout":
        return "timeout"
    if status == "crashed":
        return "crashed"
    if stage == "helper":
        return "helper"
    if stage == "import":
        if _CLASSES[0][1].search(error or ""):
            return "missing_module"
        # Module-level code that asks torch for a device (capability checks): no GPU at build time.
        if re.search(r"CUDA|cuda|NVIDIA driver|device|active drivers", error or ""):
            return "needs_gpu_at_import"
        return "import_error"
    if stage == "lookup":
        return "not_a_kernel"
    if log and _REMOVED_ARGUMENT.search(log):
        return "removed_triton_api"
    # The kernel line the compiler echoes after the message (`(at 4:27: def k(x, BLOCK: tl.constexpr):)`) is
    # context, not the error: its words must not pick the class.
    message = _AT_CONTEXT.sub("", error or "")
    for name, rx in _CLASSES:
        if rx.search(message):
            return name
    return "compile_error"


def triton_release() -> str:
    try:
        from importlib.metadata import version

        return version("triton")
    except Exception:  # noqa: BLE001 - any failure means the package is absent or broken
        return "unavailable"


def parse_arch(arch: str) -> int:
    """`sm_90`, `sm_90a`, `compute_90` or `90` -> 90 (the first entry of a comma list)."""
    m = re.search(r"(\d+)", arch.split(",")[0])
    if not m:
        raise ValueError(f"cannot read a CUDA arch from {arch!r}")
    return int(m.group(1))


@dataclass
class TritonBuildReport:
    units: int = 0
    ok: int = 0
    failed: int = 0
    timeout: int = 0
    skipped: int = 0
    cached: int = 0
    kernels: int = 0
    seconds: float = 0.0
    classes: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


def is_triton(meta: dict[str, Any]) -> bool:
    return meta.get("language") == "triton"


def _task(kdir: Path, meta: dict[str, Any], arch: int) -> dict[str, Any] | None:
    insts = meta.get("instantiations") or []
    if not insts or not (kdir / insts[0]["unit"]).is_file():
        return None
    comp = meta["triton"]["compile"]
    if comp.get("role") == "helper":
        return None
    return {"_id": meta["id"], "tag": meta["id"].replace("-", "_"), "unit": str((kdir / insts[0]["unit"]).resolve()),
            "kernel": meta["name"], "signature": comp["signature"], "constexprs": comp["constexprs"],
            "num_warps": comp.get("num_warps", 4), "num_stages": comp.get("num_stages", 3), "arch": arch,
            # What the compiler's feedback may change (guessed entries, other autotune configs): repair.py.
            "origins": comp.get("origins", {}), "configs": (meta["triton"].get("autotune") or {}).get("configs"),
            "repair_budget_s": REPAIR_BUDGET}


class _Child:
    def __init__(self, cwd: str) -> None:
        env = {**os.environ, "TRITON_CACHE_DIR": os.path.join(cwd, "triton"), "PYTHONDONTWRITEBYTECODE": "1"}
        pkg_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen([sys.executable, "-m", "miner.triton.compile_child"], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     start_new_session=True, text=True, bufsize=1)

    def run(self, task: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        try:
            self.proc.stdin.write(json.dumps(task) + "\n")
            self.proc.stdin.flush()
        except OSError:
            return self._died()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.kill()
            return {"status": "timeout", "stage": "compile", "error": f"no result in {timeout:g} s", "log": ""}
        line = self.proc.stdout.readline()
        if not line:
            return self._died()
        return json.loads(line)

    def _died(self) -> dict[str, Any]:
        code = self.proc.wait()
        why = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        return {"status": "crashed", "stage": "compile", "error": f"compiler process died ({why})", "log": ""}

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()

    def close(self) -> None:
        if self.alive():
            try:
                assert self.proc.stdin
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kernel-miner" / "triton"


def _procedure() -> bytes:
    """The code that turns a task into a result (the child, its repair search, the device answers): a
    change to it must not be served an older result from the cache."""
    here = Path(__file__).resolve().parent
    return b"".join((here / f).read_bytes() for f in ("compile_child.py", "repair.py", "fake_device.py",
                                                        "kernel_only.py", "ports.py"))


def _key(task: dict[str, Any], release: str) -> str:
    text = Path(task["unit"]).read_bytes()
    blob = json.dumps({k: v for k, v in task.items() if k not in ("unit", "tag", "_id")}, sort_keys=True)
    return hashlib.sha256(text + blob.encode() + release.encode() + _procedure()).hexdigest()[:32]


def build_dataset(out_dir: Path, arch: str = SM, jobs: int = 1, timeout: float = DEFAULT_TIMEOUT,
                  selectors: list[str] | None = None, force: bool = False, cache_dir: Path | None = None,
                  progress: Callable[[int], Callable[[], None]] | None = None) -> TritonBuildReport:
    """Compile every Triton unit of the dataset (one child at a time per job) and record `build`."""
    t0 = time.monotonic()
    cc = parse_arch(arch)
    release = triton_release()
    cache = cache_dir or default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    rep = TritonBuildReport()
    work: list[tuple[Path, dict[str, Any], dict[str, Any] | None]] = []
    for kdir in dataset.select_kernels(out_dir, selectors or []):
        try:
            meta = dataset.load_metadata(kdir)
        except (OSError, ValueError):
            continue
        if is_triton(meta):
            work.append((kdir, meta, _task(kdir, meta, cc)))
    rep.kernels = len(work)
    tick = progress(len(work)) if progress else (lambda: None)
    results: dict[str, dict[str, Any]] = {}
    pending: list[tuple[str, dict[str, Any]]] = []
    for _kdir, meta, task in work:
        if task is None:
            continue
        key = _key(task, release)
        hit = cache / f"{key}.json"
        if not force and hit.is_file():
            results[meta["id"]] = {**json.loads(hit.read_text(encoding="utf-8")), "cached": True}
            tick()
        else:
            pending.append((key, task))
    if pending:
        _run(pending, results, jobs, timeout, cache, tick, str(cache))
    changes: dict[str, dict[str, Any]] = {}
    for kdir, meta, task in work:
        insts = [dict(i) for i in meta.get("instantiations") or []]
        if not insts:
            rep.skipped += 1
            continue
        unit_dir = str(Path(insts[0]["unit"]).parent)
        r = results.get(meta["id"]) if task else None
        if r is None and meta["triton"]["compile"].get("role") == "helper":
            r = {"status": "skipped", "stage": "helper", "log": "",
                 "error": "a helper @triton.jit function (it returns a value, or only other jit functions call it): "
                          "it compiles inside its callers' units"}
        elif r is None:
            r = {"status": "skipped", "stage": "import", "error": "the unit file is missing", "log": ""}
        rec = _record(kdir, unit_dir, meta, r, arch, release)
        insts[0]["build"] = rec
        status = rec["status"]
        setattr(rep, status, getattr(rep, status) + 1)
        rep.units += 1
        rep.cached += bool(r.get("cached"))
        if rec.get("error_class"):
            rep.classes[rec["error_class"]] = rep.classes.get(rec["error_class"], 0) + 1
        if status in ("failed", "timeout"):
            rep.failures.append(f"{meta['id']}: [{rec['error_class']}] {rec['error']}")
        summary = {"pass_call": status == "ok", "units": 1, "ok": int(status == "ok"),
                   "failed": int(status == "failed"), "timeout": int(status == "timeout"),
                   "skipped": int(status == "skipped"), "arch": arch, "nvcc": f"triton {release}",
                   "compiler": f"triton {release}"}
        changes[meta["id"]] = {"instantiations": insts, "build": summary}
    dataset.update_many(out_dir, changes)
    rep.seconds = time.monotonic() - t0
    return rep


def _record(kdir: Path, unit_dir: str, meta: dict[str, Any], r: dict[str, Any], arch: str,
            release: str) -> dict[str, Any]:
    status = {"crashed": "failed"}.get(r["status"], r["status"])
    ptx, log = kdir / unit_dir / PTX_NAME, kdir / unit_dir / LOG_NAME
    rec: dict[str, Any] = {
        "status": status, "library": None, "symbol": meta["name"], "arch": arch, "error": r.get("error"),
        "missing_symbol": None, "resources": None, "seconds": r.get("seconds", 0.0),
        "cached": bool(r.get("cached")), "compiler": f"triton {release}",
    }
    if status == "ok":
        atomic.write_text(ptx, r["ptx"])
        log.unlink(missing_ok=True)
        rec["library"] = f"{unit_dir}/{PTX_NAME}"
        rec["error"] = None
        rec["resources"] = {"kernel": r["name"], "arch": arch, "shared_bytes": r["shared"]}
        rec["num_warps"], rec["num_stages"] = r["num_warps"], r["num_stages"]
    else:
        ptx.unlink(missing_ok=True)
        rec["error_class"] = classify(r.get("stage", ""), r.get("error"), r["status"], r.get("log"))
        rec["error"] = rec["error"] or r["status"]
        m = re.search(r"name '([A-Za-z_][A-Za-z0-9_]*)' is not defined", rec["error"])
        rec["missing_symbol"] = m.group(1) if m else None
        if status != "skipped":
            atomic.write_text(log, r.get("log") or rec["error"])
            rec["log"] = f"{unit_dir}/{LOG_NAME}"
    # Signature entries the compiler's feedback changed (guesses it rejected), and device queries the
    # unit's import answered as the target: both say the build is of a variant chosen here.
    if r.get("repairs"):
        rec["signature_repairs"] = r["repairs"]
        rec["signature"], rec["constexprs"] = r["signature"], r["constexprs"]
    if r.get("ports"):  # code written for an older Triton, ported faithfully (ports.py) to build
        rec["ports"] = r["ports"]
    if r.get("device_queries"):
        rec["device_queries"] = r["device_queries"]
    if r.get("import") == "kernel_closure":  # the unit did not import; the kernel's own closure did
        rec["import"], rec["unit_import_error"] = "kernel_closure", r.get("unit_import_error")
    return rec


def _run(pending: list[tuple[str, dict[str, Any]]], results: dict[str, dict[str, Any]], jobs: int,
         timeout: float, cache: Path, tick: Callable[[], None], cwd: str) -> None:
    """Feed tasks to up to `jobs` children; a child that hangs or dies is replaced for the next task."""
    from concurrent.futures import ThreadPoolExecutor

    queue = list(pending)

    def worker() -> None:
        child = _Child(cwd)
        try:
            while queue:
                try:
                    key, task = queue.pop(0)
                except IndexError:
                    return
                if not child.alive():
                    child = _Child(cwd)
                r = child.run(task, timeout)
                results[task["_id"]] = r
                if r["status"] in ("ok", "failed"):  # timeouts and crashes may be the machine's: not cached
                    atomic.write_text(cache / f"{key}.json", json.dumps(r))
                if r["status"] in ("timeout", "crashed"):
                    child = _Child(cwd)
                tick()
        finally:
            child.close()

    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(queue)))) as pool:
        for f in [pool.submit(worker) for _ in range(max(1, min(jobs, len(queue))))]:
            f.result()

