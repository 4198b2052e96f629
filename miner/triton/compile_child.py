"""Child process of the Triton build: compiles units ahead of time for a named GPU target, no GPU needed.

Run as `python -m miner.triton.compile_child`; reads one JSON task per line on stdin and answers one
JSON line per task on stdout. Units are untrusted code: they are imported here (importlib from their
file), never in the miner's own process, and the parent kills this process group on a timeout.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import sys
import time
import traceback
from typing import Any


def _load(path: str, tag: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"km_unit_{tag}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses and pickling look modules up by name
    spec.loader.exec_module(mod)
    return mod


def _jit_function(obj: Any) -> Any:
    """The JITFunction under autotune/heuristics wrappers (each keeps the wrapped one as `.fn`)."""
    from triton.runtime.jit import JITFunction

    seen = 0
    while not isinstance(obj, JITFunction) and hasattr(obj, "fn") and seen < 8:
        obj, seen = obj.fn, seen + 1
    if not isinstance(obj, JITFunction):
        raise TypeError(f"not a triton.jit function: {type(obj).__name__}")
    return obj


def _jit_sources(mod: Any) -> list[str]:
    """Source of every jit function the unit defines (the kernel and the helpers it may call)."""
    from triton.runtime.jit import JITFunction

    out = []
    for v in vars(mod).values():
        try:
            fn = _jit_function(v) if not isinstance(v, type) else None
        except TypeError:
            continue
        if isinstance(fn, JITFunction):
            out.append(fn.src)
    return out


def _constexpr(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("tl."):
        import triton.language as tl

        return getattr(tl, value[3:])
    return value


def _first_error(exc: BaseException) -> str:
    """The innermost cause's reason: a helper's CompilationError wraps the caller's, whose text is only
    a caret under the call."""
    inner = exc
    while inner.__cause__ is not None and inner.__cause__ is not inner:
        inner = inner.__cause__
    lines = [ln for ln in (str(inner).strip() or type(inner).__name__).splitlines() if ln.strip()]
    reasons = [ln for ln in lines if ln.strip(" ^~")]
    reason = reasons[-1].strip() if reasons else type(inner).__name__
    where = lines[0].strip() if lines and lines[0].startswith("at ") else ""
    func = next((ln.strip() for ln in lines[1:3] if ln.lstrip().startswith("def ")), "")
    ctx = f" ({where} {func})".rstrip() if where else ""
    return f"{type(inner).__name__}: {reason}{ctx}"


def _failure(exc: BaseException, kernel_src: str) -> Any:
    """The error as the repair search sees it: its innermost reason, and where in the kernel's own source
    the compiler was (the innermost CompilationError raised over the kernel's text, not a helper's)."""
    from triton.compiler.errors import CompilationError

    from miner.triton.repair import Failure

    line = col = None
    helper: tuple[str, int, int] | None = None
    cur: BaseException | None = exc
    while cur is not None:
        if isinstance(cur, CompilationError) and hasattr(cur.node, "lineno"):
            if cur.src == kernel_src:
                line, col, helper = cur.node.lineno, cur.node.col_offset, None
            elif line is not None and helper is None and cur.src:  # the helper the kernel called
                helper = (cur.src, cur.node.lineno, cur.node.col_offset)
        nxt = cur.__cause__
        cur = nxt if nxt is not cur else None
    f = Failure(_first_error(exc), line, col)
    if helper is not None:
        f.helper_src, f.helper_line, f.helper_col = helper
    return f


def _compile(fn: Any, sig: dict[str, str], consts: dict[str, Any], target: Any, options: dict[str, Any]) -> Any:
    import triton
    from triton.compiler import ASTSource

    # A tuple argument is written "(i32, i32)" in metadata (JSON strings); Triton wants a Python tuple.
    sig = {n: tuple(x.strip() for x in t[1:-1].split(",") if x.strip()) if t.startswith("(") else t
           for n, t in sig.items() if n in fn.arg_names}
    consts = {n: _constexpr(v) for n, v in consts.items() if n in fn.arg_names}
    for n in consts:  # a runtime parameter turned constexpr (an argument passed as None)
        sig.setdefault(n, "constexpr")
    return triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts), target=target, options=options)


def compile_one(task: dict[str, Any]) -> dict[str, Any]:
    from triton.backends.compiler import GPUTarget

    from miner.triton import fake_device
    from miner.triton import ports as ports_mod
    from miner.triton.repair import Kernel, Search, compared_literals

    t0 = time.monotonic()
    stage = "import"
    queries: list[str] = []
    search = None
    reduced_from: BaseException | None = None
    ported: list[str] = []
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # a unit printing at import must not break the protocol
            with fake_device.installed(task["arch"], queries):
                try:
                    mod = _load(task["unit"], task["tag"])
                except Exception as exc:  # noqa: BLE001 - the launcher's side may be what fails
                    mod, reduced_from = _load_kernel_closure(task), exc
                    if mod is None:
                        raise
        stage = "lookup"
        fn = _jit_function(getattr(mod, task["kernel"]))
        stage = "compile"
        target = GPUTarget(task.get("backend", "cuda"), task["arch"], task.get("warp_size", 32))
        options = {"num_warps": task.get("num_warps", 4), "num_stages": task.get("num_stages", 3)}
        search = Search(Kernel.parse(fn.src), task["signature"], task["constexprs"], task.get("origins", {}),
                        task.get("configs"), compared_literals(_jit_sources(mod)))
        budget = float(task.get("repair_budget_s", 60.0))
        while True:
            try:
                k = _compile_repairing(fn, search, target, options, t0, budget)
                break
            except Exception as exc:  # noqa: BLE001 - code written for an older Triton: port it, compile again
                done = ports_mod.port(_first_error(exc), fn.__globals__, ported)
                if done is None:
                    raise
                ported.append(done)
    except BaseException as exc:  # noqa: BLE001 - every failure of untrusted code is a result
        if isinstance(exc, KeyboardInterrupt):
            raise
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        return {"status": "failed", "stage": stage, "error": _first_error(exc)[:500],
                "log": "".join(tb)[-4000:], "seconds": round(time.monotonic() - t0, 3),
                **_search_facts(search, queries, reduced_from, ported)}
    md = k.metadata
    return {"status": "ok", "stage": "done", "error": None, "ptx": k.asm.get("ptx", ""),
            "shared": int(getattr(md, "shared", 0) or 0), "num_warps": int(md.num_warps),
            "num_stages": int(md.num_stages), "name": md.name, "seconds": round(time.monotonic() - t0, 3),
            **_search_facts(search, queries, reduced_from, ported)}


def _compile_repairing(fn: Any, search: Any, target: Any, options: dict[str, Any], t0: float, budget: float) -> Any:
    """Compile with the search's signature; on failure, try its candidate changes one at a time, keeping
    a change only when the compiler gets further (repair.py), until it compiles or nothing helps."""
    from miner.triton.repair import MAX_COMPILES

    compiles = 1
    try:
        return _compile(fn, search.signature, search.constexprs, target, options)
    except Exception as first:  # noqa: BLE001 - a failed compile is what the search repairs
        cur, last_exc = _failure(first, fn.src), first
    while True:
        kept = False
        for p, v in search.candidates(cur):
            if compiles >= MAX_COMPILES or time.monotonic() - t0 > budget:
                break
            sig, consts = search.apply(p, v)
            compiles += 1
            try:
                k = _compile(fn, sig, consts, target, options)
            except Exception as exc:  # noqa: BLE001
                f = _failure(exc, fn.src)
                if search.progress(f) > search.progress(cur):  # the compiler got further: keep the change
                    search.keep(p, v, cur)
                    cur, last_exc, kept = f, exc, True
                    break
                continue
            search.keep(p, v, cur)
            return k
        if not kept:
            raise last_exc from last_exc.__cause__


def _load_kernel_closure(task: dict[str, Any]) -> Any:
    """The unit reduced to what the kernel needs (kernel_only.py), written beside the child's cache and
    imported; None when there is nothing to drop or the reduction does not import either."""
    from miner.triton import kernel_only

    with open(task["unit"], encoding="utf-8") as fh:
        text = kernel_only.reduce(fh.read(), task["kernel"])
    if text is None:
        return None
    path = os.path.join(os.getcwd(), f"km_kernel_closure_{task['tag']}.py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    try:
        return _load(path, task["tag"] + "_kernel_closure")
    except Exception:  # noqa: BLE001 - the original import error is the one to report
        return None


def _search_facts(search: Any, queries: list[str], reduced_from: BaseException | None = None,
                  ported: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if ported:
        out["ports"] = ported
    if reduced_from is not None:
        out["import"] = "kernel_closure"
        out["unit_import_error"] = _first_error(reduced_from)[:300]
    if search is not None and search.kept:
        out["repairs"] = [c.to_json() for c in search.kept]
        out["signature"], out["constexprs"] = search.signature, search.constexprs
    if queries:
        out["device_queries"] = sorted(set(queries))
    return out


def main() -> int:
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(os.getcwd(), ".km-triton-cache"))
    out = sys.stdout
    sys.stdout = sys.stderr  # only this protocol writes to the real stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        task = json.loads(line)
        res = compile_one(task)
        res["tag"] = task["tag"]
        out.write(json.dumps(res) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
