"""The `-D`s of nvcc command lines a project's Python build code writes as strings, for every CUDA source (issue 14).

A build script may run nvcc itself rather than through a torch extension: it loops over the project's `.cu` files and
composes each command as an f-string, `f'{nvcc_cmd} --std=c++17 -O3 -DNDEBUG -DFEATURE_ON=1 -o "{out}" -c "{cu_path}"'`.
No string names a source (the loop's variable does), so `py_build.source_flags` (flags of the scopes that name a file)
gives it nothing, and a header that wraps its device helpers in `#if FEATURE_ON` lost them in every unit. Such a
command compiles whatever source its variable holds: its literal `-D`s are the build's defines for each CUDA source
of the project. Where a script writes several (a debug and a release line, `-D_DEBUG` / `-DNDEBUG`), only the
`-D`s every one of them passes count: the build mode is a choice, the feature switch is not.
"""

from __future__ import annotations

import ast
import functools
import re

from miner import lazy_re
from miner.source.py_build import Flag, index_of

# A whole `-DNAME` / `-DNAME=VALUE` of the literal text (a `-D{name}` filled in at run time is not one).
_DEFINE = lazy_re.compile(r"(?:^|\s)(-D[A-Za-z_]\w*(?:=[\w.+-]*)?)(?=\s|$)")
# The compile of one file named by a placeholder: `-c "{cu_path}"`, `-c {src}`.
_COMPILES_PLACEHOLDER = lazy_re.compile(r"(?:^|\s)-c\s+[\"']?\x00")
_NVCC_WORD = lazy_re.compile(r"(?:^|[\s/])nvcc(?:\.exe)?(?:\s|$)", re.I)


def _text(node: ast.JoinedStr) -> str:
    """The f-string's literal text, each placeholder as NUL."""
    return "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "\x00"
                   for v in node.values)


def _runs_nvcc(node: ast.JoinedStr) -> bool:
    """Whether the command starts with nvcc: a placeholder whose expression names it (`{nvcc_cmd}`,
    `{self.nvcc_path}`), or the word itself."""
    first = node.values[0] if node.values else None
    if isinstance(first, ast.FormattedValue):
        return "nvcc" in ast.unparse(first.value).lower()
    text = _text(node)
    head = text.split("\x00", 1)[0]
    return bool(_NVCC_WORD.search(" " + head.split(" -", 1)[0] + " "))


@functools.cache
def command_defines(root: str) -> tuple[Flag, ...]:
    """The `-D`s every nvcc command string of the project's Python build files passes, where each such string compiles
    a file named by a placeholder (`-c "{cu_path}"`); each with the first place it is written (`file:line`)."""
    found: list[dict[str, str]] = []
    for path, tree in index_of(root).files.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.JoinedStr) or not _runs_nvcc(node):
                continue
            text = _text(node)
            if not _COMPILES_PLACEHOLDER.search(text):
                continue
            found.append({m.group(1): f"{path}:{node.lineno}" for m in _DEFINE.finditer(text)})
    if not found:
        return ()
    common = set(found[0]).intersection(*found[1:])
    return tuple((d, found[0][d]) for d in found[0] if d in common)
