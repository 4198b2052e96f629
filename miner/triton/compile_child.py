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


def compile_one(task: dict[str, Any]) -> dict[str, Any]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    t0 = time.monotonic()
    stage = "import"
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # a unit printing at import must not break the protocol
            mod = _load(task["unit"], task["tag"])
        stage = "lookup"
        fn = _jit_function(getattr(mod, task["kernel"]))
        stage = "compile"
        sig = {n: t for n, t in task["signature"].items() if n in fn.arg_names}
        consts = {n: _constexpr(v) for n, v in task["constexprs"].items() if n in fn.arg_names}
        src = ASTSource(fn=fn, signature=sig, constexprs=consts)
        target = GPUTarget(task.get("backend", "cuda"), task["arch"], task.get("warp_size", 32))
        options = {"num_warps": task.get("num_warps", 4), "num_stages": task.get("num_stages", 3)}
        k = triton.compile(src, target=target, options=options)
    except BaseException as exc:  # noqa: BLE001 - every failure of untrusted code is a result
        if isinstance(exc, KeyboardInterrupt):
            raise
        tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
        return {"status": "failed", "stage": stage, "error": _first_error(exc)[:500],
                "log": "".join(tb)[-4000:], "seconds": round(time.monotonic() - t0, 3)}
    md = k.metadata
    return {"status": "ok", "stage": "done", "error": None, "ptx": k.asm.get("ptx", ""),
            "shared": int(getattr(md, "shared", 0) or 0), "num_warps": int(md.num_warps),
            "num_stages": int(md.num_stages), "name": md.name, "seconds": round(time.monotonic() - t0, 3)}


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
