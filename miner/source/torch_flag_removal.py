"""nvcc flags a torch extension's build script takes out of torch's defaults.

torch.utils.cpp_extension passes COMMON_NVCC_FLAGS (`-D__CUDA_NO_HALF_OPERATORS__`, ...) to every extension it
builds. LLM kernel builds that need `static_cast<float>(__nv_bfloat16)` or half operators remove them before
`setup()`:

    def remove_unwanted_pytorch_nvcc_flags():
        REMOVE_NVCC_FLAGS = ["-D__CUDA_NO_HALF_OPERATORS__", ...]
        for flag in REMOVE_NVCC_FLAGS:
            torch_cpp_ext.COMMON_NVCC_FLAGS.remove(flag)

Those flags are then not the build's (and the strings that name them are no flags it passes). Read from the
script's syntax tree: a `COMMON_NVCC_FLAGS.remove(x)` where x is a string, or the loop variable over a list of
strings (written in the loop or assigned to a name in the same function or at module level); a removal inside a
function counts when the script calls that function.
"""

from __future__ import annotations

import ast
import functools

from miner.source.py_eval import Evaluator, Frame, Index

_SCRIPT = "<build script>"


def _removals(scope: ast.AST, frame: Frame, evaluator: Evaluator) -> set[str]:
    loops = {id(c): n for n in ast.walk(scope) if isinstance(n, ast.For) for c in ast.walk(n)}
    out: set[str] = set()
    for n in ast.walk(scope):
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "remove"
                and n.args and isinstance(n.func.value, (ast.Attribute, ast.Name))):
            continue
        owner = n.func.value
        if (owner.attr if isinstance(owner, ast.Attribute) else owner.id) != "COMMON_NVCC_FLAGS":
            continue
        arg = n.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            out.add(arg.value)
        elif isinstance(arg, ast.Name) and (loop := loops.get(id(n))) is not None \
                and isinstance(loop.target, ast.Name) and loop.target.id == arg.id:
            # the loop's list, written there or named (a local, else a module global): the build files' evaluator
            out.update(token for token, _ in evaluator.expr(loop.iter, frame))
    return out


@functools.lru_cache(maxsize=64)
def removed_torch_flags(text: str) -> frozenset[str]:
    """The COMMON_NVCC_FLAGS entries the build script at `text` removes (empty when it removes none). Memoised:
    the flags of every source file of an extension ask about the same script."""
    if "COMMON_NVCC_FLAGS" not in text:
        return frozenset()
    try:
        module = ast.parse(text)
    except SyntaxError:
        return frozenset()
    evaluator = Evaluator(Index("", {_SCRIPT: module}))
    called = {n.func.id for n in ast.walk(module) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    out: set[str] = set()
    funcs = [n for n in ast.walk(module) if isinstance(n, ast.FunctionDef)]
    for f in funcs:
        if f.name in called:
            out |= _removals(f, Frame(_SCRIPT, func=f), evaluator)
    # module level: the statements outside every function
    top = ast.Module(body=[s for s in module.body if not isinstance(s, (ast.FunctionDef, ast.ClassDef))],
                     type_ignores=[])
    return frozenset(out | _removals(top, Frame(_SCRIPT), evaluator))
