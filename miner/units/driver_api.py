"""Launches through the driver API: a kernel looked up by name in a module the program loads at run time and
launched through the handle, with no `<<<>>>` and no name the parse can follow.

    load_function(FUNC_SCALE, "scale_voxels");            // calls cuModuleGetFunction(&functions[id], m, name)
    cuLaunchKernel(functions[FUNC_SCALE], gx, 1, 1, 256, 1, 1, 0, stream, args, nullptr);

The sources name such a kernel only in a string (`Mentions.loaded_by_name`). The lookup call's other arguments
say which handle it fills (`FUNC_SCALE`, `&cuScaleKernel`): the words no other call of the same function has. A
`cuLaunchKernel` (or `hipModuleLaunchKernel`) whose handle argument holds one of those words launches this kernel;
its six dimensions, shared memory and stream are the launch configuration. Text only (host files of such programs
are often not CUDA translation units the miner parses), so a handle filled in one place and copied to another
variable is not followed.
"""

from __future__ import annotations

import re

from miner import lazy_re
from miner.units.records import Launch

_COMMENT = lazy_re.compile(rb"/\*.*?\*/|//[^\n]*", re.S)
_LAUNCH = lazy_re.compile(rb"\b(cuLaunchKernel|cuLaunchCooperativeKernel|hipModuleLaunchKernel)\s*\(")
_WORD = lazy_re.compile(r"[A-Za-z_]\w*")
_OPEN = {ord("("): ord(")"), ord("["): ord("]"), ord("{"): ord("}")}
_CLOSE = {v: k for k, v in _OPEN.items()}
_ASSIGNED = lazy_re.compile(rb"([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*=(?!=)[^=]*$")
_CONTROL = {b"if", b"for", b"while", b"switch", b"catch", b"sizeof", b"return"}
_FUNCTION_HEAD = lazy_re.compile(rb"([A-Za-z_][\w:~]*)\s*\([^;{}]*\)\s*(?:const\s*)?(?:noexcept\s*)?$")


def _blank(m: re.Match[bytes]) -> bytes:
    return re.sub(rb"[^\n]", b" ", m.group(0))


def call_around(text: bytes, at: int) -> tuple[str, int, int] | None:
    """(callee, offset of its `(`, offset of the matching `)`) of the innermost call whose arguments hold `at`."""
    depth, i = 0, at - 1
    while i >= 0:
        c = text[i]
        if c in _CLOSE:
            depth += 1
        elif c in _OPEN:
            if depth == 0:
                if c != ord("("):
                    return None
                m = re.search(rb"([A-Za-z_]\w*)\s*$", text[max(0, i - 200):i])
                close = _matching(text, i)
                return (m.group(1).decode(), i, close) if m and close is not None else None
            depth -= 1
        elif c == ord(";") and depth == 0:
            return None
        i -= 1
    return None


def _matching(text: bytes, open_at: int) -> int | None:
    depth = 0
    for i in range(open_at, min(len(text), open_at + 20000)):
        c = text[i]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
            if depth == 0:
                return i
    return None


def _args(text: bytes, open_at: int, close: int) -> list[str]:
    """The call's arguments, split at the commas outside brackets, as text."""
    out, depth, start = [], 0, open_at + 1
    for i in range(open_at + 1, close):
        c = text[i]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif c == ord(",") and depth == 0:
            out.append(text[start:i].decode("utf-8", "replace").strip())
            start = i + 1
    out.append(text[start:close].decode("utf-8", "replace").strip())
    return out


def enclosing_function(text: bytes, at: int) -> str:
    """The name of the function whose body holds `at`: the outermost `{` around it whose head is a function's
    (`Type Class::name(params) const {`), past namespaces, classes and `extern "C"` blocks; or ``."""
    stack: list[int] = []
    for i in range(at):
        c = text[i]
        if c == ord("{"):
            stack.append(i)
        elif c == ord("}") and stack:
            stack.pop()
    for opened in stack:
        m = _FUNCTION_HEAD.search(text[max(0, opened - 400):opened])
        if m and m.group(1) not in _CONTROL:
            return m.group(1).decode()
    return ""


def _handle_words(text: bytes, lit: bytes, at: int) -> set[str] | None:
    """The words of the lookup call around the literal at `at` that no other call of the same function holds (the
    handle it fills), or None where the literal is no call argument."""
    call = call_around(text, at)
    if call is None:
        return None
    callee, open_at, close = call
    own = {w for a in _args(text, open_at, close) if a.encode() != lit for w in _WORD.findall(a)}
    # `CUfunction clear_fn = loader.get("clear_voxels");`: the variable assigned is the handle too
    head = text[max(0, open_at - 300):open_at]
    head = head[max((head.rfind(c) for c in b";{}"), default=-1) + 1:]
    if target := _ASSIGNED.search(head):
        own.add(target.group(1).decode())
    for m in re.finditer(rb"\b" + re.escape(callee.encode()) + rb"\s*\(", text):
        if m.end() - 1 == open_at:
            continue
        end = _matching(text, m.end() - 1)
        if end is not None:
            own -= {w for a in _args(text, m.end() - 1, end) for w in _WORD.findall(a)}
    return own - {callee}


def launches(name: str, loads: list[tuple[str, int]], files: dict[str, bytes]) -> list[Launch]:
    """The driver-API launches of kernel `name`, which the files name only as the string literal at `loads`
    ((path, line) pairs, Mentions.loaded_by_name); `files`: path -> raw text of every file read."""
    lit = b'"' + name.encode() + b'"'
    words: set[str] = set()
    for path, line in loads:
        text = _COMMENT.sub(_blank, files.get(path, b""))
        start = 0
        for _ in range(line - 1):
            start = text.find(b"\n", start) + 1
        at = text.find(lit, start)
        found = _handle_words(text, lit, at) if at >= 0 else None
        if found:
            words |= found
    if not words:
        return []
    out: list[Launch] = []
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(words))) + r")\b")
    for path, raw in files.items():
        if _LAUNCH.search(raw) is None:
            continue
        text = _COMMENT.sub(_blank, raw)
        for m in _LAUNCH.finditer(text):
            close = _matching(text, m.end() - 1)
            if close is None:
                continue
            args = _args(text, m.end() - 1, close)
            if len(args) < 9 or not pattern.search(args[0]):
                continue
            out.append(_launch(name, path, text, m, args))
    return out


def _launch(name: str, path: str, text: bytes, m: re.Match[bytes], args: list[str]) -> Launch:
    def dims(xyz: list[str]) -> str:
        # `dim3(n, 1, 1)` is n, as a one-dimensional `<<<n, ...>>>` writes it
        return xyz[0] if xyz[1:] == ["1", "1"] else f"dim3({', '.join(xyz)})"

    config = {"grid": dims(args[1:4]), "block": dims(args[4:7]), "shared_mem": args[7], "stream": args[8]}
    values = {key: int(v.rstrip("uUlL")) for key, v in config.items() if key != "stream" and
              re.fullmatch(r"\d+[uUlL]*", v)}
    return Launch(kernel=None, launcher=enclosing_function(text, m.start()), path=path,
                  line=text.count(b"\n", 0, m.start()) + 1, kind=m.group(1).decode(), config=config, values=values)
