"""One spelling per nvcc flag, and build-file text with its comments cut: shared by the readers of a project's
build files (`build_flags` for the folders above a source, `cmake_modules` for the `.cmake` modules the root
includes), so that both write the same flag the same way and neither reads a commented-out option."""

from __future__ import annotations

import re

_STD_ALIAS = {"0x": 11, "1y": 14, "1z": 17, "2a": 20, "2b": 23, "2c": 26}


def std_flag(num: int) -> str:
    return f"-std=c++{num:02d}"


def normal(flag: str) -> str:
    """One spelling per flag: `--std c++2a` is `-std=c++20`, `-expt-extended-lambda` `--extended-lambda`."""
    f = re.sub(r"\s+", "", flag)
    if re.match(r"-{1,2}std", f):
        v = re.search(r"\+\+(\w\w)", f)
        tail = v.group(1) if v else "17"
        return std_flag(_STD_ALIAS.get(tail) or int(tail) if tail.isdigit() or tail in _STD_ALIAS else 17)
    if f.lstrip("-") in ("expt-relaxed-constexpr",):
        return "--expt-relaxed-constexpr"
    if f.lstrip("-") in ("expt-extended-lambda", "extended-lambda"):
        return "--extended-lambda"
    return f


def uncommented(text: str) -> str:
    """CMake or Makefile text without its `#` comments (a flag in a comment builds nothing)."""
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())
