"""The build stage over a dataset: every kernel's units built, libraries placed, metadata recorded."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miner import cuda_libs, dataset, lazy_re
from miner.builder.cache import Cache, default_cache_dir, unit_key
from miner.builder.compiler import ARCH_SPECIFIC, arch_specific_arch
from miner.builder.diagnostics import float_saturate_call, removed_from_toolkit
from miner.builder.ill_formed import ill_formed_kernel
from miner.builder.scheduler import LOG_LIMIT, Builder, Result
from miner.builder.toolchain import BuildOptions
from miner.builder.toolchains.base import Toolchain
from miner.builder.toolchains.nvcc import Nvcc
from miner.builder.toolkit_additions import added_after_toolkit
from miner.builder.toolkit_redefinition import redefined_by_toolkit
from miner.builder.unit_split import Unit, collect_units
from miner.dataset import atomic

LIBRARY_NAME = dataset.LIBRARY
LOG_NAME = "build.log"


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
    nvcc_calls: int = 0              # compiler calls, whichever the toolchain
    with_findings: int = 0           # units that built but carry portability findings (hip)
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)


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


def _with_build_failures(unresolved: list[dict[str, Any]], insts: list[dict[str, Any]],
                         key: str) -> list[dict[str, Any]]:
    """`unresolved` with one entry per distinct first error of the failed units (reason `<key>: ...`,
    replaced on every build of that toolchain), so a kernel whose unit fails always says why there;
    the closure's own entries are kept."""
    prefix = f"{key}: "
    out = [u for u in unresolved if not str(u.get("reason", "")).startswith(prefix)]
    seen: set[tuple[str, str]] = set()
    for inst in insts:
        b = inst.get(key) or {}
        if b.get("status") not in ("failed", "timeout"):
            continue
        err = (b.get("error") or b.get("status") or "").strip().splitlines()
        reason = prefix + (b.get("toolkit_removed") or (err[0] if err else b["status"]))
        symbol = b.get("missing_symbol") or "?"
        if (symbol, reason) not in seen:
            seen.add((symbol, reason))
            out.append({"symbol": symbol, "reason": reason, "where": inst.get("unit", inst.get("id", ""))})
    return out


_TOOLKIT_CONFLICT = lazy_re.compile(r"^// km:toolkit-conflict (.*)$", re.M)
_LACKS_HEADERS = lazy_re.compile(r"^// km:lacks-headers (\S+) (.*)$", re.M)
_CLASS_STAND_IN = lazy_re.compile(r"^// km:class-stand-in (\S+) (.*)$", re.M)
# EDG's words for a scalar used as a class (`plan.Eval(y, x)` on a float, `p->x` on an int pointer)
_NOT_A_CLASS = lazy_re.compile(r'error: expression must have (?:pointer-to-)?class type but it has type "(?:const )?'
                               r'(?:volatile )?([^"]*?)\s*\*?"')
_NOT_A_SCOPE = 'error: name followed by "::" must be a class or namespace name'


_NO_OPERATOR = lazy_re.compile(r'error: no operator "[^"]+" matches these operands\s*\n\s*operand types are: (.*)')
# The toolkit's vector types (`float2`, `uchar4`), whose arithmetic operators only helper headers declare.
_VECTOR_TYPE = lazy_re.compile(r"(?:const\s+)?(?:u?char|u?short|u?int|u?long|(?:u)?longlong|float|double)[1-4]\s*&?")


# nvcc's first error: its message line, the source line, and the caret under the column it stopped at.
_FIRST_ERROR = lazy_re.compile(r"^[^\n]*\berror: [^\n]*\n([^\n]*)\n([ \t]*)\^", re.M)


def _first_error_word(log: str) -> str | None:
    """The identifier under the caret of nvcc's first error: `glm` of `glm::mat3 f(...)` when `glm` is declared
    nowhere ("explicit type is missing", with no name in the message; the symbol the log names later, a
    parameter the broken declaration lost, is a consequence)."""
    m = _FIRST_ERROR.search(log or "")
    if m is None:
        return None
    w = re.match(r"[A-Za-z_]\w*", m.group(1)[len(m.group(2)):])
    return w.group(0) if w else None


