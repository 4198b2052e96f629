"""Macros a unit needs that no text names: names a macro builds by token pasting.

A library that picks its backend by a macro writes its annotations as pastes
(`#define LIB_HOST_DEVICE LIB_CAT3(LIB_, LIB_BACKEND_NS, _HOST_DEVICE)`, with `#define LIB_CAT2(A, B) A##B`
behind a forwarding `LIB_CAT2`, and `LIB_BACKEND_NS` set by the build to `CUDA`): the name the code ends up
using, `LIB_CUDA_HOST_DEVICE`, is a macro of the backend's header that appears in no kept text, so the unit
lacked its `#define` ("identifier LIB_CUDA_HOST_DEVICE is undefined"). The macros a unit keeps are expanded
here the way the preprocessor does (arguments expanded before substitution except beside `#` / `##`, pastes,
rescanning with the macro's own name off), over the definitions in force in the translation unit and the
command line's (`-D`), and every macro named along the way is needed as well. Not a C preprocessor: bounded
depth and size, a function-like macro's arguments only from its own replacement.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from miner import lazy_re

_TOKEN = lazy_re.compile(r'[A-Za-z_]\w*|\d[\w.]*|"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|##|#|\s+|.', re.S)
_IDENT = lazy_re.compile(r"[A-Za-z_]\w*")
_MAX_DEPTH = 24
_MAX_TEXT = 20_000

# name -> (parameters or None for an object-like macro, replacement text), or None: no macro of that name
Lookup = Callable[[str], tuple[tuple[str, ...] | None, str] | None]


def split_definition(body: str) -> tuple[tuple[str, ...] | None, str]:
    """What follows a `#define NAME`: `(A, B) A##B` is function-like (the `(` right after the name)."""
    body = re.sub(r"\\\r?\n", " ", body)
    if body.startswith("("):
        end = body.find(")")
        if end > 0:
            return tuple(p.strip() for p in body[1:end].split(",") if p.strip()), body[end + 1:].strip()
    return None, body.strip()


def _args(toks: list[str], i: int) -> tuple[list[str], int] | None:
    """The arguments of a call whose `(` is toks[i], and the index after its `)`."""
    depth, cur, out = 0, [], []
    for j in range(i, len(toks)):
        t = toks[j]
        if t == "(":
            depth += 1
            if depth == 1:
                continue
        elif t == ")":
            depth -= 1
            if depth == 0:
                out.append("".join(cur).strip())
                return out, j + 1
        elif t == "," and depth == 1:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(t)
    return None


def _substitute(params: tuple[str, ...], args: list[str], body: str, expand: Callable[[str], str]) -> str:
    mapping = dict(zip(params, args, strict=False))
    if params and params[-1] == "...":
        mapping["__VA_ARGS__"] = ", ".join(args[len(params) - 1:])
    toks = _TOKEN.findall(body)
    out: list[str] = []
    for i, t in enumerate(toks):
        if t not in mapping:
            out.append(t)
            continue
        prev = next((x for x in reversed(toks[:i]) if not x.isspace()), "")
        nxt = next((x for x in toks[i + 1:] if not x.isspace()), "")
        if prev == "#":
            while out and (out[-1].isspace() or out[-1] == "#"):
                done = out.pop() == "#"
                if done:
                    break
            out.append('"' + mapping[t] + '"')
        elif prev == "##" or nxt == "##":
            out.append(mapping[t])
        else:
            out.append(expand(mapping[t]))
    return "".join(out)


def _paste(text: str) -> str:
    return re.sub(r"\s*##\s*", "", text)


def expansion_names(text: str, lookup: Lookup) -> set[str]:
    """The macro names the full expansion of `text` goes through (those of `text` itself included)."""
    seen: set[str] = set()
    size = [0]

    def expand(s: str, hidden: frozenset[str], depth: int) -> str:
        size[0] += len(s)
        if depth > _MAX_DEPTH or size[0] > _MAX_TEXT:
            return s
        toks = _TOKEN.findall(s)
        out: list[str] = []
        i = 0
        while i < len(toks):
            t = toks[i]
            found = lookup(t) if _IDENT.fullmatch(t) and t not in hidden else None
            if found is None:
                out.append(t)
                i += 1
                continue
            params, body = found
            if params is None:
                seen.add(t)
                out.append(" " + expand(_paste(body), hidden | {t}, depth + 1) + " ")
                i += 1
                continue
            j = i + 1
            while j < len(toks) and toks[j].isspace():
                j += 1
            call = _args(toks, j) if j < len(toks) and toks[j] == "(" else None
            if call is None:
                out.append(t)
                i += 1
                continue
            seen.add(t)
            args, end = call
            replaced = _paste(_substitute(params, args, body, lambda a: expand(a, hidden, depth + 1)))
            out.append(" " + expand(replaced, hidden | {t}, depth + 1) + " ")
            i = end
        return "".join(out)

    expand(text, frozenset(), 0)
    return seen


def pasted_with_words(params: tuple[str, ...] | None, body: str, words: set[str],
                      macros: Iterable[str] = ()) -> set[str]:
    """The names a function-like macro pastes from a fixed part and a parameter (`PREFIX_##KIND`, `KIND##_SUFFIX`)
    when the parameter is one of `words` (the identifiers of the text that invokes it). A number is no identifier:
    `BytePack<RegSize_for_size_##PackSize>` invoked with `4` pastes `RegSize_for_size_4`, so the `macros` (names)
    that are the fixed prefix and a number come too."""
    if not params or "##" not in body:
        return set()
    out: set[str] = set()
    for a, b in re.findall(r"(\w+)\s*##\s*(\w+)", body):
        if b in params and a not in params:
            out |= {a + w for w in words}
            out |= {n for n in macros if n.startswith(a) and n[len(a):].isdigit()}
        elif a in params and b not in params:
            out |= {w + b for w in words}
    return out
