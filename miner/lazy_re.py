"""Module-level regular expressions compiled at their first use, not at import.

Importing the extract command's modules compiled ~360 patterns (~0.1 s of every `python -m miner` start,
most of them never used by a given run: a small extract uses a few dozen). `compile` returns a stand-in
that compiles the pattern the first time one of its methods or attributes is asked for and from then on
answers from the compiled pattern's own bound methods, set on the stand-in (an instance attribute: no
`__getattr__` after the first use, so a hot loop pays what it paid for `re.Pattern`).

Only for patterns used through their methods (`P.search(...)`, `P.sub(...)`, `P.pattern`): `re.sub(P, ...)`
and `isinstance(P, re.Pattern)` need a real pattern (`P.compiled()` gives it).
"""

from __future__ import annotations

import re
from typing import Any, AnyStr, cast

# What a compiled pattern answers; copied onto the stand-in at its first use.
_METHODS = ("search", "match", "fullmatch", "sub", "subn", "split", "findall", "finditer", "scanner",
            "groups", "groupindex")


class LazyPattern:
    """A pattern compiled at its first use (see the module's docstring)."""

    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self.pattern = pattern
        self.flags_given = flags

    def compiled(self) -> re.Pattern[Any]:
        """The compiled pattern (compiled now if it was not yet)."""
        found = self.__dict__.get("_compiled")
        if found is None:
            found = re.compile(self.pattern, self.flags_given)
            for name in _METHODS:
                setattr(self, name, getattr(found, name))
            self.flags = found.flags
            self._compiled = found
        return found

    def __getattr__(self, name: str) -> Any:
        # Called only for attributes the instance does not have yet: before the first use.
        if name.startswith("__") or name in ("_compiled",):
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __reduce__(self) -> tuple[type[LazyPattern], tuple[str | bytes, int]]:
        # pickled and copied as its pattern and flags (the compiled one's bound methods are not state)
        return LazyPattern, (self.pattern, self.flags_given)

    def __repr__(self) -> str:
        return f"lazy_re.compile({self.pattern!r}, {self.flags_given})"


def compile(pattern: AnyStr, flags: int | re.RegexFlag = 0) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)`, compiled at its first use."""
    return cast("re.Pattern[AnyStr]", LazyPattern(pattern, int(flags)))