def _lacking(u: Unit, symbol: str | None, log: str) -> str | None:
    """The unit's stated reason (units.render._lacking_statement) where its build stopped on a name that only a
    header nobody here has would declare, or on an operator none declares for vector-type operands (`float2 *
    float2`: the CUDA samples' helper_math.h); None for any other failure (`curandState - curandState`, an
    instantiation that no operator fits, is the miner's)."""
    m = _LACKS_HEADERS.search(u.text or "")
    if m is None:
        return None
    listed = m.group(1).split(",")
    # (`grid_enum::dust_density`, the enumerator the parse names `dust_density`)
    if symbol and (symbol.removeprefix("::") in listed or symbol.rsplit("::", 1)[-1] in listed):
        return m.group(2).strip()
    if (at := _first_error_word(log)) and at in listed:
        return m.group(2).strip()
    op = _NO_OPERATOR.search(log or "")
    operands = [t.strip() for t in re.split(r"\s[-+*/%<>=!&|^]{1,2}\s", op.group(1))] if op else []
    return m.group(2).strip() if operands and all(_VECTOR_TYPE.fullmatch(t) for t in operands) else None


def _class_stand_in(u: Unit, error: str | None, symbol: str | None) -> str | None:
    """The unit's stated reason (instantiations.class_stand_ins) where its build stopped on a scalar the unit gives
    a class parameter, used as a class (`plan.Eval()` on a float; `Traits::kN` with the caret on `Traits`, the
    parameter itself); None for any other failure."""
    m = _CLASS_STAND_IN.search(u.text or "")
    if m is None:
        return None
    given = dict(a.split("=", 1) for a in m.group(1).split(",") if "=" in a)
    e = _NOT_A_CLASS.search(error or "")
    if e is not None and e.group(1).strip() in {v.strip() for v in given.values()}:
        return m.group(2).strip()
    if symbol in given and _NOT_A_SCOPE in (error or ""):
        return m.group(2).strip()
    return None


def build_record(u: Unit, r: Result, arch: str, library_name: str = LIBRARY_NAME,
                 log_name: str = LOG_NAME, source: tuple[str | None, list[str]] = (None, []),
                 toolkit_dirs: Callable[[], tuple[str, ...]] = tuple) -> dict[str, Any]:
    """One instantiation's build block. `source`: the folder the kernel's closure sources are relative to and those
    sources (metadata parse_context.root, closure.sources), read for a stated reason; `toolkit_dirs`: the compiler
    toolkit's include folders, asked only when a failure may be a definition the toolkit has too."""
    unit_dir = str(Path(u.rel).parent)
    rec: dict[str, Any] = {
        "status": r.status,
        "library": f"{unit_dir}/{library_name}" if r.status == "ok" else None,
        "symbol": u.symbol,
        "arch": arch_specific_arch(arch) if ARCH_SPECIFIC in u.flags else arch,
        "error": r.error,
        "missing_symbol": r.missing_symbol,
        "resources": r.resources,
        "seconds": round(r.seconds, 3),
        "cached": r.cached,
        "batch_size": r.batch_size,
    }
    if r.missing_include:
        rec["missing_include"] = r.missing_include
    if r.status == "failed" and (removed := removed_from_toolkit(r.missing_symbol, r.error)):
        rec["toolkit_removed"] = removed  # a stated reason: no unit can supply it
    elif r.status == "failed" and (added := added_after_toolkit(r.missing_symbol, toolkit_dirs)):
        rec["toolkit_removed"] = added  # a stated reason likewise: a later toolkit's library has the name
    elif r.status == "failed" and (saturate := float_saturate_call(r.missing_symbol, u.text)):
        rec["toolkit_removed"] = saturate  # a stated reason likewise: the call is the source's own
    elif r.status == "failed" and (conflict := _TOOLKIT_CONFLICT.search(u.text or "")):
        rec["toolkit_removed"] = conflict.group(1).strip()  # (units.render._vendored_cub): stated likewise
    elif r.status == "failed" and (lacking := _lacking(u, r.missing_symbol, r.log or r.error or "")):
        rec["toolkit_removed"] = lacking  # a header no build here has (units.render._lacking_statement)
    elif r.status == "failed" and (again := redefined_by_toolkit(u.text, r.error, toolkit_dirs, *source)):
        rec["toolkit_removed"] = again  # a definition an older toolkit lacked: the original fails the same way
    elif r.status == "failed" and (own := ill_formed_kernel(u.text, r.error)):
        rec["toolkit_removed"] = own  # the kernel's own statements, rejected at its definition
    elif r.status == "failed" and (stand_in := _class_stand_in(u, r.error, r.missing_symbol)):
        rec["toolkit_removed"] = stand_in  # a class parameter no launch or project class fills (a stated reason)
    if r.status != "ok":
        rec["log"] = f"{unit_dir}/{log_name}"
    return rec


