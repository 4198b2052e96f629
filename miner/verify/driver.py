"""The verify stage over a dataset: each built instantiation's unit and its original TU compiled to
PTX, the kernel's code compared, `fidelity` recorded per instantiation.

One original compile serves every kernel of its TU (grouped by TU, defines and include dirs); TUs
and units compile in parallel; every compile is cached by content (store.py).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miner import dataset
from miner.builder.diagnostics import parse_errors
from miner.builder.ptxas import demangle
from miner.builder.toolchain import toolchain_id
from miner.builder.unit_split import vendored_flags
from miner.errors import UsageError
from miner.verify import original as orig_mod
from miner.verify import ptx as ptx_mod
from miner.verify.original import Original
from miner.verify.store import FORMAT, PtxResult, PtxStore, default_cache_dir

DEFAULT_TIMEOUT = 1200.0
STATUSES = ("identical", "differs", "original_unbuildable", "unit_unbuildable")


@dataclass
class VerifyOptions:
    jobs: int = 2
    timeout: float = DEFAULT_TIMEOUT
    sample: int | None = None
    source: Path | None = None
    cache_dir: Path | None = None
    force: bool = False
    extra_flags: list[str] = field(default_factory=list)


@dataclass
class VerifyReport:
    instantiations: int = 0       # built instantiations in the selected kernels
    verified: int = 0             # of those, in the sampled TUs
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATUSES, 0))
    tus: int = 0
    tus_total: int = 0
    nvcc_calls: int = 0
    cached: int = 0
    context_identical: int = 0    # `differs`, but identical in the original's module context (_context_check)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)   # one line per instantiation that is not identical


@dataclass
class _Item:
    kdir: Path
    meta: dict[str, Any]
    index: int
    unit: Path
    orig: Original | None = None
    error: str | None = None
    unit_res: PtxResult | None = None
    record: dict[str, Any] | None = None
    compared: tuple[ptx_mod.Ptx, str] | None = None   # the original's PTX and entry, kept for the context check

    @property
    def vendored_flags(self) -> list[str]:
        """-isystem of the dataset's copies of the vendored libraries the unit includes (closure.vendored)."""
        return vendored_flags(self.kdir, self.meta)[0]

    @property
    def tag(self) -> str:
        return f"{self.kdir.name}/{self.meta['instantiations'][self.index].get('id', self.index)}"



def _find_entry(ptx: ptx_mod.Ptx, entry: str, name: str, unit: ptx_mod.Ptx | None = None) -> str | None:
    """The original's entry for the unit's: the same mangled name (internal uniquifiers aside), else the one
    whose demangled name is the unit's but for `(anonymous namespace)::`. PyTorch ops put their kernels in
    an anonymous namespace, which the unit does not keep; the mangled names then differ in the namespace
    component and in the substitution indices after it, so only the demangled names can be compared.
    Else, given the unit's PTX, the one entry of the same kernel and template arguments whose parameters
    are the unit's (`_signature_match`)."""
    found = ptx_mod.find_entry(ptx, entry)
    if found is not None:
        return found
    mark = f"{len(name)}{name}"
    cands = [e for e in ptx.entries if mark in e and "_GLOBAL__N_" in e]
    if cands:
        names = demangle([entry, *cands])
        want = names[entry]
        hits = [e for e in cands if names[e].replace("(anonymous namespace)::", "") == want]
        if len(hits) == 1:
            return hits[0]
    return _signature_match(ptx, entry, name, unit) if unit is not None else None


def _template_id(demangled: str) -> str:
    """`void ns::k<1024u>(at::Foo<float, 3ul>, int)` -> `ns::k<1024u>`: the kernel's name and template
    arguments, without the return type (templates only) and the function parameters."""
    s = demangled.replace("(anonymous namespace)::", "")
    s = s[5:] if s.startswith("void ") else s
    depth = 0
    for i, ch in enumerate(s):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            return s[:i]
    return s


