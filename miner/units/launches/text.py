"""Source text: tokens joined back, template argument lists as written, function-like macros expanded."""

from __future__ import annotations

import re

import clang.cindex as ci

from miner.frontends.common import sizeof_packs, split_top
from miner.units.closure import TUContext
from miner.units.launches.record import _COMMENT, _IDENT, _MACRO_LAUNCHES


def _join_tokens(tokens: list[str]) -> str:
    out = ""
    for t in tokens:
        if out and (out[-1].isalnum() or out[-1] == "_") and (t[0].isalnum() or t[0] == "_"):
            out += " "
        elif t == "," or (out.endswith(",")):
            out += "" if t == "," else " "
        out += t
    return out


def _src(ctx: TUContext, c: ci.Cursor) -> str:
    """Source text of an expression; inside a macro argument (AT_DISPATCH lambdas) from tokens."""
    e = c.extent
    if (e.start.file is None or e.end.file is None or e.start.file.name != e.end.file.name
            or e.end.offset <= e.start.offset):
        return _join_tokens([t.spelling for t in c.get_tokens()])
    data = ctx.read(ctx.norm(e.start.file.name))
    return data[e.start.offset:e.end.offset].decode("utf-8", "replace")


def _angle_args(text: str, start: int) -> tuple[list[str], int] | None:
    """Top-level arguments of the `<...>` opening at `start`, and the offset after its `>`. Inside
    parentheses `<` and `>` compare (`!!(W > 8)`); outside they nest template argument lists. A run of `>`
    closes as many nested lists as are open (`k<T, op<T>>`, C++11), but inside one list alone `>>` shifts."""
    angle, paren = 0, 0
    args, cur = [], ""
    i = start
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            paren += 1
        elif ch in ")]}":
            paren -= 1
        elif paren == 0 and ch == "<" and text[i + 1:i + 2] != "<" and text[i - 1:i] != "<":
            angle += 1
            if angle == 1:
                i += 1
                continue
        elif paren == 0 and angle >= 1 and ch == ">" and text[i - 1:i] not in (">", "-") and text[i + 1:i + 2] != "=":
            run = len(text[i:]) - len(text[i:].lstrip(">"))
            if run == 1 or angle >= 2:
                closes = min(run, angle)
                angle -= closes
                if angle == 0:
                    cur += ">" * (closes - 1)
                    args.append(cur.strip())
                    return [a for a in args if a] if any(args) else [], i + closes
                cur += ">" * closes
                i += closes
                continue
        if ch == "," and angle == 1 and paren == 0:
            args.append(cur.strip())
            cur = ""
        elif angle >= 1:
            cur += ch
        i += 1
    return None


def _named_args(text: str, name: str, unique: bool = True) -> list[list[str]]:
    """Argument lists of every `name<...>` in `text` (a kernel named with template arguments); with `unique`
    False, one per occurrence, in text order."""
    out = []
    text = _COMMENT.sub(" ", text)
    for m in re.finditer(rf"(?<![\w.]){re.escape(name)}\s*<(?!<)", text):
        got = _angle_args(text, m.end() - 1)
        if got and (not unique or got[0] not in out):
            out.append(got[0])
    return out


def substitute(text: str, mapping: dict[str, str]) -> str:
    """Replace whole identifiers in one pass (a value that names another parameter stays as it is); an unnamed
    parameter (its name "") replaces nothing. A pack's `sizeof...` becomes its size (`sizeof_packs`)."""
    mapping = {k: v for k, v in mapping.items() if k}
    if not mapping:
        return text
    text = sizeof_packs(text, mapping)
    pat = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True)) + r")\b")
    return pat.sub(lambda m: mapping[m.group(1)], text)


