"""Build stage: compile every standalone unit with nvcc into a ctypes-loadable shared library.

One nvcc call costs ~1-2 s of fixed overhead (host preprocessing of the CUDA headers, cudafe++,
host compile, link) and only a fraction of that per extra kernel, so units are compiled in
batches: K units concatenated into one translation unit (includes hoisted and de-duplicated, each
body in its own `namespace km_b<i>_`, its macros restored after it), one .so for the whole batch.
A failing batch is split: errors are attributed to units by `#line` tags and namespace names,
the attributed units are compiled alone (their standalone result is the one recorded, so batching
can never make a unit fail), the rest are rebuilt together; unattributable failures are bisected.

Results are cached by content (unit text + local headers + flags + nvcc and host compiler
versions), so an unchanged tree rebuilds in well under a second per hundred units.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miner import atomic
from miner.errors import UsageError

CACHE_FORMAT = "km-build-3"
DEFAULT_ARCH = "sm_90,compute_90"
DEFAULT_BATCH = 12
DEFAULT_TIMEOUT = 300.0
LIBRARY_NAME = "libunit.so"
LOG_NAME = "build.log"
LOG_LIMIT = 20_000

# ------------------------------------------------------------------------------------------------
# toolchain


def find_nvcc(explicit: str | None = None) -> str:
    """The nvcc to use, or a UsageError saying how to provide one."""
    if explicit:
        path = shutil.which(explicit) or (explicit if os.access(explicit, os.X_OK) and Path(explicit).is_file()
                                          else None)
        if not path:
            raise UsageError(f"nvcc not found or not executable: {explicit}")
        return str(Path(path).resolve())
    found = shutil.which("nvcc")
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if not found and home and os.access(Path(home) / "bin" / "nvcc", os.X_OK):
            found = str(Path(home) / "bin" / "nvcc")
    if not found:
        raise UsageError("nvcc not found: install the CUDA toolkit, put nvcc on PATH or pass --nvcc PATH")
    return str(Path(found).resolve())


def toolchain_id(nvcc: str) -> str:
    """`nvcc --version` plus the host compiler's version line: both change the output."""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"cannot run {nvcc} --version: {exc}") from None
    if out.returncode != 0 or "release" not in out.stdout:
        raise UsageError(f"{nvcc} --version failed: {(out.stderr or out.stdout).strip()[:200]}")
    host = ""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx:
        try:
            host = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30,
                                  check=False).stdout.splitlines()[0]
        except (OSError, subprocess.TimeoutExpired, IndexError):
            host = ""
    return out.stdout.strip() + "\n" + host


def nvcc_release(tool_id: str) -> str:
    m = re.search(r"release [\d.]+, V([\d.]+)", tool_id)
    return m.group(1) if m else "unknown"


def gencode_flags(arch: str) -> list[str]:
    """`sm_90,compute_90` -> -gencode flags; sm_X is a real arch, compute_X embeds PTX."""
    flags: list[str] = []
    items = [a.strip() for a in arch.split(",") if a.strip()]
    if not items:
        raise UsageError("--arch is empty")
    for item in items:
        m = re.fullmatch(r"(sm|compute)_(\d+[a-z]?)", item)
        if not m:
            raise UsageError(f"--arch: {item!r} is not sm_NN or compute_NN (e.g. sm_90, sm_90a, compute_90)")
        kind, num = m.groups()
        flags += ["-gencode", f"arch=compute_{num},code={kind}_{num}"]
    return flags


@dataclass
class BuildOptions:
    arch: str = DEFAULT_ARCH
    jobs: int = 2
    timeout: float = DEFAULT_TIMEOUT
    batch_size: int = DEFAULT_BATCH
    force: bool = False
    extra_flags: list[str] = field(default_factory=list)
    cache_dir: Path | None = None

    def nvcc_flags(self) -> list[str]:
        # Host code is only launch stubs: optimising it buys nothing and costs host-compile time.
        return ["-shared", "-Xcompiler", "-fPIC", "-Xcompiler", "-O0", *gencode_flags(self.arch),
                "-Xptxas", "-v", *self.extra_flags]


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernel-miner" / "build"


# ------------------------------------------------------------------------------------------------
# units

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
_DEFINE = re.compile(r"^\s*#\s*(?:define|undef)\s+([A-Za-z_]\w*)", re.M)