def _signature_match(ptx: ptx_mod.Ptx, entry: str, name: str, unit: ptx_mod.Ptx) -> str | None:
    """The original's entry of the same kernel and template arguments (demangled) with the same PTX
    parameter list, when exactly one has them. The mangled names differ where a parameter type is a class
    in the unit and an alias template in the original's headers: torch 2.13's
    `at::GenericPackedTensorAccessor<T, N, ...>` is `torch::headeronly::detail::GenericPackedTensorAccessor<
    TensorAccessor<...>, IndexBoundsCheck<...>, T, N, ...>`, the unit's shim a plain class with the same
    layout. The ABI (sizes and alignments of the parameters) is compared instead of the spelling."""
    mark = f"{len(name)}{name}"
    cands = [e for e in ptx.entries if mark in e or e == name]
    if not cands or entry not in unit.functions:
        return None
    names = demangle([entry, *cands])
    want, params = _template_id(names[entry]), ptx_mod.param_list(unit, entry)
    hits = [e for e in cands if _template_id(names[e]) == want and ptx_mod.param_list(ptx, e) == params]
    return hits[0] if len(hits) == 1 else None


def _first_error(log: str) -> str:
    diags = parse_errors(log)
    if diags:
        return diags[0].text[:400]
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    return (lines[-1] if lines else "nvcc failed without a message")[:400]


def _sample(groups: dict[Any, list[_Item]], n: int | None) -> list[Any]:
    """A deterministic sample of TUs: the first n by a hash of their name and flags."""
    # Hashed on (defines, include dirs), not the project flags: the sample stays the one earlier versions took.
    keys = sorted(groups, key=lambda k: hashlib.sha256(repr((groups[k][0].orig.rel, k[1:3])).encode()).hexdigest())
    return keys if n is None else keys[:n]


def _collect(out_dir: Path, selectors: list[str], source: Path | None) -> list[_Item]:
    items: list[_Item] = []
    for kdir in dataset.select_kernels(out_dir, selectors):
        try:
            meta = dataset.load_metadata(kdir)
        except (OSError, json.JSONDecodeError):
            continue
        if (meta.get("language") or "cuda") != "cuda":
            continue  # Triton units are Python: no original TU to compile with nvcc
        built = [i for i, inst in enumerate(meta.get("instantiations") or [])
                 if (inst.get("build") or {}).get("status") == "ok" and inst.get("unit")]
        if not built:
            continue
        try:
            orig: Original | None = orig_mod.locate(meta, source)
            error = None
        except ValueError as exc:
            orig, error = None, str(exc)
        for i in built:
            o = _origin_of(meta, meta["instantiations"][i], source, orig)
            items.append(_Item(kdir, meta, i, kdir / meta["instantiations"][i]["unit"], o,
                               error if o is orig else None))
    return items


def _origin_of(meta: dict[str, Any], inst: dict[str, Any], source: Path | None, orig: Original | None
               ) -> Original | None:
    """The original TU for one instantiation: a host template's instantiation recorded with the TU it came from
    (`origin_tu`, a test program instantiating a library header's launcher with its own types) is compiled in
    that TU; the kernel's parse TU may never instantiate it, and a wrapper there names types it lacks. Where
    that file is gone, the kernel's TU, as before."""
    tu = inst.get("origin_tu")
    if not tu or (orig is not None and orig.rel == tu):
        return orig
    try:
        return orig_mod.locate(meta, source, tu)
    except ValueError:
        return orig


def _explicit(item: _Item) -> str | None:
    try:
        unit_text = item.unit.read_text(encoding="utf-8")
    except OSError:
        unit_text = ""
    return orig_mod.explicit_instantiation(item.meta, item.meta["instantiations"][item.index], unit_text)


def _unit_ptx(item: _Item) -> ptx_mod.Ptx:
    return ptx_mod.parse(item.unit_res.ptx if item.unit_res and item.unit_res.ok else "")