def substitute_aliases(text: str, alias: dict[str, str]) -> str:
    """`substitute` for the aliases a reference names (`_aliases`: each name's resolved type): a qualified name
    whose last part is one (`default_types::index_type`, a member typedef of an alias) is replaced whole, its
    qualifiers with it, so the qualifier's own alias does not leave `ns::wrapper<...>::unsigned int`."""
    if not alias:
        return text

    def one(m: re.Match[str]) -> str:
        parts = [p.strip() for p in m.group(0).split("::")]
        if len(parts) > 1 and alias.get(parts[-1]):
            return alias[parts[-1]]
        if len(parts) > 1 and alias.get(parts[0]):
            # A member type of a local typedef (`typename ID::Data` with `typedef multi_index<B> ID;`): the
            # qualifier is the alias's type.
            return "::".join([alias[parts[0]], *parts[1:]])
        return substitute(m.group(0), alias) if len(parts) == 1 else m.group(0)
    out = re.sub(r"(?<![\w:])(?:[A-Za-z_]\w*\s*::\s*)*[A-Za-z_]\w*", one, text)
    # (`typename` before a qualified name whose qualifier an alias made concrete stays valid C++ outside a template
    # too; it is dropped where the whole argument is that name, so the argument reads as the type it names)
    return re.sub(r"^\s*typename\s+(?=[\w:]+(?:<.*>)?::\w+\s*$)", "", out) if out != text else out


def _macro_params(body: str) -> tuple[list[str], str] | None:
    """A function-like macro's parameters and replacement text (its body starts with `(`)."""
    if not body.startswith("("):
        return None
    close = body.find(")")
    if close < 0:
        return None
    params = [p.strip() for p in re.sub(r"\\\r?\n", " ", body[1:close]).split(",") if p.strip()]  # a list over lines
    return params, body[close + 1:].replace("\\\n", " ")


def bind_params(params: list[str], args: list[str], strip: bool = False) -> dict[str, str]:
    """A function-like macro's parameters mapped to one invocation's arguments (`...` to `__VA_ARGS__`, a missing
    argument to ""). `strip`: each argument without its surrounding space."""
    mapping: dict[str, str] = {}
    for i, p in enumerate(params):
        if p == "...":
            mapping["__VA_ARGS__"] = ", ".join(args[i:])
            break
        arg = args[i] if i < len(args) else ""
        mapping[p] = arg.strip() if strip else arg
    return mapping


