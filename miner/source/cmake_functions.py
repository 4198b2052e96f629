"""Calls of a CMakeLists' own functions and macros that give compile definitions, written out in place (issue 14).

A project may wrap its definitions in a function of its own:

    function(compile_option VAR VALUE)
      target_compile_definitions(lib PRIVATE ${VAR}=${VALUE})
    endfunction()
    ...
    if (ENABLE_CUDA OR ENABLE_HIP)
      compile_option(COMPILE_CUDA 1)

Read as text, the definition inside the function names only `${VAR}=${VALUE}` and the call is no command the
reader knows: `COMPILE_CUDA=1` was lost, and with it the `#if COMPILE_CUDA` that includes the kernels' header into
the translation unit that launches them. `expanded` replaces each call of such a function (one whose body gives a
definition) by its body with the parameters (`${VAR}`, `${ARGV0}`, `${ARGN}`) substituted, and drops the
definitions themselves, so the call's place (inside its `if`) decides whether the definition counts. A function the
file defines and does not call (a module's helper other files call) is left as written.
"""

from __future__ import annotations

import functools
import re

from miner import lazy_re

_DEFINITION = lazy_re.compile(r"\b(function|macro)\s*\(\s*([A-Za-z_]\w*)([^)]*)\)(.*?)\bend\1\s*\([^)]*\)", re.I | re.S)
_GIVES_DEFINE = lazy_re.compile(r"\b(?:target_compile_definitions|add_compile_definitions|add_definitions)\s*\(", re.I)
_MAX_DEPTH = 3


@functools.lru_cache(maxsize=256)
def expanded(code: str) -> str:
    """`code` (a CMake file's text, comments cut) with the calls of its definition-giving functions replaced by
    their bodies; unchanged where it defines none."""
    if not _GIVES_DEFINE.search(code) or not re.search(r"\b(?:function|macro)\s*\(", code, re.I):
        return code
    functions: dict[str, tuple[list[str], str]] = {}
    for m in _DEFINITION.finditer(code):
        if _GIVES_DEFINE.search(m.group(4)):
            # (of two definitions of one name in the branches of an `if`, the first: both give the same names)
            functions.setdefault(m.group(2).lower(), (m.group(3).split(), m.group(4)))
    # Only functions this file calls: a module's function that other files call (`add_cuda_library(...)`) stays as
    # written, where the module reader takes its body's definitions as given to every target passed in.
    rest = _DEFINITION.sub("", code)
    functions = {n: f for n, f in functions.items() if re.search(r"(?<![\w$])" + re.escape(n) + r"\s*\(", rest, re.I)}
    if not functions:
        return code
    out = _DEFINITION.sub(lambda m: "" if m.group(2).lower() in functions else m.group(0), code)
    call = re.compile(r"(?<![\w$])(" + "|".join(re.escape(n) for n in functions) + r")\s*\(([^()]*)\)", re.I)
    for _ in range(_MAX_DEPTH):  # a function's body may call another
        new = call.sub(lambda m: _body(functions[m.group(1).lower()], m.group(2)), out)
        if new == out:
            break
        out = new
    return out


def _body(function: tuple[list[str], str], arguments: str) -> str:
    params, body = function
    args = arguments.replace('"', " ").split()
    values = {p: args[i] if i < len(args) else "" for i, p in enumerate(params)}
    values.update({f"ARGV{i}": a for i, a in enumerate(args)})
    values["ARGN"] = " ".join(args[len(params):])
    return "\n" + re.sub(r"\$\{(\w+)\}", lambda v: values.get(v.group(1), v.group(0)), body) + "\n"