def _unit_entry(item: _Item) -> str | None:
    parsed = ptx_mod.parse(item.unit_res.ptx if item.unit_res else "")
    mark = f"{len(item.meta['name'])}{item.meta['name']}"
    # A mangled name holds `<len><name>`; a C-linkage kernel's entry is the name itself.
    hits = [e for e in parsed.entries if mark in e or e == item.meta["name"]]
    return (hits or parsed.entries or [None])[0]


def verify_dataset(out_dir: Path, opts: VerifyOptions, nvcc: str, selectors: list[str] | None = None,
                   progress: Callable[[int], Callable[[], None]] | None = None) -> VerifyReport:
    t0 = time.monotonic()
    rep = VerifyReport()
    items = _collect(out_dir.resolve(), selectors or [], opts.source)
    rep.instantiations = len(items)
    if items and all(it.orig is None for it in items) and len({it.error for it in items}) == 1:
        raise UsageError(f"verify: {items[0].error}")
    groups: dict[Any, list[_Item]] = {}
    for it in items:
        if it.orig is not None:
            groups.setdefault(it.orig.group_key(), []).append(it)
    rep.tus_total = len(groups)
    chosen = _sample(groups, opts.sample)
    rep.tus = len(chosen)
    todo = [it for k in chosen for it in groups[k]]
    if opts.sample is None:
        todo += [it for it in items if it.orig is None]
    rep.verified = len(todo)
    if not todo:
        rep.seconds = time.monotonic() - t0
        return rep
    tool_id = toolchain_id(nvcc)
    store = PtxStore(opts.cache_dir or default_cache_dir(), nvcc, opts.timeout)
    def arch_of(it: _Item) -> str:
        # Each unit's own: one built for an arch-specific target (sm_90a, `wgmma`) is compared there.
        return orig_mod.arch_flag((it.meta["instantiations"][it.index].get("build") or {}).get("arch"))

    # An original TU is compiled once for its kernels: for the arch-specific target if one of them needs it.
    group_arch = {k: max((arch_of(it) for it in groups[k]), key=lambda a: a.endswith("a")) for k in chosen}

    def unit_flags(it: _Item) -> list[str]:
        # As the build compiled the unit: the project's nvcc flags, and CUDA library wheels' headers.
        return ["-ptx", "-x", "cu", arch_of(it), *opts.extra_flags, *orig_mod.project_flags(it.meta),
                *(f for d in orig_mod.library_include_dirs() for f in ("-isystem", d))]

    torch_version = ""
    if any(groups[k][0].orig.torch for k in chosen):
        torch_version = orig_mod.torch_setup()[2]
    tick = progress(len(chosen) + len(todo)) if progress else (lambda: None)

    def orig_key(o: Original, flags: list[str], text: str) -> str:
        ver = torch_version if o.torch else ""
        return orig_mod.content_key([FORMAT, "original", tool_id, ver, orig_mod.library_versions(), "\0".join(flags),
                                     text], [o.tu, *o.headers, orig_mod.TOOLKIT_COMPAT])

    def compile_original(o: Original, text: str | None, arch: str) -> PtxResult:
        given = text
        if text is None and o.also:  # with the files that define what it only declares (original.wrapper_source)
            text = orig_mod.wrapper_source(o, [])
        try:
            for _ in range(3):
                flags = ["-x", "cu", *orig_mod.compile_flags(o, arch), *opts.extra_flags]
                key = orig_key(o, flags, text or "")
                res = store.compile(key, None if text else o.tu, text, flags, o.tu.parent, opts.force)
                # An `#error` that only demands a define the build system passes: compiled again with it as 0,
                # the value the mined configuration (the name undefined) gave every `#if` (guard_defines).
                more = [] if res.ok or given is not None else orig_mod.guard_defines(res.log, o)
                if not more:
                    return res
                o.assumed_defines += more
            return res
        finally:
            if given is None:
                tick()

    def compile_unit(it: _Item) -> PtxResult:
        text = it.unit.read_text(encoding="utf-8")
        headers, _ = orig_mod.scan_includes(it.unit, [])
        flags = [*unit_flags(it), *it.vendored_flags]
        key = orig_mod.content_key([FORMAT, "unit", tool_id, orig_mod.library_versions(), "\0".join(flags), text],
                                   headers)
        try:
            return store.compile(key, it.unit, None, flags, it.unit.parent, opts.force)
        finally:
            tick()

    with ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        # Originals first and torch ones first: they are the long poles.
        order = sorted(chosen, key=lambda k: (not groups[k][0].orig.torch, -len(groups[k][0].orig.headers)))
        orig_futs: dict[Any, Future[PtxResult]] = {k: pool.submit(compile_original, groups[k][0].orig, None,
                                                               group_arch[k]) for k in order}
        unit_futs = {id(it): pool.submit(compile_unit, it) for it in todo if it.orig is not None}
        for it in todo:
            if id(it) in unit_futs:
                it.unit_res = unit_futs[id(it)].result()
        results = {k: f.result() for k, f in orig_futs.items()}
        # Second round: wrappers adding explicit instantiations the original TU does not make.
        wrap_need: dict[Any, list[_Item]] = {}
        parsed: dict[Any, ptx_mod.Ptx] = {}
        for k in chosen:
            parsed[k] = ptx_mod.parse(results[k].ptx) if results[k].ok else ptx_mod.Ptx()
            if not results[k].ok:
                continue
            for it in groups[k]:
                entry = _unit_entry(it)
                if entry and _find_entry(parsed[k], entry, it.meta["name"], _unit_ptx(it)) is None and _explicit(it):
                    wrap_need.setdefault(k, []).append(it)
        wrap_futs = {}
        for k, its in wrap_need.items():
            o = groups[k][0].orig
            insts = [_explicit(it) or "" for it in its]
            wrap_futs[k] = pool.submit(compile_original, o, orig_mod.wrapper_source(o, insts), group_arch[k])
        wrapped = {k: f.result() for k, f in wrap_futs.items()}

    rep.nvcc_calls = store.calls
    for k in chosen:
        for it in groups[k]:
            it.record = _judge(it, results[k], parsed[k], wrapped.get(k), group_arch[k])
            if groups[k][0].orig.assumed_defines:
                it.record["assumed_defines"] = list(groups[k][0].orig.assumed_defines)
    differs = [it for it in todo if it.record and it.record["status"] == "differs"]
    if differs:
        module = _module_kernels(out_dir.resolve())
        with ThreadPoolExecutor(max_workers=opts.jobs) as pool:
            checks = pool.map(lambda it: _context_check(it, store, tool_id, unit_flags(it), opts.force, module),
                              differs)
            for it, ctx in zip(differs, checks, strict=True):
                if ctx is not None:
                    it.record["context"] = ctx
                    rep.context_identical += ctx["status"] == "identical"
        rep.nvcc_calls = store.calls
    for it in todo:
        if it.orig is None:
            it.record = {"status": "original_unbuildable", "original": None, "entry": None, "arch": arch_of(it)[6:],
                         "error": it.error, "explicit_instantiation": False}
    changes: dict[str, dict[str, Any]] = {}
    by_kernel: dict[Path, list[_Item]] = {}
    for it in todo:
        by_kernel.setdefault(it.kdir, []).append(it)
        rec = it.record or {}
        rep.counts[rec["status"]] += 1
        rep.cached += bool(rec.get("cached"))
        if rec["status"] != "identical":
            why = rec.get("error") or (rec.get("first_diff") or [""])[0]
            first = next((ln for ln in rec.get("first_diff") or [] if ln[:1] in "+-"), why)
            ctx = rec.get("context")
            if ctx and ctx["status"] == "identical":
                first = f"identical {context_phrase(ctx)}; alone: {first}"
            rep.notes.append(f"{it.tag}: {rec['status']}: {first}")
    for kdir, its in by_kernel.items():
        insts = [dict(i) for i in its[0].meta["instantiations"]]
        for it in its:
            insts[it.index]["fidelity"] = it.record
        changes[kdir.name] = {"instantiations": insts}
    dataset.update_many(out_dir, changes)
    rep.seconds = time.monotonic() - t0
    return rep