def _invocation(text: str) -> tuple[str, list[str]] | None:
    m = re.match(r"\s*([A-Za-z_]\w*)\s*\(", text)
    if not m:
        return None
    depth, start = 0, m.end() - 1
    for i in range(start, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return m.group(1), split_top(text[start + 1:i], angle=False)
    return None


def expand_macros(ctx: TUContext, text: str, depth: int = 4, at: tuple[str, int] | None = None,
                  objects: bool = False) -> str:
    """One source text with the repo's function-like macro invocations in it expanded (textually,
    `depth` levels): the kernel named inside `CASE(48, 1, ...)` gets the invocation's arguments. `at`
    (path, offset of the text) picks, of a macro defined more than once, the definition in force there.
    `objects`: object-like macros too (`DefineAll` standing for a chain of invocations that write a table)."""
    text = _COMMENT.sub(" ", text)
    for _ in range(depth):
        changed = False
        out, pos = "", 0
        for m in _IDENT.finditer(text):
            if m.start() < pos or (macro := ctx.def_at(m.group(0), at)) is None:
                continue
            mp = _macro_params(macro.body)
            if objects and (body := _object_body(macro.body)) is not None:
                out += text[pos:m.start()] + " " + _COMMENT.sub(" ", body) + " "
                pos = m.end()
                changed = True
                continue
            if mp is None:
                continue
            inv = _invocation(text[m.start():])
            if inv is None:
                continue
            params, body = mp
            mapping = bind_params(params, inv[1])
            end = m.start() + _invocation_length(text[m.start():])
            out += text[pos:m.start()] + " " + substitute(body.replace("##", ""), mapping) + " "
            pos = end
            changed = True
        text = out + text[pos:]
        if not changed:
            break
    return text


def _invocation_length(text: str) -> int:
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def object_macro_body(ctx: TUContext, text: str, at: tuple[str, int] | None = None) -> str:
    """`text` when it is not the name of an object-like macro, else the body it stands for, through up to four
    such names (`{ALL_ROWS nullptr}` with `#define ALL_ROWS ROWS(float)`; a launch written whole in a
    parameterless `#define CALL_SWEEP k<A, B><<<g, b>>>(...)`)."""
    for _ in range(4):
        word = _COMMENT.sub(" ", text).strip()
        macro = ctx.def_at(word, at) if _IDENT.fullmatch(word) else None
        if macro is None or (body := _object_body(macro.body)) is None:
            break
        text = body
    return text


def _object_body(body: str) -> str | None:
    """The replacement text of an object-like macro, on one line; None for a function-like or empty one. (Both
    expansions, of a whole text that is one name and of every name in a text, read it here.)"""
    if body.startswith("(") or not body.strip():
        return None
    return re.sub(r"\\\r?\n", " ", body)


def _macro_launch(ctx: TUContext, text: str, at: tuple[str, int] | None = None
                  ) -> tuple[list[str | None], list[str] | None, str]:
    """Configuration and arguments of a launch written through a macro (`hipLaunchKernelGGL(k, g, b,
    smem, stream, args...)`, a repo's `LAUNCH_1D(k, n, stream, ...)`, a parameterless `CALL_K`)."""
    text = object_macro_body(ctx, text, at)
    inv = _invocation(_COMMENT.sub(" ", text))
    if inv is None and "<<<" not in text:
        return [text], None, "<<<>>>"
    if inv is not None and inv[0] in _MACRO_LAUNCHES:
        name, args = inv
        return [*(a or None for a in args[1:5])], args[5:], name
    expanded = expand_macros(ctx, text, at=at)
    m = re.search(r"<<<(.*?)>>>\s*\(", expanded, re.S)
    if not m:
        return [text], None, "<<<>>>"
    inv2 = _invocation("f" + expanded[m.end() - 1:])
    return [p.strip() for p in split_top(m.group(1))], [a.strip() for a in inv2[1]] if inv2 else None, "<<<>>>"


def macro_argument_lists(ctx: TUContext, ref: ci.Cursor, name: str, written: list[str]) -> dict[str, list[str]]:
    """Where a launch is written in a helper macro whose parameter is one of the kernel's template arguments
    (`#define LAUNCH_UNROLL(COUNT) case COUNT: k<T, COUNT><<<...>>>(...);`, invoked as `LAUNCH_UNROLL(1)
    LAUNCH_UNROLL(2)`), the values of that parameter at the invocations the reference sits in: {"COUNT": ["1",
    "2"]}. The reference's text is the macro's body (the parameter's name leaked into the instantiation as
    `k<T, COUNT>`); its location is that of the outermost invocation (a dispatch macro around a lambda that
    holds a `switch` of such invocations), whose text is scanned for the helper's invocations."""
    loc = ref.location
    if loc.file is None or not written:
        return {}
    data = ctx.read(ctx.norm(loc.file.name))
    head = data[loc.offset:loc.offset + 200_000].decode("utf-8", "replace")
    m = re.match(r"([A-Za-z_]\w*)\s*\(", head)
    if m is None or m.group(1) == name or not ctx.active_defs(m.group(1)):
        return {}
    text = _COMMENT.sub(" ", head[:_invocation_length(head)])
    wanted = set(_IDENT.findall(" ".join(written)))
    out: dict[str, list[str]] = {}
    at = (ctx.norm(loc.file.name), loc.offset)
    for macro_name in dict.fromkeys(_IDENT.findall(text)):
        macro = ctx.def_at(macro_name, at)
        mp = _macro_params(macro.body) if macro is not None else None
        if mp is None or not re.search(rf"(?<![\w.]){re.escape(name)}\s*<", mp[1]):
            continue
        params = [(i, p) for i, p in enumerate(mp[0]) if p in wanted]
        for call in re.finditer(rf"(?<![\w.]){re.escape(macro_name)}\s*\(", text):
            inv = _invocation(text[call.start():])
            for i, p in params if inv is not None else ():
                if i < len(inv[1]) and inv[1][i].strip() and inv[1][i].strip() not in out.setdefault(p, []):
                    out[p].append(inv[1][i].strip())
    return {p: v for p, v in out.items() if v}