@dataclass
class Unit:
    """One instantiation's unit file, split along the renderer's km: markers."""

    kernel_id: str
    index: int          # position in metadata instantiations
    inst_id: str
    kernel_dir: Path
    rel: str            # unit path relative to the kernel folder
    symbol: str
    kernel_name: str
    text: str = ""
    includes: list[str] = field(default_factory=list)
    body: str = ""
    body_line: int = 1
    macros: list[str] = field(default_factory=list)
    batchable: bool = False
    local_headers: list[Path] = field(default_factory=list)
    key: str = ""

    @property
    def path(self) -> Path:
        return self.kernel_dir / self.rel

    @property
    def tag(self) -> str:
        return f"{self.kernel_id}/{self.rel}"


def split_unit(unit: Unit) -> None:
    """Fill includes/body/macros from the markers; units without them are compiled alone."""
    lines = unit.text.splitlines()
    marks: dict[str, int] = {}
    macros: list[str] = []
    for i, line in enumerate(lines):
        s = line.strip()
        for name in ("includes-begin", "includes-end", "body-begin", "body-end"):
            if s == f"// km:{name}" and name not in marks:
                marks[name] = i
        if s.startswith("// km:macros"):
            macros += s[len("// km:macros"):].split()
    unit.local_headers = _local_headers(unit.path.parent, unit.text)
    if len(marks) != 4 or not (marks["includes-begin"] < marks["includes-end"] < marks["body-begin"]
                               < marks["body-end"]):
        return
    batchable = True
    includes: list[str] = []
    for line in lines[marks["includes-begin"] + 1:marks["includes-end"]]:
        s = line.strip()
        if not s or s.startswith("//"):
            continue
        m = _INCLUDE.match(s)
        if not m:
            if _DEFINE.match(s):
                includes.append(s)  # part of the batch key: only units with the same prelude share a batch
                continue
            batchable = False
            continue
        if m.group(1) == '"':
            local = (unit.path.parent / m.group(2)).resolve()
            if not local.is_file():
                batchable = False
                continue
            s = f'#include "{local}"'
        includes.append(s)
    body_lines = lines[marks["body-begin"] + 1:marks["body-end"]]
    for j, line in enumerate(body_lines):
        m = _INCLUDE.match(line)
        if m and m.group(1) == "<":
            # System headers inside a namespace break; their guards make hoisting them harmless.
            includes.append(line.strip())
            body_lines[j] = ""
        elif m:
            batchable = False
    unit.includes = includes
    unit.body = "\n".join(body_lines)
    unit.body_line = marks["body-begin"] + 2
    unit.macros = list(dict.fromkeys(macros + _DEFINE.findall(unit.body)))
    unit.batchable = batchable


def _local_headers(folder: Path, text: str, seen: set[Path] | None = None) -> list[Path]:
    """Quoted includes that resolve next to the unit, transitively: they are part of its content."""
    seen = set() if seen is None else seen
    out: list[Path] = []
    for line in text.splitlines():
        m = _INCLUDE.match(line)
        if not m or m.group(1) != '"':
            continue
        p = (folder / m.group(2)).resolve()
        if p in seen or not p.is_file():
            continue
        seen.add(p)
        out.append(p)
        try:
            out += _local_headers(p.parent, p.read_text(encoding="utf-8", errors="replace"), seen)
        except OSError:
            pass
    return out


def unit_key(unit: Unit, flags: list[str], tool_id: str) -> str:
    h = hashlib.sha256()
    for part in (CACHE_FORMAT, tool_id, "\0".join(flags), unit.text):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    for p in unit.local_headers:
        try:
            h.update(p.read_bytes())
        except OSError:
            h.update(b"<missing>")
    return h.hexdigest()


# ------------------------------------------------------------------------------------------------
# compiler output

_EDG = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?:catastrophic )?error\b:?\s*(?P<msg>.*)$")
_GCC = re.compile(r"^(?P<file>[^\s:(][^:(]*):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.*)$")
_TOOL = re.compile(r"^(?:ptxas|nvlink|ld|fatbinary|cicc|nvcc)\b.*?(?:fatal|error)\s*:?\s*(?P<msg>.*)$", re.I)
_LINK = re.compile(r"undefined reference to [`'](?P<sym>[^'`]+)'")
_NS = re.compile(r"km_b(\d+)_")