def build_dataset(out_dir: Path, opts: BuildOptions, nvcc: str, selectors: list[str] | None = None,
                  progress: Callable[[int], Callable[[], None]] | None = None,
                  update: Callable[[Path, dict[str, dict[str, Any]]], None] | None = None,
                  toolchain: Toolchain | None = None) -> BuildReport:
    """Build every unit under out_dir and record the results in each kernel's metadata.

    selectors pick kernels as every stage's --kernels does (dataset.select: id, name part, metadata name, glob).
    toolchain: the compiler (default nvcc at `nvcc`); its results go to the metadata block it names
    (`build` for nvcc, `build_hip` for hipcc), beside the other toolchains' blocks.
    """
    t0 = time.monotonic()
    tc = toolchain or Nvcc(nvcc)
    tool_id = tc.version_id()
    cache = Cache(opts.cache_dir or default_cache_dir())
    flags = tc.flags(opts)
    tc.check(opts, tool_id, cache.root)
    kernels: list[tuple[Path, dict[str, Any], list[Unit], dict[int, str]]] = []
    for kdir in dataset.select_kernels(out_dir, selectors or []):
        try:
            meta = dataset.load_metadata(kdir)
        except (OSError, json.JSONDecodeError):
            continue
        # Triton kernels are built by miner.triton.build; a HIP variant only by the hip toolchain.
        if meta.get("language") == "triton" or not tc.wants(meta):
            continue
        units, skipped = collect_units(kdir, meta)
        units = tc.prepare(units, cache.root)
        for u in units:
            u.key = unit_key(u, [*flags, *u.compile_flags], tool_id)
        kernels.append((kdir, meta, units, skipped))
    all_units = [u for _, _, us, _ in kernels for u in us]
    tick = progress(len(all_units)) if progress else (lambda: None)
    builder = Builder(tc, opts, cache, tick=lambda n: tick())
    results = builder.run(all_units)
    rep = BuildReport(nvcc_calls=builder.compiler.calls)
    release = tc.release(tool_id)
    changes: dict[str, dict[str, Any]] = {}
    for _kdir, meta, units, skipped in kernels:
        insts = [dict(i) for i in meta.get("instantiations") or []]
        if not insts:
            rep.kernels += 1
            continue
        counts = {"ok": 0, "failed": 0, "timeout": 0, "skipped": 0}
        source = ((meta.get("parse_context") or {}).get("root"), (meta.get("closure") or {}).get("sources") or [])
        for i, why in skipped.items():
            insts[i][tc.key] = {"status": "skipped", "library": None, "symbol": "", "arch": opts.arch,
                                "error": why, "missing_symbol": None, "resources": None, "seconds": 0.0,
                                "cached": False}
            counts["skipped"] += 1
        for u in units:
            r = results[u.key]
            lib, log = u.path.parent / tc.library_name, u.path.parent / tc.log_name
            if r.status == "ok" and r.object:
                _place_library(cache, r.object, lib)
                log.unlink(missing_ok=True)
            else:
                lib.unlink(missing_ok=True)
                if not log.is_file() or log.read_text(encoding="utf-8", errors="replace") != r.log[-LOG_LIMIT:]:
                    atomic.write_text(log, r.log[-LOG_LIMIT:])
                rep.failures.append(f"{u.tag}: {r.error}")
            rec = build_record(u, r, opts.arch, tc.library_name, tc.log_name, source,
                               lambda: cuda_libs.toolkit_include_dirs(nvcc))
            rec.update(tc.record_extra(u, rec, r.log))
            insts[u.index][tc.key] = rec
            counts[r.status] += 1
            rep.cached += r.cached
        summary = {"pass_call": counts["ok"] > 0, "units": len(insts), **counts, "arch": opts.arch,
                   tc.compiler: release, **tc.summary_extra([i.get(tc.key) or {} for i in insts])}
        for k in ("ok", "failed", "timeout", "skipped"):
            setattr(rep, k, getattr(rep, k) + counts[k])
        rep.with_findings += summary.get("with_findings", 0)
        rep.units += len(insts)
        rep.kernels += 1
        rep.kernels_ok += summary["pass_call"]
        unresolved = _with_build_failures(meta.get("unresolved") or [], insts, tc.key)
        if insts != meta.get("instantiations") or summary != meta.get(tc.key) or unresolved != meta.get("unresolved"):
            changes[meta["id"]] = {"instantiations": insts, tc.key: summary, "unresolved": unresolved}
    (update or dataset.update_many)(out_dir, changes)
    rep.seconds = time.monotonic() - t0
    return rep
