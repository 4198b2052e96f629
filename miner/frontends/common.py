"""Text rules shared by both frontends, so they describe a kernel the same way."""

from __future__ import annotations

import functools
import re

from miner import lazy_re
from miner.frontends.model import Attribute, Param, TemplateParam

_WS = lazy_re.compile(r"\s+")
_ATTR = lazy_re.compile(
    r"\b(__launch_bounds__|__maxnreg__|__cluster_dims__|__noinline__|__forceinline__|static|inline"
    r"|extern\s+\"C\"|__grid_constant__)\b"
)


def normalize_ws(text: str) -> str:
    return _WS.sub(" ", text).strip()


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def matching(text: str | bytes, at: int, open_: str | bytes, close: str | bytes, limit: int | None = None) -> int:
    """The offset of the `close` that closes the `open_` at `at` (str or bytes alike), or -1; `limit` bounds the
    scan (a bracket left open in a large file)."""
    depth = 0
    end = len(text) if limit is None else min(len(text), at + limit)
    for i in range(at, end):
        ch = text[i:i + 1]
        if ch == open_:
            depth += 1
        elif ch == close:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _balanced_call(text: str, start: int) -> str:
    """Return `name(args)` starting at `start`, following nested parentheses."""
    i = text.find("(", start)
    if i < 0:
        return text[start:].split()[0]
    j = matching(text, i, "(", ")")
    return text[start : j + 1] if j >= 0 else text[start:]


def attributes_from_prefix(prefix: str) -> list[Attribute]:
    """Attributes written before the kernel's name (`__launch_bounds__(256)`, `static`...)."""
    prefix = strip_comments(prefix)
    out: list[Attribute] = []
    for m in _ATTR.finditer(prefix):
        word = m.group(1)
        if word in ("__launch_bounds__", "__maxnreg__", "__cluster_dims__"):
            out.append(Attribute(name=word, text=normalize_ws(_balanced_call(prefix, m.start()))))
        else:
            out.append(Attribute(name=normalize_ws(word), text=normalize_ws(word)))
    return out


def _strip_default(text: str) -> tuple[str, str | None]:
    depth = 0
    for i, ch in enumerate(text):
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        elif ch == "=" and depth == 0 and text[i + 1 : i + 2] != "=" and text[i - 1 : i] not in "<>!=":
            return text[:i].strip(), normalize_ws(text[i + 1 :])
    return text.strip(), None


@functools.lru_cache(maxsize=4096)
def name_pattern(name: str) -> re.Pattern[str]:
    """`name` as a whole word (`\\bname\\b`), compiled once per name: a kernel's parameter names repeat across a
    tree, and more distinct patterns than `re`'s own cache holds were compiled again and again."""
    return re.compile(rf"\b{re.escape(name)}\b")


def _remove_name(decl: str, name: str) -> str:
    if not name:
        return normalize_ws(decl)
    matches = list(name_pattern(name).finditer(decl))
    if not matches:
        return normalize_ws(decl)
    m = matches[-1]
    return normalize_ws(decl[: m.start()] + decl[m.end() :])


def make_param(text: str, name: str) -> Param:
    """A kernel parameter from its source text (`const T* __restrict__ x`) and name."""
    decl, _default = _strip_default(strip_comments(text))
    type_text = _remove_name(decl, name)
    pointer = "*" in type_text or "[" in type_text
    if pointer:
        pointee = type_text[: type_text.rfind("*")] if "*" in type_text else type_text
        const = bool(re.search(r"\bconst\b", pointee))
    else:
        const = bool(re.search(r"\bconst\b", type_text))
    restrict = bool(re.search(r"__restrict__|__restrict\b|\brestrict\b", type_text))
    return Param(name=name, type=type_text, pointer=pointer, const=const, restrict=restrict)


def make_template_param(text: str, name: str, kind: str) -> TemplateParam:
    decl, default = _strip_default(strip_comments(text))
    if kind == "value":
        type_text: str | None = _remove_name(decl, name)
    elif kind == "template":
        type_text = normalize_ws(decl[: decl.rfind(name)] if name else decl)
    else:
        type_text = None
    return TemplateParam(kind=kind, name=name, type=type_text, default=default)