_MISSING = [
    re.compile(r'identifier "(?P<sym>[^"]+)" is undefined'),
    re.compile(r"[‘'`](?P<sym>[^’'`]+)[’'] was not declared"),
    re.compile(r'namespace "(?P<ns>[^"]+)" has no member "(?P<sym>[^"]+)"'),
    re.compile(r'no instance of (?:overloaded )?function(?: template)? "(?P<sym>[^"]+)" matches'),
    re.compile(r'(?:undefined|unknown) (?:identifier|type name) [‘\'"`](?P<sym>[^’\'"`]+)'),
    re.compile(r'"(?P<sym>[^"]+)" is not a (?:class |function |variable )?template'),
    re.compile(r"undefined reference to [`'](?P<sym>[^'`]+)'"),
    re.compile(r"[‘'`](?P<sym>[^’'`]+)[’'] (?:does not name a type|has not been declared)"),
]
# Errors that name a missing declaration and leave the parser on track.
_UNDEFINED = re.compile(r'^identifier "[^"]+" is undefined$|^[‘\'`][^’\'`]+[’\'] was not declared in this scope$')
_MISSING_INCLUDE = re.compile(r"fatal error: (?P<inc>[^:]+): No such file")


@dataclass
class Diagnostic:
    file: str | None
    line: int | None
    message: str
    text: str        # the whole first line, as the compiler printed it
    caret_token: str | None = None


def parse_errors(log: str) -> list[Diagnostic]:
    lines = log.splitlines()
    out: list[Diagnostic] = []
    for i, line in enumerate(lines):
        m = _EDG.match(line) or _GCC.match(line)
        if m:
            d = Diagnostic(m.group("file"), int(m.group("line")), m.group("msg").strip(), line.strip())
            # EDG prints the source line and a caret under the offending token.
            if _EDG.match(line) and i + 2 < len(lines) and lines[i + 2].strip() == "^":
                col = lines[i + 2].index("^")
                tok = re.match(r"[A-Za-z_]\w*", lines[i + 1][col:])
                d.caret_token = tok.group(0) if tok else None
            out.append(d)
            continue
        m = _TOOL.match(line.strip())
        if (m and "info" not in line.split(":")[0]) or _LINK.search(line):
            out.append(Diagnostic(None, None, line.strip(), line.strip()))
    return out


def missing_symbol(diags: list[Diagnostic]) -> str | None:
    for d in diags:
        for pat in _MISSING:
            m = pat.search(d.message)
            if m:
                ns = m.groupdict().get("ns")
                return f"{ns}::{m.group('sym')}" if ns else m.group("sym")
        if 'name followed by "::" must be a class or namespace name' in d.message and d.caret_token:
            return d.caret_token
    return None


def missing_include(diags: list[Diagnostic]) -> str | None:
    for d in diags:
        m = _MISSING_INCLUDE.search(d.message) or _MISSING_INCLUDE.search(d.text)
        if m:
            return m.group("inc").strip()
    return None


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")


def parse_resources(log: str) -> dict[str, dict[str, Any]]:
    """ptxas -v output -> {"<mangled entry>@<arch>": registers, shared/constant bytes, stack, spills}."""
    entries: dict[str, dict[str, Any]] = {}
    entry: str | None = None
    arch = ""
    props: str | None = None
    frames: dict[tuple[str, str], tuple[int, int, int]] = {}
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            arch = m.group(2)
            entry = f"{m.group(1)}@{arch}"
            entries.setdefault(entry, {"kernel": m.group(1), "arch": arch})
        elif m := _PROPS.search(line):
            props = m.group(1)
        elif (m := _FRAME.search(line)) and props:
            frames[(props, arch)] = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        elif (m := _USED.search(line)) and entry:
            r = entries[entry]
            r["registers"] = int(m.group(1))
            sm = re.search(r"(\d+) bytes smem", line)
            cm = re.search(r"(\d+) bytes cmem\[0\]", line)
            bar = re.search(r"used (\d+) barriers", line)
            r["shared_bytes"] = int(sm.group(1)) if sm else 0
            r["constant_bytes"] = int(cm.group(1)) if cm else 0
            if bar:
                r["barriers"] = int(bar.group(1))
    for r in entries.values():
        stack, stores, loads = frames.get((r["kernel"], r["arch"]), (0, 0, 0))
        r.update(stack_bytes=stack, spill_stores=stores, spill_loads=loads)
    return entries


