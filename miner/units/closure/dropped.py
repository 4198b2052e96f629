"""Declarations the parse dropped: namespace-scope aliases and functions whose text names a library the parse
does not read (`using pair_f = cub::KeyValuePair<float, float>;` against the CCCL stand-in, a function template
returning `typename cub::Traits<T>::UnsignedBits`). clang leaves no cursor for them, so nothing that names them
can reach them through the AST; the unit, which includes the real library, compiles their text as written.

Found from the text of the translation unit's project files: each namespace-scope statement that no piece
covers and that holds a parse error is one of these, indexed by its name and namespaces like the pieces."""

from __future__ import annotations

import re

from miner import lazy_re
from miner.frontends.common import matching
from miner.units.closure.context import _STRING_OR_COMMENT, Piece, TUContext
from miner.units.closure.unvisited import candidate_scopes

# A possibly qualified name (`::a::b::c`, `a :: b`).
_CHAIN = lazy_re.compile(r"(::\s*)?([A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)")

# A preprocessor line with its continuations: blanked, so `#if` branches and `#define` bodies are no statements.
_DIRECTIVE = lazy_re.compile(r"^[ \t]*#(?:[^\n\\]|\\\r?\n|\\.)*", re.M)
_NAMESPACE_HEAD = lazy_re.compile(r"^(?:inline\s+)?namespace\b\s*([\w:\s]*)$")
_LINKAGE_HEAD = lazy_re.compile(r"^extern\s*$")  # `extern "C" {` with its string blanked
_TEMPLATE_HEAD = lazy_re.compile(r"^template\s*<")
_ALIAS = lazy_re.compile(r"^using\s+([A-Za-z_]\w*)\s*(?:\[\[[^\]]*\]\]\s*)?=")
_TYPEDEF_NAME = lazy_re.compile(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*;$")
_FUNCTION_NAME = lazy_re.compile(r"(?<![\w:~])(operator\s*(?:\(\s*\)|[^\s\w(]+)|[A-Za-z_]\w*)\s*$")
_CLASS_HEAD = lazy_re.compile(r"^(?:typedef\s+)?(?:struct|class|union|enum)\b")


def dropped_pieces(ctx: TUContext) -> dict[tuple[tuple[str, ...], str], list[Piece]]:
    """(namespaces, name) -> the dropped declarations of that name (overloads in file order), built once per TU."""
    return ctx.memo("_dropped_pieces", lambda: _index(ctx))


def _index(ctx: TUContext) -> dict[tuple[tuple[str, ...], str], list[Piece]]:
    errors: dict[str, list[int]] = {}
    for d in ctx.tu.diagnostics:
        if d.severity >= 3 and d.location.file is not None:  # ci.Diagnostic.Error
            errors.setdefault(ctx.norm(d.location.file.name), []).append(d.location.offset)
    out: dict[tuple[tuple[str, ...], str], list[Piece]] = {}
    for path in ctx.order:
        offsets = errors.get(path)
        if path not in ctx.inputs or not offsets:
            continue
        covered = [(s, e) for s, e, _p, _c in ctx.pieces.get(path, [])]
        for start, end, namespaces, kind, name in _statements(ctx.read(path).decode("latin-1")):
            if not any(start <= o < end for o in offsets) or any(s < end and start < e for s, e in covered):
                continue
            out.setdefault((namespaces, name), []).append(Piece(path, start, end, namespaces, kind, name))
    return out


def _blank(text: str) -> str:
    """Comments, strings and preprocessor lines as spaces of the same length (offsets stay the file's)."""
    keep_lines = lambda m: re.sub(r"[^\n]", " ", m.group())  # noqa: E731 - two one-line uses
    return _DIRECTIVE.sub(keep_lines, _STRING_OR_COMMENT.sub(keep_lines, text))


def _statements(raw: str) -> list[tuple[int, int, tuple[str, ...], str, str]]:
    """(start, end, namespaces, kind, name) of the alias, typedef and function declarations at namespace scope."""
    text = _blank(raw)
    out: list[tuple[int, int, tuple[str, ...], str, str]] = []
    scopes: list[tuple[str, ...]] = []  # per open `{` of a namespace or linkage block: the names it adds
    ns: tuple[str, ...] = ()
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            break
        if text[i] == "}":  # a namespace or linkage block closes
            ns = ns[:len(ns) - len(scopes.pop())] if scopes else ns
            i += 1
            continue
        if text[i] == ";":
            i += 1
            continue
        start, j, depth = i, i, 0
        body_end = None
        while j < n:
            ch = text[j]
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            elif ch == ";" and depth <= 0:
                break
            elif ch == "{" and depth <= 0:
                head = " ".join(text[start:j].split())
                if (m := _NAMESPACE_HEAD.match(head)) is not None or _LINKAGE_HEAD.match(head):
                    names = tuple(x for x in re.split(r"\s*::\s*", m.group(1).strip()) if x) if m else ()
                    if m is not None and not names:
                        names = ("",)  # unnamed namespace, as the pieces spell it
                    scopes.append(names)
                    ns = ns + names
                    body_end = -1
                    break
                close = _matching(text, j)
                if "(" in head and not _CLASS_HEAD.match(head) and not head.startswith(("using", "typedef")) \
                        and not head.endswith("="):
                    body_end = close  # a function body ends the statement
                    break
                j = close  # a class body or braced initializer: the statement goes on to its `;`
            j += 1
        if body_end == -1:
            i = j + 1
            continue
        end = (body_end + 1) if body_end is not None else min(j + 1, n)
        found = _kind_and_name(text[start:end])
        if found is not None:
            out.append((start, end, ns, *found))
        i = end
    return out


def _matching(text: str, at: int) -> int:
    """The offset of the `}` closing the `{` at `at` (the end of the text when unbalanced)."""
    k = matching(text, at, "{", "}")
    return k if k >= 0 else len(text) - 1


def _kind_and_name(stmt: str) -> tuple[str, str] | None:
    """The declaration kind (as libclang spells it) and name of one statement, or None for anything else."""
    s = " ".join(stmt.split())
    templated = bool(_TEMPLATE_HEAD.match(s))
    if templated:
        s = _after_template_heads(s)
    if (m := _ALIAS.match(s)) is not None:
        return ("TYPE_ALIAS_TEMPLATE_DECL" if templated else "TYPE_ALIAS_DECL"), m.group(1)
    if s.startswith("typedef") and not templated and "(" not in s and "{" not in s:
        m = _TYPEDEF_NAME.search(s)
        return ("TYPEDEF_DECL", m.group(1)) if m else None
    if _CLASS_HEAD.match(s) or s.startswith(("using", "typedef", "static_assert", "extern template")):
        return None
    paren = _top_paren(s)
    if paren is None or not s.rstrip().endswith("}"):
        return None  # only definitions: a declaration alone gives the unit nothing to compile
    m = _FUNCTION_NAME.search(s[:paren])
    if m is None or m.group(1) in ("if", "for", "while", "switch", "return", "sizeof", "decltype"):
        return None
    return ("FUNCTION_TEMPLATE" if templated else "FUNCTION_DECL"), re.sub(r"\s+", "", m.group(1))


def _after_template_heads(s: str) -> str:
    """`s` without its leading `template <...>` lists."""
    while _TEMPLATE_HEAD.match(s):
        depth, k = 0, s.index("<")
        for k in range(s.index("<"), len(s)):
            if s[k] == "<":
                depth += 1
            elif s[k] == ">":
                depth -= 1
                if depth == 0:
                    break
        s = s[k + 1:].lstrip()
    return s


def _top_paren(s: str) -> int | None:
    """The first `(` outside template argument lists: where a function declarator's parameters begin."""
    angle = 0
    for k, ch in enumerate(s):
        if ch == "<" and not s[max(0, k - 8):k].rstrip().endswith("operator"):
            angle += 1
        elif ch == ">" and angle > 0 and s[k - 1] != "-":
            angle -= 1
        elif ch == "(" and angle == 0:
            return k
        elif ch in "{;":
            return None
    return None


def names_in(text: str) -> list[tuple[tuple[str, ...], str, bool]]:
    """(qualifiers, name, global) of each name written in `text` (comments and strings blanked): `compat::maxOp`
    finds a dropped function of namespace `compat` from any scope. A name after `.`, `->` or `X<T>::` is a member."""
    out: list[tuple[tuple[str, ...], str, bool]] = []
    for m in _CHAIN.finditer(text):
        before = text[max(0, m.start() - 2):m.start()].rstrip()
        if before.endswith((".", "->")) or (m.group(1) and before.endswith((">", ")"))):
            continue
        parts = tuple(p.strip() for p in m.group(2).split("::"))
        out.append((parts[:-1], parts[-1], bool(m.group(1))))
    return list(dict.fromkeys(out))


def visible(dropped: dict[tuple[tuple[str, ...], str], list[Piece]], scope: tuple[str, ...], quals: tuple[str, ...],
            name: str, is_global: bool) -> list[Piece]:
    """The dropped declarations a (qualified) name written in `scope` finds: those of the innermost candidate
    namespace that has one."""
    for s in candidate_scopes(scope, quals, is_global):
        if found := dropped.get((s, name)):
            return found
    return []
