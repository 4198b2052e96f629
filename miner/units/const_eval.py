"""clang's own value of a constant integer expression or constant variable (clang_Cursor_Evaluate).

Shared by the launch search (an `if constexpr` folded to its taken branch) and the launch formulas (a
namespace-scope `const int threads = sizeof(unsigned long long) * 8;` put in as 64): clang knows what
`sizeof`, enumerators and casts come to, which a text evaluator does not."""

from __future__ import annotations

import ctypes
from typing import Any

import clang.cindex as ci

_EVAL: Any = None
_CXEVAL_INT = 1


def const_value(c: ci.Cursor) -> int | None:
    """The integer clang evaluates `c` to, or None (not constant, not an integer, or no evaluator)."""
    global _EVAL
    if _EVAL is None:
        try:
            lib = ci.conf.lib
            ev, kind, val, disp = (lib.clang_Cursor_Evaluate, lib.clang_EvalResult_getKind,
                                   lib.clang_EvalResult_getAsLongLong, lib.clang_EvalResult_dispose)
            ev.argtypes, ev.restype = [ci.Cursor], ctypes.c_void_p
            kind.argtypes, kind.restype = [ctypes.c_void_p], ctypes.c_int
            val.argtypes, val.restype = [ctypes.c_void_p], ctypes.c_longlong
            disp.argtypes, disp.restype = [ctypes.c_void_p], None
            _EVAL = (ev, kind, val, disp)
        except AttributeError:
            _EVAL = False
    if not _EVAL:
        return None
    ev, kind, val, disp = _EVAL
    res = ev(c)
    if not res:
        return None
    try:
        return int(val(res)) if kind(res) == _CXEVAL_INT else None
    finally:
        disp(res)