def demangle(names: list[str]) -> dict[str, str]:
    """Readable kernel names, without the batch namespace (its mangling is a build detail)."""
    tool = shutil.which("c++filt")
    out = {n: n for n in names}
    if tool and names:
        try:
            res = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True, text=True,
                                 timeout=30, check=False)
            lines = res.stdout.splitlines()
            if res.returncode == 0 and len(lines) == len(names):
                out = dict(zip(names, lines, strict=True))
        except (OSError, subprocess.TimeoutExpired):
            pass
    return {k: re.sub(r"\bkm_b\d+_::", "", v) for k, v in out.items()}


def pick_resources(entries: dict[str, dict[str, Any]], kernel_name: str) -> dict[str, Any] | None:
    """The unit's own kernel among its entries (a mangled name holds `<len><name>`)."""
    if not entries:
        return None
    # The first real arch of --arch is the one reported (ptxas assembles them in that order).
    needle = f"{len(kernel_name)}{kernel_name}"
    chosen = next((r for r in entries.values() if needle in r["kernel"] or r["kernel"] == kernel_name),
                  next(iter(entries.values())))
    r = dict(chosen)
    r["kernel"] = demangle([r["kernel"]])[r["kernel"]]
    return r


# ------------------------------------------------------------------------------------------------
# running nvcc


@dataclass
class Compiled:
    rc: int | None      # None: timed out
    log: str
    seconds: float