def signature_text(definition: str) -> str:
    """The definition up to its body, whitespace-normalised, comments dropped."""
    depth = 0
    cut = len(definition)
    for i, ch in enumerate(definition):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "{" and depth == 0:
            cut = i
            break
    return normalize_ws(strip_comments(definition[:cut]))


def line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def split_top(text: str, angle: bool = True) -> list[str]:
    """Split on top-level commas. Template-argument lists nest in `<>` too; macro arguments do not
    (`angle=False`), and there an empty last argument (`F(a,)`) is kept."""
    opening, closing = ("([{<", ")]}>") if angle else ("([{", ")]}")
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in opening:
            depth += 1
        elif ch in closing:
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip() or (out and not angle):
        out.append(cur.strip())
    return out


_SIZEOF_PACK = lazy_re.compile(r"\bsizeof\s*\.\.\.\s*\(\s*([A-Za-z_]\w*)\s*\)")


def sizeof_packs(text: str, mapping: dict[str, str]) -> str:
    """`sizeof...(Ts)` with the pack `Ts` given `float *, float *` written as its size, `2`: the pack's elements put
    in its place (`sizeof...(float *, float *)`) are no C++ ("the sizeof... operator can be used only in a variadic
    template")."""
    if "sizeof" not in text:
        return text
    return _SIZEOF_PACK.sub(lambda m: str(len(split_top(mapping[m.group(1)])) if mapping[m.group(1)].strip() else 0)
                            if m.group(1) in mapping else m.group(0), text)


def substitute(text: str, mapping: dict[str, str]) -> str:
    """Each whole identifier `name` of `mapping` replaced by its value. An unnamed template parameter
    (`std::enable_if_t<C, int> = 0`, its name "") replaces nothing: as a pattern it matched at every word
    boundary (`0const0 0float0 *`). One pass: a value that holds another parameter's name as a word stays as it
    is (`DstPlan` -> `expr::Plan<Tensor<gpu, 2>, float>` beside a parameter `Plan`: replaced in turn, the `Plan` of
    the first value became the second's, `expr::expr::Plan<...><Tensor<gpu, 2>, float>`)."""
    mapping = {k: v for k, v in mapping.items() if k}
    if not mapping:
        return text
    pat = re.compile(r"(\btypename\s+)?\b(" + "|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True))
                     + r")\b")

    def put(m: re.Match[str]) -> str:
        value = mapping[m.group(2)]
        # (a value that is itself `typename X<...>::Kernel` where the text says `typename AK::Params`: one
        # `typename`, `typename typename` is no C++: lc0's backward attention launcher)
        return value if value.startswith("typename ") and m.group(1) else (m.group(1) or "") + value
    return pat.sub(put, text)


_COND = lazy_re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b", re.M)


def conditional_start(data: bytes, start: int, end: int) -> int:
    """Where a declaration's text must start so that its preprocessor conditionals balance. A declaration whose
    leading part sits in a branch (`#if __CUDA_ARCH__ == 750` / `__launch_bounds__(1024, 1)` / `#else` /
    `__launch_bounds__(1024, 2)` / `#endif` / `__global__ void k(...)`) has an extent that starts in the branch
    the parse took, so its text held an `#endif` without its `#if`: it starts at that conditional's `#if`."""
    while True:
        depth = 0
        for m in _COND.finditer(data, start, end):
            kind = m.group(1)
            if kind in (b"if", b"ifdef", b"ifndef"):
                depth += 1
            elif kind == b"endif" and depth:
                depth -= 1
            elif depth == 0:
                break  # an #elif/#else/#endif of a conditional opened before the text
        else:
            return start
        depth = 0
        opener = None
        for m in reversed(list(_COND.finditer(data, 0, start))):
            kind = m.group(1)
            if kind == b"endif":
                depth += 1
            elif kind in (b"if", b"ifdef", b"ifndef"):
                if depth == 0:
                    opener = m.start()
                    break
                depth -= 1
        if opener is None:
            return start
        start = opener