def context_phrase(ctx: dict[str, Any]) -> str:
    """How the unit was compiled when it came out as the original (`fidelity.context`)."""
    parts = []
    if ctx.get("headers"):
        parts.append(f"after the {ctx['headers']} library header(s) the original includes")
    if ctx.get("instantiations"):
        parts.append(f"beside the original's {ctx['instantiations']} other instantiation(s) of the kernel")
    if ctx.get("kernels"):
        parts.append(f"beside the original's {ctx['kernels']} other kernel(s) that call the same device functions")
    return "when compiled " + " and ".join(parts) + " (module context)"


def _judge(it: _Item, res: PtxResult, parsed: ptx_mod.Ptx, wrapped: PtxResult | None, arch: str) -> dict[str, Any]:
    o = it.orig
    assert o is not None
    rec: dict[str, Any] = {"status": "", "original": o.rel, "entry": None, "arch": arch[6:], "error": None,
                           "explicit_instantiation": False, "cached": res.cached}
    if it.unit_res is None or not it.unit_res.ok:
        rec.update(status="unit_unbuildable", error=_first_error(it.unit_res.log if it.unit_res else ""))
        return rec
    entry = _unit_entry(it)
    rec["entry"] = entry
    if entry is None:
        rec.update(status="unit_unbuildable", error="the unit's PTX has no .entry")
        return rec
    if not res.ok:
        rec.update(status="original_unbuildable",
                   error=("timed out" if res.timed_out
                          else _first_error(res.log) + orig_mod.missing_header_hint(res.log, o.root)))
        return rec
    src = parsed
    unit_ptx = _unit_ptx(it)
    found = _find_entry(parsed, entry, it.meta["name"], unit_ptx)
    if found is None and wrapped is not None:
        rec["explicit_instantiation"] = True
        rec["cached"] = rec["cached"] and wrapped.cached
        if not wrapped.ok:
            rec.update(status="original_unbuildable",
                       error="with the unit's explicit instantiation appended: " + _first_error(wrapped.log)
                       + orig_mod.missing_header_hint(wrapped.log, o.root))
            return rec
        src = ptx_mod.parse(wrapped.ptx)
        found = _find_entry(src, entry, it.meta["name"], unit_ptx)
    if found is None and it.meta["name"] in src.entries:
        # C linkage (`extern "C" __global__`): the original's entry is the plain name. The unit, whose kernel
        # text has no `extern "C"`, gets a mangled one; the code is compared, the two names are recorded.
        found = it.meta["name"]
        rec["original_entry"] = found
    if found is None:
        rec.update(status="original_unbuildable",
                   error=f"the original's PTX has no .entry {entry} (not compiled in the mined configuration)")
        return rec
    it.compared = (src, found)
    plain = found != entry and "_GLOBAL__N_" in found  # matched through an anonymous namespace
    if found != entry and not plain and "original_entry" not in rec and ptx_mod.find_entry(src, entry) is None:
        rec["original_entry"] = found   # matched by template arguments and parameters (_signature_match)
    a, b = ptx_mod.listing(src, found, plain), ptx_mod.listing(unit_ptx, entry, plain)
    rec["lines"] = len(b)
    if a == b:
        rec["status"] = "identical"
    else:
        rec.update(status="differs", first_diff=ptx_mod.first_difference(a, b))
    return rec