class Compiler:
    """Runs nvcc in its own process group so a timeout kills cicc/ptxas/gcc children too."""

    def __init__(self, nvcc: str, flags: list[str], timeout: float) -> None:
        self.nvcc, self.flags, self.timeout = nvcc, flags, timeout
        self.calls = 0
        self.stopped = False
        self._running: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()

    def kill_all(self) -> None:
        with self._lock:
            self.stopped = True
            for proc in list(self._running):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def compile(self, src: str, out: Path, cwd: Path, tmp: Path) -> Compiled:
        with self._lock:
            if self.stopped:
                return Compiled(None, "build interrupted", 0.0)
            self.calls += 1
        env = dict(os.environ, TMPDIR=str(tmp))
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen([self.nvcc, *self.flags, src, "-o", str(out)], cwd=cwd, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        except OSError as exc:
            return Compiled(127, f"cannot run {self.nvcc}: {exc}", 0.0)
        with self._lock:
            self._running.add(proc)
        try:
            data, _ = proc.communicate(timeout=self.timeout)
            rc: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            data, _ = proc.communicate()
            rc = None
        finally:
            with self._lock:
                self._running.discard(proc)
        log = data.decode("utf-8", errors="replace")
        return Compiled(rc, log, time.monotonic() - t0)


# ------------------------------------------------------------------------------------------------
# cache


class Cache:
    """Content-addressed results: units/<key>.json and objects/<batch>.so."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "tmp").mkdir(parents=True, exist_ok=True)

    def _unit_path(self, key: str) -> Path:
        return self.root / "units" / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            rec = json.loads(self._unit_path(key).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None
        if rec.get("status") == "ok" and not (self.root / rec.get("object", "")).is_file():
            return None
        return rec

    def put(self, key: str, rec: dict[str, Any]) -> None:
        atomic.write_json(self._unit_path(key), rec)

    def store_object(self, built: Path, batch_key: str) -> str:
        rel = f"objects/{batch_key[:2]}/{batch_key}.so"
        dst = self.root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(built, dst)
        return rel

    def tmpdir(self) -> Path:
        return Path(tempfile.mkdtemp(prefix="b-", dir=self.root / "tmp"))


# ------------------------------------------------------------------------------------------------
# scheduling


@dataclass
class Result:
    status: str                       # ok | failed | timeout | skipped
    seconds: float = 0.0
    cached: bool = False
    error: str | None = None
    missing_symbol: str | None = None
    missing_include: str | None = None
    resources: dict[str, Any] | None = None
    object: str | None = None         # cache-relative .so
    log: str = ""
    batch_size: int = 1
    timeout: float | None = None

    def cache_record(self) -> dict[str, Any]:
        rec = {k: v for k, v in self.__dict__.items() if k != "cached"}
        rec["log"] = rec["log"][-LOG_LIMIT:]
        return rec


# Repos overload these for their own types (atomicAdd for Half...). Declared inside a batch namespace,
# such an overload would hide the global ones; a using-declaration keeps both visible.
_BUILTINS = (
    "atomicAdd atomicSub atomicExch atomicMin atomicMax atomicInc atomicDec atomicCAS atomicAnd atomicOr "
    "atomicXor __ldg __ldcs __ldcg __ldca __ldlu __ldcv __stcs __stcg __stwb __stwt __shfl_sync "
    "__shfl_up_sync __shfl_down_sync __shfl_xor_sync max min abs fabs fabsf exp expf log logf sqrt sqrtf "
    "rsqrt rsqrtf pow powf floor floorf ceil ceilf round roundf tanh tanhf fmaxf fminf fma fmaf erf erff"
).split()
_DEFINES_FN = r"\b{}\s*\([^;{{}}]*\)\s*\{{"
_DECLARED = re.compile(
    r"\b(?:struct|class|union|enum(?:\s+class)?)\s+([A-Za-z_]\w*)"
    r"|\b([A-Za-z_]\w*)\s*(?:<[^;{}()]*>)?\s*\([^;{}]*\)\s*(?:const\s*)?\{"
    r"|\busing\s+([A-Za-z_]\w*)\s*="
    r"|\btypedef\b[^;{}]*?\b([A-Za-z_]\w*)\s*;"
)
_NOT_NAMES = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "else", "do"}
_GLOBAL_AFTER = {"return", "new", "delete", "case", "else", "do", "throw", "typename", "co_return", "sizeof",
                 "const", "static", "inline", "extern", "volatile", "public", "private", "protected", "virtual",
                 "friend", "template", "__device__", "__host__", "__global__", "__forceinline__"}


def _requalify(body: str, ns: str) -> str:
    """`::name` for a name the body itself declares at its top level now means `ns::name`."""
    if "::" not in body:
        return body
    declared = {g for m in _DECLARED.finditer(body) for g in m.groups() if g} - _NOT_NAMES
    out: list[str] = []
    last = 0
    for m in re.finditer(r"::\s*([A-Za-z_]\w*)", body):
        if m.group(1) not in declared:
            continue
        before = body[:m.start()].rstrip()
        prev = before[-1:] if before else ""
        if prev and (prev in ">)]" or prev.isalnum() or prev == "_"):
            word = re.search(r"[A-Za-z_]\w*$", before)
            if not (word and word.group(0) in _GLOBAL_AFTER):
                continue
        out.append(body[last:m.start()] + ns)
        last = m.start()
    out.append(body[last:])
    return "".join(out)


def batch_source(units: list[Unit]) -> str:
    includes = list(dict.fromkeys(inc for u in units for inc in u.includes))
    parts = [f"// kernel-miner build batch of {len(units)} units", *includes, ""]
    for i, u in enumerate(units):
        ns = f"km_b{i}_"
        uses = [f"using ::{b};" for b in _BUILTINS if b in u.body and re.search(_DEFINES_FN.format(b), u.body)]
        # push/pop, not #undef: a body may redefine a toolkit macro (FLT_MAX) that later units need.
        parts += [f'#pragma push_macro("{name}")' for name in u.macros]
        parts.append(f"namespace {ns} {{ {' '.join(uses)}")
        parts.append(f'#line {u.body_line} "{u.tag}"')
        parts.append(_requalify(u.body, ns))
        parts.append(f"}}  // namespace km_b{i}_")
        parts += [f'#pragma pop_macro("{name}")' for name in u.macros]
        parts.append("")
    return "\n".join(parts) + "\n"


def attribute(log: str, units: list[Unit]) -> set[int]:
    """Which batch members the errors belong to (by #line tag or km_b<i>_ in a symbol)."""
    by_tag = {u.tag: i for i, u in enumerate(units)}
    bad: set[int] = set()
    for d in parse_errors(log):
        if d.file in by_tag:
            bad.add(by_tag[d.file])
        for m in _NS.finditer(d.text):
            if int(m.group(1)) < len(units):
                bad.add(int(m.group(1)))
    return bad


def split_log(log: str, units: list[Unit]) -> tuple[dict[int, str], int]:
    """A batch log cut into each member's diagnostics (paths as a solo compile prints them),
    and the number of error lines that belong to no member."""
    by_tag = {u.tag: i for i, u in enumerate(units)}
    owned: dict[int, list[str]] = {}
    owner: int | None = None
    stray = 0
    for line in log.splitlines():
        m = _EDG.match(line) or _GCC.match(line) or re.match(r"^(?P<file>.+?)\(\d+\): (?:warning|remark)", line)
        if m:
            owner = by_tag.get(m.group("file"))
            if owner is None and "error" in line:
                stray += 1
        elif _TOOL.match(line.strip()) and "info" not in line.split(":")[0] or _LINK.search(line):
            ns = _NS.search(line)
            owner = int(ns.group(1)) if ns and int(ns.group(1)) < len(units) else None
            stray += owner is None
        elif not line.startswith(" ") and line.strip():
            owner = None  # "N errors detected", ptxas info, ...: nobody's
        if owner is not None:
            u = units[owner]
            owned.setdefault(owner, []).append(line.replace(u.tag, u.rel))
    return {i: "\n".join(lines) + "\n" for i, lines in owned.items()}, stray


class Builder:
    def __init__(self, nvcc: str, opts: BuildOptions, cache: Cache,
                 tick: Callable[[int], None] | None = None) -> None:
        self.opts = opts
        self.flags = opts.nvcc_flags()
        self.compiler = Compiler(nvcc, self.flags, opts.timeout)
        self.cache = cache
        self.tick = tick or (lambda n: None)
        self.results: dict[str, Result] = {}

    # Each task compiles one group and returns follow-up groups (a failed batch's pieces).
    def _single(self, u: Unit) -> list[tuple[list[Unit], bool]]:
        tmp = self.cache.tmpdir()
        try:
            out = tmp / "unit.so"
            c = self.compiler.compile(u.rel, out, u.kernel_dir, tmp)
            if c.rc is None:
                r = Result("timeout", c.seconds, error=f"nvcc timed out after {self.opts.timeout:g} s",
                           log=c.log, timeout=self.opts.timeout)
            elif c.rc == 0 and out.is_file():
                obj = self.cache.store_object(out, u.key)
                res = pick_resources(parse_resources(c.log), u.kernel_name)
                r = Result("ok", c.seconds, resources=res, object=obj, log=c.log)
            else:
                diags = parse_errors(c.log)
                first = diags[0].text if diags else (c.log.strip().splitlines() or [f"nvcc exit {c.rc}"])[-1]
                r = Result("failed", c.seconds, error=first, missing_symbol=missing_symbol(diags),
                           missing_include=missing_include(diags), log=c.log)
            self._finish(u, r)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return []

    def _batch(self, units: list[Unit]) -> list[tuple[list[Unit], bool]]:
        tmp = self.cache.tmpdir()
        try:
            src = tmp / "batch.cu"
            atomic.write_text(src, batch_source(units))
            out = tmp / "batch.so"
            c = self.compiler.compile(str(src), out, tmp, tmp)
            if c.rc == 0 and out.is_file():
                bkey = hashlib.sha256("".join(u.key for u in units).encode()).hexdigest()
                obj = self.cache.store_object(out, bkey)
                entries = parse_resources(c.log)
                share = c.seconds / len(units)
                for i, u in enumerate(units):
                    own = {k: v for k, v in entries.items() if f"km_b{i}_" in k}
                    self._finish(u, Result("ok", share, resources=pick_resources(own, u.kernel_name),
                                           object=obj, batch_size=len(units)))
                return []
            bad = set() if c.rc is None else attribute(c.log, units)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if c.rc is None:
            # Bisecting would wait out the limit once per level: each unit alone waits it once.
            return [([u], False) for u in units]
        if bad:
            done = self._own_failures(c.log, units, bad, c.seconds)
            rest = [u for i, u in enumerate(units) if i not in bad]
            alone = [([units[i]], False) for i in sorted(bad - done)]
            return alone + ([(rest, len(rest) > 1)] if rest else [])
        half = len(units) // 2
        return [(g, len(g) > 1) for g in (units[:half], units[half:])]

    def _own_failures(self, log: str, units: list[Unit], bad: set[int], seconds: float) -> set[int]:
        """Batch members whose failure needs no solo compile to be known as their own.

        A unit whose first error says a name is undefined fails the same way alone: a batch only
        adds other units' namespaced declarations, never removes one. Anything less clear, or any
        member after one whose errors may have derailed the parser, is compiled alone.
        """
        owned, stray = split_log(log, units)
        if stray:
            return set()
        done: set[int] = set()
        for i in sorted(bad):
            diags = parse_errors(owned.get(i, ""))
            if not (diags and diags[0].file == units[i].rel and _UNDEFINED.search(diags[0].message)):
                break
            self._finish(units[i], Result("failed", seconds / len(units), error=diags[0].text,
                                          missing_symbol=missing_symbol(diags[:1]), log=owned[i],
                                          batch_size=len(units)))
            done.add(i)
            # A syntax error can derail the parser into the next member: trust nothing after one.
            if "parsing restarts" in owned[i] or not all(_UNDEFINED.search(d.message) for d in diags):
                break
        return done

    def _finish(self, u: Unit, r: Result) -> None:
        self.cache.put(u.key, r.cache_record())
        self.results[u.key] = r
        self.tick(1)

    def run(self, units: list[Unit]) -> dict[str, Result]:
        todo: list[Unit] = []
        queued: set[str] = set()
        for u in units:
            rec = None if self.opts.force else self.cache.get(u.key)
            if rec is not None and rec.get("status") == "timeout" and (rec.get("timeout") or 0) < self.opts.timeout:
                rec = None  # a longer limit may let it finish
            cached = None
            if rec is not None:
                rec.pop("cached", None)
                try:
                    cached = Result(**{**rec, "cached": True})
                except TypeError:  # a record this version does not understand: compile again
                    cached = None
            if cached is not None:
                self.results[u.key] = cached
                self.tick(1)
            elif u.key not in queued:
                queued.add(u.key)
                todo.append(u)
        groups = self._plan(todo)
        with ThreadPoolExecutor(max_workers=max(1, self.opts.jobs)) as pool:
            pending: set[Future[list[tuple[list[Unit], bool]]]] = set()

            def submit(group: list[Unit], batched: bool) -> None:
                fn = (lambda: self._batch(group)) if batched and len(group) > 1 else (lambda: self._single(group[0]))
                pending.add(pool.submit(fn))

            try:
                for g in groups:
                    submit(g, len(g) > 1)
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for f in done:
                        pending.discard(f)
                        for g, batched in f.result():
                            submit(g, batched)
            except BaseException:
                # nvcc runs in its own session, so Ctrl-C does not reach it: stop it here.
                for f in pending:
                    f.cancel()
                self.compiler.kill_all()
                raise
        return self.results

    def _plan(self, todo: list[Unit]) -> list[list[Unit]]:
        """Batches of units with the same includes: a header one unit lacks must not be lent to it
        by a neighbour, or the unit would pass in its batch and fail on its own."""
        singles = [[u] for u in todo if not u.batchable]
        groups: dict[frozenset[str], list[Unit]] = {}
        for u in todo:
            if u.batchable:
                groups.setdefault(frozenset(u.includes), []).append(u)
        batches: list[list[Unit]] = []
        for members in groups.values():
            n = -(-len(members) // max(1, self.opts.batch_size))
            size = -(-len(members) // n)
            batches += [members[i:i + size] for i in range(0, len(members), size)]
        # Enough batches to keep every job busy.
        while len(batches) < self.opts.jobs and max((len(b) for b in batches), default=0) > 1:
            big = max(batches, key=len)
            batches.remove(big)
            batches += [big[:len(big) // 2], big[len(big) // 2:]]
        batches.sort(key=len, reverse=True)  # long ones first: the tail of the run stays short
        return batches + singles


# ------------------------------------------------------------------------------------------------
# dataset


@dataclass
class BuildReport:
    units: int = 0
    ok: int = 0
    failed: int = 0
    timeout: int = 0
    skipped: int = 0
    cached: int = 0
    kernels: int = 0
    kernels_ok: int = 0
    nvcc_calls: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)


def _kernel_dirs(out_dir: Path, selectors: list[str]) -> list[Path]:
    dirs = sorted(p.parent for p in out_dir.glob("*/metadata.json"))
    if not selectors:
        return dirs
    import fnmatch

    keep = []
    for d in dirs:
        name = d.name.rsplit("-", 1)[0]
        if any(fnmatch.fnmatchcase(d.name, s) or fnmatch.fnmatchcase(name, s) for s in selectors):
            keep.append(d)
    return keep


def collect_units(kernel_dir: Path, meta: dict[str, Any]) -> tuple[list[Unit], dict[int, str]]:
    """Units to build, and {instantiation index: reason} for those that cannot be."""
    units: list[Unit] = []
    skipped: dict[int, str] = {}
    for i, inst in enumerate(meta.get("instantiations") or []):
        rel = inst.get("unit")
        symbol = (inst.get("launcher") or {}).get("symbol") or ""
        if not rel:
            skipped[i] = "no unit was rendered for this instantiation"
            continue
        u = Unit(meta["id"], i, str(inst.get("id", i)), kernel_dir, rel, symbol, meta.get("name", ""))
        try:
            u.text = u.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            skipped[i] = f"cannot read {rel}: {getattr(exc, 'strerror', None) or exc}"
            continue
        split_unit(u)
        units.append(u)
    return units, skipped


def _place_library(cache: Cache, obj: str, dst: Path) -> None:
    src = cache.root / obj
    try:
        if dst.exists() and os.path.samefile(src, dst):
            return
    except OSError:
        pass
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        os.link(src, tmp)  # same bytes, no copy: a batch .so serves every unit in it
    except OSError:
        shutil.copy2(src, tmp)
    os.replace(tmp, dst)


def build_record(u: Unit, r: Result, arch: str) -> dict[str, Any]:
    unit_dir = str(Path(u.rel).parent)
    rec: dict[str, Any] = {
        "status": r.status,
        "library": f"{unit_dir}/{LIBRARY_NAME}" if r.status == "ok" else None,
        "symbol": u.symbol,
        "arch": arch,
        "error": r.error,
        "missing_symbol": r.missing_symbol,
        "resources": r.resources,
        "seconds": round(r.seconds, 3),
        "cached": r.cached,
        "batch_size": r.batch_size,
    }
    if r.missing_include:
        rec["missing_include"] = r.missing_include
    if r.status != "ok":
        rec["log"] = f"{unit_dir}/{LOG_NAME}"
    return rec


def build_dataset(out_dir: Path, opts: BuildOptions, nvcc: str, selectors: list[str] | None = None,
                  progress: Callable[[int], Callable[[], None]] | None = None,
                  update: Callable[[Path, dict[str, dict[str, Any]]], None] | None = None) -> BuildReport:
    """Build every unit under out_dir and record the results in each kernel's metadata."""
    from miner import dataset

    t0 = time.monotonic()
    tool_id = toolchain_id(nvcc)
    cache = Cache(opts.cache_dir or default_cache_dir())
    flags = opts.nvcc_flags()
    kernels: list[tuple[Path, dict[str, Any], list[Unit], dict[int, str]]] = []
    for kdir in _kernel_dirs(out_dir, selectors or []):
        try:
            meta = dataset.load_metadata(kdir)
        except (OSError, json.JSONDecodeError):
            continue
        units, skipped = collect_units(kdir, meta)
        for u in units:
            u.key = unit_key(u, flags, tool_id)
        kernels.append((kdir, meta, units, skipped))
    all_units = [u for _, _, us, _ in kernels for u in us]
    tick = progress(len(all_units)) if progress else (lambda: None)
    builder = Builder(nvcc, opts, cache, tick=lambda n: tick())
    results = builder.run(all_units)
    rep = BuildReport(nvcc_calls=builder.compiler.calls)
    release = nvcc_release(tool_id)
    changes: dict[str, dict[str, Any]] = {}
    for _kdir, meta, units, skipped in kernels:
        insts = [dict(i) for i in meta.get("instantiations") or []]
        if not insts:
            rep.kernels += 1
            continue
        counts = {"ok": 0, "failed": 0, "timeout": 0, "skipped": 0}
        for i, why in skipped.items():
            insts[i]["build"] = {"status": "skipped", "library": None, "symbol": "", "arch": opts.arch,
                                 "error": why, "missing_symbol": None, "resources": None, "seconds": 0.0,
                                 "cached": False}
            counts["skipped"] += 1
        for u in units:
            r = results[u.key]
            lib, log = u.path.parent / LIBRARY_NAME, u.path.parent / LOG_NAME
            if r.status == "ok" and r.object:
                _place_library(cache, r.object, lib)
                log.unlink(missing_ok=True)
            else:
                lib.unlink(missing_ok=True)
                if not log.is_file() or log.read_text(encoding="utf-8", errors="replace") != r.log[-LOG_LIMIT:]:
                    atomic.write_text(log, r.log[-LOG_LIMIT:])
                rep.failures.append(f"{u.tag}: {r.error}")
            insts[u.index]["build"] = build_record(u, r, opts.arch)
            counts[r.status] += 1
            rep.cached += r.cached
        summary = {"pass_call": counts["ok"] > 0, "units": len(insts), **counts, "arch": opts.arch,
                   "nvcc": release}
        for k in ("ok", "failed", "timeout", "skipped"):
            setattr(rep, k, getattr(rep, k) + counts[k])
        rep.units += len(insts)
        rep.kernels += 1
        rep.kernels_ok += summary["pass_call"]
        if insts != meta.get("instantiations") or summary != meta.get("build"):
            changes[meta["id"]] = {"instantiations": insts, "build": summary}
    (update or dataset.update_many)(out_dir, changes)
    rep.seconds = time.monotonic() - t0
    return rep

