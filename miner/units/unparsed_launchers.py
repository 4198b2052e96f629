"""A launch the parse never saw because the function that holds it was not parsed as a function.

A header-only template library launches its kernels from host function templates whose parameters are types of
a library the parse does not read (cusp's `void multiply(cuda::execution_policy<DerivedPolicy>& exec, MatrixType&
A, ...)`, Thrust's execution policy from the toolkit, which the parse stands in for by a stub): libclang reads the
head as a variable of incomplete type ("variable has incomplete type 'void'", "no member named 'execution_policy'
in namespace ..."), the body is skipped, and the launch in it is no call in the AST. The kernel then has no launch
(`launch_missing: unresolved`) and its template arguments are guesses. Where the text of every such launch sits
in a function whose head the parse reported errors on, that is stated: the launch's line, the head's, the first
error there (`launch_missing` detail, `args_missing: launcher_unparsed`).
"""

from __future__ import annotations

import re
from typing import Any

from miner import lazy_re
from miner.frontends.common import matching

_NAMES_MISSING = lazy_re.compile(r"no member named|unknown type name|undeclared identifier|no template named|"
                            r"is not a class, namespace")
_LAUNCH_AFTER = lazy_re.compile(rb"^\s*(?:<[^;{}]*?>\s*)?<<<")
_SCOPE_OPENER = lazy_re.compile(
    rb"(?:\bnamespace\b[\w\s:]*|\bextern\s*\"C\+*\"\s*|\b(?:class|struct|union)\b[^;{}()]*)$")


def _line_start(text: bytes, line: int) -> int:
    pos = 0
    for _ in range(line - 1):
        nxt = text.find(b"\n", pos)
        if nxt < 0:
            return len(text)
        pos = nxt + 1
    return pos


def _enclosing_function(text: bytes, pos: int) -> tuple[int, int] | None:
    """(head start, body brace) of the outermost function body around `pos`: the first brace not opening a
    namespace, class or `extern "C"` whose matching brace lies after `pos`."""
    stack: list[int] = []
    for m in re.finditer(rb"[{}]", text[:pos]):
        if m.group(0) == b"{":
            stack.append(m.start())
        elif stack:
            stack.pop()
    for brace in stack:
        before = text[max(0, brace - 300):brace].rstrip()
        if _SCOPE_OPENER.search(before):
            continue
        if not re.search(rb"\)[\s\w&*:<>,\-]*$", before):
            continue  # not a function body (an initializer list, a lambda's capture is `]`...)
        end = matching(text, brace, b"{", b"}")
        if end < pos:
            continue
        # The head starts after what ends the declaration before it: a `;`, `}` or `{`.
        head = max(text.rfind(b";", 0, brace), text.rfind(b"}", 0, brace), text.rfind(b"{", 0, brace))
        return head + 1, brace
    return None


def unparsed_launcher(name: str, path: str, uses: list[tuple[str, int]], text: bytes,
                      error_lines: list[Any], rel: str) -> dict[str, str] | None:
    """{"launch", "head", "error"} where every launch (`name<<<`, `name<...> <<<`) among `uses` in the kernel's own
    file (`path`, whose comment-blanked text is `text`) sits in a function whose head the parse reported an error
    on (`error_lines`: [line, message] of the file's errors); None otherwise, or where no use is such a launch."""
    errors: dict[int, str] = {}
    for line, msg in error_lines or ():
        # (on a line with several, the one naming what the parse lacks: not "variable has incomplete type")
        had = errors.get(int(line))
        if had is None or (_NAMES_MISSING.search(str(msg)) and not _NAMES_MISSING.search(had)):
            errors[int(line)] = str(msg)
    found: dict[str, str] | None = None
    pat = re.compile(rb"(?<![\w.>])" + re.escape(name.encode()) + rb"(?!\w)")
    for upath, line in uses:
        if upath != path:
            continue
        at = _line_start(text, line)
        nl = text.find(b"\n", at)
        m = pat.search(text, at, nl if nl >= 0 else len(text))
        if m is None or not _LAUNCH_AFTER.match(text[m.end():m.end() + 2000]):
            continue
        fn = _enclosing_function(text, m.start())
        if fn is None:
            return None
        first = text.count(b"\n", 0, fn[0]) + 1
        last = text.count(b"\n", 0, fn[1]) + 1
        hit = next((ln for ln in range(first, last + 1) if ln in errors), None)
        if hit is None:
            return None  # a launch in a function the parse read: a miss of the miner, not of the parse
        if found is None:
            found = {"launch": f"{rel}:{line}", "head": f"{rel}:{hit}", "error": errors[hit]}
    return found


def enclosing_function(text: bytes, line: int) -> tuple[str, int, int] | None:
    """(name, head start, body end) of the outermost function template whose body holds `line` of the
    comment-blanked `text`, else None (also for a plain function: compiled whether named or not)."""
    at = _line_start(text, line)
    fn = _enclosing_function(text, at)
    if fn is None:
        return None
    head = text[fn[0]:fn[1]]
    lead = re.match(rb"\s*template\s*<", head)
    if lead is None:
        return None
    close = matching(head, lead.end() - 1, b"<", b">")
    head = head[close + 1:] if close >= 0 else head
    m = re.search(rb"([A-Za-z_]\w*)\s*\(", head)
    end = matching(text, fn[1], b"{", b"}")
    return (m.group(1).decode(), fn[0], end + 1) if m is not None and end >= 0 else None


# `callee(name, ...)` / `obj.member.callee(cfg, name)`: the kernel passed as an argument of a call.
_CALLEE = lazy_re.compile(rb"((?:[A-Za-z_]\w*\s*(?:::|\.|->)\s*)*[A-Za-z_]\w*)\s*(?:<[^;{}()]*>)?\s*\($")


def unparsed_call(name: str, path: str, uses: list[tuple[str, int]], text: bytes, errors: int,
                  rel: str) -> dict[str, str] | None:
    """{"call", "callee"} where every use of `name` in the kernel's own file (`path`, comment-blanked `text`) is an
    argument of a call (`stream.enqueue.kernel_launch(k, config, args...)`) and the translation unit had parse
    errors (`errors`): a launch through a library call the parse could not type (a declaration it lost makes the
    call a recovery expression, with no callee and no error of its own), so nothing reads its configuration.
    None where a use is anything else, or the parse had no error."""
    if errors <= 0:
        return None
    found: dict[str, str] | None = None
    pat = re.compile(rb"(?<![\w.>])" + re.escape(name.encode()) + rb"(?!\w)\s*(?:<[^;{}()]*>)?\s*[,)]")
    own = [u for u in uses if u[0] == path]
    if not own or len(own) != len(uses):
        return None
    for _upath, line in own:
        at = _line_start(text, line)
        nl = text.find(b"\n", at)
        m = pat.search(text, at, nl if nl >= 0 else len(text))
        if m is None:
            return None
        # The argument list it sits in: back to the unmatched `(`.
        depth, i = 0, m.start() - 1
        while i >= 0:
            ch = text[i:i + 1]
            if ch in b")]":
                depth += 1
            elif ch in b"([":
                if depth == 0:
                    break
                depth -= 1
            elif ch in b";{}" and depth == 0:
                return None
            i -= 1
        if i < 0 or text[i:i + 1] != b"(":
            return None
        c = _CALLEE.search(text[max(0, i - 300):i + 1])
        if c is None or c.group(1).split(b"::")[-1].strip() in (b"if", b"while", b"for", b"switch", b"return"):
            return None
        if found is None:
            found = {"call": f"{rel}:{line}", "callee": c.group(1).decode("utf-8", "replace")}
    return found