def _module_kernels(out_dir: Path) -> list[dict[str, Any]]:
    """The metadata of every CUDA kernel of the dataset (not only the selected ones): the other kernels an
    original TU holds, for the module context (_module_callers)."""
    out = []
    for kdir in dataset.select_kernels(out_dir, []):
        try:
            meta = dataset.load_metadata(kdir)
        except (OSError, json.JSONDecodeError):
            continue
        hip = (meta.get("variant") or {}).get("toolchain") not in (None, "cuda")   # not in the CUDA module
        if (meta.get("language") or "cuda") == "cuda" and not hip:
            out.append(meta)
    return out


def _closure_names(meta: dict[str, Any]) -> set[tuple[str, str]]:
    """What a kernel's closure took, by kind: its functions, macros, types, globals and includes."""
    closure = meta.get("closure") or {}
    return {(kind, str(n)) for kind in ("functions", "macros", "types", "globals", "includes")
            for n in closure.get(kind) or []}


def _module_callers(it: _Item, src: ptx_mod.Ptx, found: str, kernels: list[dict[str, Any]],
                    unit_text: str) -> tuple[int, str]:
    """The original's other kernels that call a device function this kernel calls (a name both closures took),
    as the original file spells them (their own lines), with explicit instantiations of the template arguments
    the original's PTX holds: cicc specializes a helper on the arguments all its callers in the module pass
    before it inlines it, so a kernel that alone in its unit is the helper's only caller (`ceil_div(t + 1,
    128)`) can come out otherwise than beside the original's other callers (`ceil_div(n, chunk)`), though its
    text is the original's. Only kernels the original's PTX holds, the unit does not define, and whose closure
    the unit's holds (so that they compile in it) are taken.
    Returns how many, and the text to append to the unit."""
    own = set((it.meta.get("closure") or {}).get("functions") or [])
    if not own or it.orig is None:
        return 0, ""
    has = _closure_names(it.meta)
    files = {it.orig.tu.resolve(), *(h.resolve() for h in it.orig.headers)}
    seen: set[tuple[Path, int]] = set()
    picked: list[tuple[Path, int, str]] = []
    lines_of: dict[Path, list[str] | None] = {}
    for meta in kernels:
        src_info, name = meta.get("source") or {}, meta.get("name") or ""
        if meta.get("id") == it.meta.get("id") or not name or not src_info.get("start_line"):
            continue
        if not own & set((meta.get("closure") or {}).get("functions") or []):
            continue
        if not _closure_names(meta) <= has:
            # It needs a definition or header the unit does not carry: appended, it would not compile, and one
            # such kernel would leave the whole context unbuildable (a file whose kernels all call one index
            # helper, each with its own math function beside it).
            continue
        path = (it.orig.root / src_info.get("path", "")).resolve()
        key = (path, int(src_info["start_line"]))
        if path not in files or key in seen or re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", unit_text):
            continue
        mark = f"{len(name)}{name}"
        entries = [e for e in src.entries if e != found and (mark in e or e == name)]
        if not entries:
            continue  # not compiled in the original's configuration
        if path not in lines_of:  # (a file's kernels are many: read it once)
            try:
                lines_of[path] = path.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                lines_of[path] = None
        if (lines := lines_of[path]) is None:
            continue
        seen.add(key)
        text = "\n".join(lines[key[1] - 1:int(src_info.get("end_line") or key[1])])
        scopes = (meta.get("qualified_name") or name).split("::")[:-1]
        if scopes and all(scopes):
            text = "".join(f"namespace {n} {{ " for n in scopes) + "\n" + text + "\n" + "}" * len(scopes)
        if meta.get("template_params"):
            names = demangle(entries)
            text += "".join(f"\ntemplate __global__ {names[e]};" for e in entries
                            if names[e].startswith("void ") and "(anonymous namespace)" not in names[e])
        picked.append((path, key[1], text))
    if not picked:
        return 0, ""
    picked.sort(key=lambda p: (str(p[0]), p[1]))
    return len(picked), ("\n// kernel-miner verify: the original's other kernels that call the same device functions, "
                         "for the module context\n" + "\n".join(t for _, _, t in picked) + "\n")


def _context_check(it: _Item, store: PtxStore, tool_id: str, flags: list[str], force: bool,
                   module: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """Whether a `differs` comes from the module rather than the kernel. nvcc's inliner weighs a helper by
    all its callers in the module, so a kernel compiled beside its sibling instantiations (the original
    TU instantiates <32> ... <1024>, the unit only <128>) may be scheduled differently: the unit is
    compiled again with explicit instantiations of the siblings the original's PTX holds (demangled).
    Where that is not the original's code yet, once more after the library headers the original includes
    and the unit left out (torch's, for one): cicc's numbering and scheduling move with declarations that
    emit no device code at all (a kernel came out identical after `#include <ostream>` alone and differed
    without it), so the same kernel text in a smaller module can differ by a hoisted address or a register."""
    if it.compared is None or it.unit_res is None or it.orig is None:
        return None
    src, found = it.compared
    entry = (it.record or {}).get("entry") or ""
    plain = found != entry and "_GLOBAL__N_" in found
    mark = f"{len(it.meta['name'])}{it.meta['name']}"
    sibs = [e for e in src.entries if e != found and mark in e]
    names = demangle(sibs)
    decls = [f"template __global__ {names[e]};" for e in sibs
             if names[e].startswith("void ") and "(anonymous namespace)" not in names[e]]
    unit_text = it.unit.read_text(encoding="utf-8")
    unit_headers, _ = orig_mod.scan_includes(it.unit, [])
    flags = [*flags, *it.vendored_flags]
    tail = ("\n// kernel-miner verify: the original's other instantiations of this kernel, for the module context\n"
            + "\n".join(decls) + "\n") if decls else ""

    original = ptx_mod.listing(src, found, plain)

    def compiled_same(text: str, more_flags: list[str]) -> tuple[bool, str | None]:
        key = orig_mod.content_key([FORMAT, "context", tool_id, "\0".join(flags + more_flags), text],
                                   unit_headers + it.orig.headers)
        res = store.compile(key, None, text, flags + more_flags, it.unit.parent, force)
        if not res.ok:
            return False, _first_error(res.log)
        compiled = ptx_mod.parse(res.ptx)
        got = ptx_mod.find_entry(compiled, entry)
        return got is not None and ptx_mod.listing(compiled, got, plain) == original, None

    # Contexts made of the original's own module, cheapest first: the siblings, the library headers, both
    # (the order of a module's functions moves the result too: one kernel came out as the original after the
    # headers alone and not after the headers and the siblings).
    includes = orig_mod.library_includes(it.orig)
    torch_flags = [f"-I{d}" for d in orig_mod.torch_setup()[0]] if it.orig.torch else []
    prefix = ("// kernel-miner verify: the library headers the original includes, for the module context\n"
              + "\n".join(includes) + "\n")
    contexts = [(len(decls), 0, 0, unit_text + tail, [])] if decls else []
    if includes:
        contexts.append((0, len(includes), 0, prefix + unit_text, torch_flags))
        if decls:
            contexts.append((len(decls), len(includes), 0, prefix + unit_text + tail, torch_flags))
    # Then with the original's other kernels that call the same helpers (_module_callers): a kernel that is no
    # template has no siblings, and its helpers' other callers are other kernels.
    n_callers, callers = _module_callers(it, src, found, module or [], unit_text)
    if n_callers:
        contexts.append((len(decls), 0, n_callers, unit_text + tail + callers, []))
        if includes:
            contexts.append((len(decls), len(includes), n_callers, prefix + unit_text + tail + callers, torch_flags))
    out: dict[str, Any] = {}
    for n_decls, n_headers, n_kernels, text, more in contexts:
        same, error = compiled_same(text, more)
        out = {"instantiations": n_decls, "status": "identical" if same else "unbuildable" if error else "differs"}
        if n_headers:
            out["headers"] = n_headers
        if n_kernels:
            out["kernels"] = n_kernels
        if error:
            out["error"] = error
        if same:
            break
    return out or None
