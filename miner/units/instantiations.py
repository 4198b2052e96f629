"""Concrete template arguments per kernel: launches, dispatch, references, explicit instantiations, defaults.

Where each instantiation comes from (`origin`), strongest first:

- `explicit`: a `template __global__ void k<float, 64>(...);` line.
- `dispatch` / `call_site`: a launch whose arguments the AST resolved (inside an AT_DISPATCH lambda or not).
- `host_template`: a launch written in terms of an enclosing host function template's parameters, with
  one instantiation per known instantiation of that template, however many calls up it was fixed.
- `reference`: the kernel named with template arguments outside a launch (a `(void*)` table, a function
  pointer, `auto f = k<float, 256>;`); parameters of an enclosing host template take its instantiations,
  or the defaults below when none is known.
- `inferred`: nothing better: every template parameter takes its default. A launch inside a host
  template whose instantiations are unknown also lands here (its written literals kept).

Defaults: a type parameter becomes `float` (`int` when its name says it is an index), a `bool` value
`false`, a pointer (a function-pointer parameter) `nullptr`, a shift count (`1 << LOG2_N`) `5`, any other value
`128`; a parameter's own default argument wins. At most `MAX_INSTANTIATIONS` are kept per kernel, spread over
the distinct type combinations; `plan(..., omitted=[])` lists the rest.
"""

from __future__ import annotations

import ast
import functools
import itertools
import operator
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from miner import lazy_re
from miner.frontends.common import split_top, substitute  # noqa: F401 - re-exported for render
from miner.units import macro_text
from miner.units.records import Launch

# `template [attributes, macros such as GLOBAL, __launch_bounds__(256)] void [ns::]k<args>(`
# (the words before the name may be qualified, `template at::Tensor f<float>(...)`, and end in `*`/`&`)
_EXPLICIT = lazy_re.compile(
    r"\btemplate\s+(?:[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*(?:\s*\((?:[^;{()]|\([^;{()]*\))*\))?"
                       r"(?:\s*[*&]+\s*|\s+))*?(?:[\w:]+::)?(\w+)\s*<([^;{]*?)>\s*\(", re.S)
# A type parameter named like an index (`index_t`, `Idx`, `I`, `IntT`, `scalar_int_t`) defaults to int; a name
# merely holding the letters (`InT`, an input type) does not.
INDEX_LIKE = lazy_re.compile(r"(?i:index|idx)|^I$|int|INT|Int(?:eger|(?![a-z]))|Id(?![a-z])|(?<![A-Z])ID(?![A-Z])")
DEFAULT_TYPE = "float"  # a type parameter with no instantiation anywhere becomes float (marked inferred)
MAX_INSTANTIATIONS = 16  # units per kernel: a kernel chosen from a table of 100 variants keeps 16
ORIGINS = ("explicit", "dispatch", "call_site", "host_template", "reference", "inferred")


# `template void Layer<float>::Forward_gpu(...)`: an explicit instantiation of a class template's member.
# (a member template's own arguments may follow: `template void Map<int, pool>::insert<true>(...)`)
# (an argument may be a macro's invocation: `template void Layer<WIDTHS(float)>::Forward(...)`)
_EXPLICIT_MEMBER = lazy_re.compile(
    r"\btemplate\s+(?!<)[^;{}()]*?\b(\w+)\s*<((?:[^;{}()]|\([^;{}()]*\))*?)>\s*::\s*~?\w+\s*"
                              r"(?:<[^;{}()]*>\s*)?\(", re.S)


def explicit_in(text: str, macros: dict[str, macro_text.MacroDef] | None = None,
                members: bool = False) -> dict[str, list[list[str]]]:
    """`template __global__ void k<float, 64>(...)` lines, by kernel name, also those that the project's
    macros write (`INSTANTIATE(float)` with `#define INSTANTIATE(T) template GLOBAL void k<T>(T *);`)."""
    if macros:
        text = macro_text.expand(text, macros, writing_template(macros))
    if "//" in text or "/*" in text:  # a comment inside the line (`template R // why\n f<int>(...);`)
        text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)
    out: dict[str, list[list[str]]] = {}
    for m in _EXPLICIT_MEMBER.finditer(text) if members else ():  # by class name
        name, args = m.group(1), m.group(2)
        member = _member_of_class(args)
        if member is not None and member[2] is not None and member[3] is not None:
            name, args = member[2], member[3]  # the class after a templated return type
        elif member is not None:
            continue
        listed = _macro_lists(split_top(args), macros)
        if listed not in out.setdefault(name, []):
            out[name].append(listed)
    for m in _EXPLICIT.finditer(text):
        name, args = m.group(1), m.group(2)
        member = _member_of_class(args)
        if member is not None and member[0] is None and member[2] is not None and member[3] is not None:
            # `template std::vector<at::Tensor> f<int>(...)`: the match began at the return type's list
            name, args = member[2], member[3]
            member = None
        if member is not None and (member[0] is None or member[1] is None):
            continue
        if member is not None:
            # `Map<int, pool>::insert<true>`: the member template `insert<true>` (its class: above)
            name, args = member[0], member[1]
        out.setdefault(name, []).append(_macro_lists(split_top(args), macros))
    return out


_INVOCATION = lazy_re.compile(r"\s*([A-Za-z_]\w*)\s*(\(.*\))?\s*", re.S)


def _macro_lists(args: list[str], macros: dict[str, macro_text.MacroDef] | None) -> list[str]:
    """An argument list with each argument that is one invocation of a project macro expanding to a list
    spread (`f<WIDTHS(float)>` with `#define WIDTHS(t) t, t##2, t##4` is `f<float, float2, float4>`, matching
    the template head that `#define WIDTH_PARAMS(t) typename t, typename t##2, ...` wrote: as one argument it
    matched no parameter list). One expanding to a single argument stays as written: the unit keeps the macro,
    and its preprocessor picks the definition an `#if` chooses, which this textual expansion does not."""
    if not macros:
        return args
    out: list[str] = []
    for a in args:
        m = _INVOCATION.fullmatch(a)
        macro = macros.get(m.group(1)) if m else None
        if macro is None or (macro.params is None) != (m.group(2) is None):
            out.append(a)
            continue
        parts = [p.strip() for p in split_top(macro_text.expand(a, macros))]
        out += parts if len(parts) > 1 and all(parts) else [a]
    return out


def _member_of_class(args: str) -> tuple[str | None, str | None, str | None, str | None] | None:
    """What a lazy match read as one argument list, when it holds a member template of a class:
    `int, pool>::insert<true` -> (`insert`, `true`, None, None); `a<b>, c> Map<d, e::f>::insert<true` (after a
    return type `std::pair<a<b>, c>`) -> (`insert`, `true`, `Map`, `d, e::f`)."""
    depth = 0
    for i, ch in enumerate(args):
        depth += (ch == "<") - (ch == ">")
        if depth < 0:
            rest = args[i + 1:]
            m = re.match(r"\s*::\s*(\w+)\s*<(.*)$", rest, re.S)
            if m:
                return m.group(1), m.group(2), None, None
            c = re.match(r"\s*(?:[\w:]+::)?(\w+)\s*<", rest)
            if not c:
                return None
            d, j = 1, c.end()
            while j < len(rest) and d:
                d += (rest[j] == "<") - (rest[j] == ">")
                j += 1
            if d:  # `a<b>, c> Map<d, e::f` (the class's own list, where the match stopped): the class only
                return None, None, c.group(1), rest[c.end():]
            m = re.match(r"\s*::\s*(\w+)\s*<(.*)$", rest[j:], re.S)
            return (m.group(1), m.group(2), c.group(1), rest[c.end():j - 1]) if m else None
    return None


def writing_template(macros: dict[str, macro_text.MacroDef]) -> set[str]:
    """Macros whose expansion contains the keyword `template`, directly or through other macros."""
    names = {n for n, m in macros.items() if re.search(r"\btemplate\b", m.body)}
    while True:
        more = {n for n, m in macros.items() if n not in names and set(re.findall(r"[A-Za-z_]\w*", m.body)) & names}
        if not more:
            return names
        names |= more


_writing_template = writing_template  # the old name: branches written before it was public import it


# `typename base_type::index_type`: a member alias of an unqualified (class-scope) name, not `typename
# holder<float>::index_type`, which names a namespace-scope template and builds.
_UNRESOLVED_ARG = lazy_re.compile(r"<dependent type>|\btypename\s+(?!std::)[A-Za-z_]\w*::[A-Za-z_]\w*\s*$")


# A value parameter the kernel shifts by (`1 << LOG2_N`): 128 is no valid shift count (the constant it gives is
# 0 or undefined, and the kernel divides by it), a small power does.
_SHIFT_DEFAULT = "5"


def _default(tp: dict[str, Any], subscripts: frozenset[str] = frozenset(),
             pointers: frozenset[str] = frozenset()) -> str:
    if tp.get("default"):
        return tp["default"]
    if tp["kind"] == "value" and tp["name"] in subscripts:
        return _SHIFT_DEFAULT
    if tp["kind"] == "type" and tp["name"] in pointers:
        return DEFAULT_TYPE + " *"  # an iterator the kernel dereferences (`*(first + i)`): a pointer is one
    if tp["kind"] == "type":
        # Index-like type parameters are used as integers (array subscripts, shifts).
        return "int" if INDEX_LIKE.search(tp["name"]) or tp["name"] in subscripts else DEFAULT_TYPE
    t = (tp.get("type") or "").strip()
    if t == "bool":
        return "false"
    # A pointer (`float (*OP)(float, const P &)`, `const int *TABLE`): 128 converts to no pointer, so the unit
    # could not name the kernel at all; a null pointer is a valid argument of every pointer parameter.
    if "*" in t:
        return "nullptr"
    # An enum parameter (`ReductionType REDUCE`) takes 0, a value every enumeration has.
    return "128" if not t or INTEGRAL_TYPE.fullmatch(t) else "0"


# ------------------------------------------------------------------------------- value arguments

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.Mod: operator.mod, ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitAnd: operator.and_,
        ast.BitOr: operator.or_, ast.BitXor: operator.xor}
_CMP = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Eq: operator.eq,
        ast.NotEq: operator.ne}


_INT_TYPE = (r"(?:(?:(?:unsigned|signed)\s+)?(?:int|long\s+long|long|short|char)|unsigned|signed"
             r"|(?:std::)?size_t|u?int(?:8|16|32|64)_t)")
_INT_CAST = lazy_re.compile(rf"\b{_INT_TYPE}\s*\(")
# A value parameter's type that takes a plain integer argument (anything else, an enum, needs a cast).
INTEGRAL_TYPE = lazy_re.compile(rf"(?:const\s+)?(?:{_INT_TYPE}|bool|auto|index_t|[A-Z])")
_C_CAST = lazy_re.compile(rf"\(\s*{_INT_TYPE}\s*\)")


def _omit(best: dict[Any, str], bad: list[Any], why: str, names: list[str],
          omitted: list[dict[str, Any]] | None) -> None:
    """Take `bad` out of `best` where other instantiations stay, listing each as not rendered (`why`)."""
    if not bad or len(bad) >= len(best):
        return
    for a in bad:
        if omitted is not None:
            omitted.append({"args": list(a), "template_args": dict(zip(names, a, strict=False)),
                            "origin": best[a], "why": why})
        del best[a]


@functools.lru_cache(maxsize=65536)
def eval_int(text: str) -> int | None:
    """Value of a C integer constant expression made of literals (`24 * 32`, `!!0`, `(48 == 48) ? 0 : 48`),
    or None when it names anything else. Cached: the launch walk asks the same few texts thousands of times
    (each an `ast.parse`)."""
    # Casts to an integer type change no value here: `int(Tile)` once Tile is 64, `(unsigned)N`.
    t = _INT_CAST.sub("(", _C_CAST.sub(" ", text.strip()))
    t = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", t)
    t = re.sub(r"\btrue\b", "1", re.sub(r"\bfalse\b", "0", t))
    if re.search(r"[A-Za-z_]", re.sub(r"\b0[xX][0-9a-fA-F]+\b", "", t)) or len(t) > 200:
        return None
    t = t.strip()
    while t.startswith("(") and _closing(t) == len(t) - 1:  # `(W >= 64 ? 2 : 4)`: the ?: splits inside
        t = t[1:-1].strip()
    m = re.fullmatch(r"(.*?)\?(.*):(.*)", t, re.S)
    if m and "?" not in m.group(1):
        c = eval_int(m.group(1))
        return None if c is None else eval_int(m.group(2) if c else m.group(3))
    t = t.replace("&&", " and ").replace("||", " or ").replace("/", "//")
    t = re.sub(r"!(?!=)", " not ", t).strip()
    try:
        return _ev(ast.parse(t, mode="eval").body)
    except (SyntaxError, ValueError, TypeError, ZeroDivisionError, RecursionError):
        return None


def _closing(t: str) -> int:
    """Index of the parenthesis that closes t[0], or -1."""
    depth = 0
    for i, ch in enumerate(t):
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            return i
    return -1


def _ev(n: ast.AST) -> int:
    if isinstance(n, ast.Constant) and isinstance(n.value, int) and not isinstance(n.value, bool):
        return n.value
    if isinstance(n, ast.BinOp) and type(n.op) in _BIN:
        a, b = _ev(n.left), _ev(n.right)
        if isinstance(n.op, ast.FloorDiv):  # C division truncates toward zero
            return int(a / b) if b else _raise()
        return _BIN[type(n.op)](a, b)
    if isinstance(n, ast.UnaryOp):
        v = _ev(n.operand)
        if isinstance(n.op, ast.USub):
            return -v
        if isinstance(n.op, ast.UAdd):
            return v
        if isinstance(n.op, ast.Invert):
            return ~v
        if isinstance(n.op, ast.Not):
            return int(not v)
    if isinstance(n, ast.BoolOp):
        vals = [_ev(v) for v in n.values]
        return int(all(vals)) if isinstance(n.op, ast.And) else int(any(vals))
    if isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in _CMP:
        return int(_CMP[type(n.ops[0])](_ev(n.left), _ev(n.comparators[0])))
    raise ValueError("not an integer constant expression")


def _raise() -> int:
    raise ZeroDivisionError


def pack_names(meta: dict[str, Any]) -> frozenset[str]:
    """The kernel's template parameter packs (`int... Ds`, recorded with the type `int...`; `class... Ts`, whose
    record says nothing, from the signature's `... Ts`)."""
    sig = meta.get("signature") or ""
    return frozenset(tp["name"] for tp in meta.get("template_params") or () if tp.get("name") and (
        (tp.get("type") or "").rstrip().endswith("...")
        or re.search(rf"\.\.\.\s*{re.escape(tp['name'])}\b", sig)))


def _normalize(args: list[str], tparams: list[dict[str, Any]],
               packs: frozenset[str] = frozenset()) -> tuple[str, ...] | None:
    """One argument per template parameter: missing trailing ones from their defaults, value arguments
    folded to literals (`W * 32` after substitution -> `768`, `!!0` for a bool -> `false`). A trailing pack
    takes the rest, joined by `, ` (`permute<0, 1, 3, 2>` of `template <int... Ds>`: `Ds` is `0, 1, 3, 2`)."""
    if tparams and tparams[-1]["name"] in packs and len(args) >= len(tparams):
        last = len(tparams) - 1
        args = [*args[:last], ", ".join(re.sub(r"\s+", " ", a).strip() for a in args[last:])]
    if len(args) > len(tparams):
        return None
    out: list[str] = []
    mapping: dict[str, str] = {}
    for i, tp in enumerate(tparams):
        if i < len(args):
            a = re.sub(r"\s+", " ", args[i]).strip()
        elif tp.get("default"):
            a = substitute(tp["default"], mapping)
        else:
            return None
        if tp["kind"] == "value" and tp["name"] in packs:
            a = ", ".join(str(v) if (v := eval_int(x)) is not None else x.strip() for x in split_top(a))
        elif tp["kind"] == "value":
            v = eval_int(a)
            if v is not None:
                a = ("true" if v else "false") if (tp.get("type") or "").strip() == "bool" else str(v)
        out.append(a)
        mapping[tp["name"]] = a
    return tuple(out)


# ------------------------------------------------------------------------------------------- plan


def _candidates(launches: list[Launch], explicit: list[list[str]],
                scalar_for_class: Callable[[list[str]], bool] = lambda _a: False
                ) -> list[tuple[list[str], str, str | None]]:
    """Each argument list found, its origin and, for a host template's, the translation unit it came from."""
    out: list[tuple[list[str], str, str | None]] = []
    for launch in launches:
        ref = launch.kind == "reference"
        # A generic lambda dispatched over a list of values: one instantiation per value.
        out += [(a, "reference" if ref else "dispatch", None) for a in launch.dispatch_args or []]
        if launch.template_args:
            out.append((launch.template_args, "reference" if ref else
                        "dispatch" if launch.in_lambda else "call_site", None))
        elif launch.host_template_args:
            origin = "reference" if ref else "inferred" if launch.host_defaulted else "host_template"
            tus: list[str | None] = (list(launch.host_tus) if len(launch.host_tus) == len(launch.host_template_args)
                                     else [None] * len(launch.host_template_args))
            # (a reference in a host template nothing instantiates took that template's defaults: where that put a
            # scalar for a parameter the kernel uses as a class, it is a guess like any defaulted launch's, which
            # known instantiations push out; kept as `reference`, lc0's `attention_kernel_batched_impl<Attention>`
            # had a `float` beside the two real `AttentionKernel<...>`)
            out += [(a, "inferred" if ref and launch.host_defaulted and scalar_for_class(a) else origin, tu)
                    for a, tu in zip(launch.host_template_args, tus, strict=True)]
        elif launch.resolved_text:
            out.append((launch.resolved_text, "reference" if ref else "call_site", None))
    out += [([a.strip() for a in args], "explicit", None) for args in explicit]
    return out


def _spread(found: list[tuple[tuple[str, ...], str]], tparams: list[dict[str, Any]], limit: int
            ) -> list[tuple[tuple[str, ...], str]]:
    """At most `limit`: strongest origins first, taken in turn from each distinct combination of the
    type arguments (float, double and Half all stay), and within one, the combination that brings the
    most values not seen yet (tile sizes and modes vary instead of repeating the table's first row); among
    those, the one whose values, then pairs of values, the combinations picked so far hold least often. Without
    that tie-break, where there are about as many type combinations as the limit (a value type times a load type
    chosen per width), each took only its first row, and the modes every first row sets the same way (`auto k =
    f<..., 9, true>;` before the `if`s that reassign it) were all the kept units ever showed."""
    if len(found) <= limit:
        return found
    types = [i for i, tp in enumerate(tparams) if tp["kind"] == "type"]
    rank = {o: i for i, o in enumerate(ORIGINS)}
    groups: dict[tuple[str, ...], list[tuple[tuple[str, ...], str]]] = {}
    for ao in found:
        groups.setdefault(tuple(ao[0][i] for i in types), []).append(ao)
    seen: dict[tuple[str, ...], set[tuple[int, str]]] = {g: set() for g in groups}
    singles: Counter[tuple[int, str]] = Counter()  # (position, value) -> how many picks hold it
    pairs: Counter[tuple[tuple[int, str], tuple[int, str]]] = Counter()
    picked: list[tuple[tuple[str, ...], str]] = []
    while len(picked) < limit and any(groups.values()):
        for g, lst in groups.items():
            if not lst or len(picked) >= limit:
                continue
            best = min(lst, key=lambda ao: (rank.get(ao[1], len(rank)),
                                            -len(set(enumerate(ao[0])) - seen[g]),
                                            sum(singles[v] for v in enumerate(ao[0])),
                                            sum(pairs[p] for p in itertools.combinations(enumerate(ao[0]), 2))))
            lst.remove(best)
            seen[g] |= set(enumerate(best[0]))
            singles.update(enumerate(best[0]))
            pairs.update(itertools.combinations(enumerate(best[0]), 2))
            picked.append(best)
    keep = set(picked)
    return [ao for ao in found if ao in keep]


def shift_counts(meta: dict[str, Any], kernel_text: str) -> frozenset[str]:
    """Value parameters the kernel's text shifts by (`1 << log2_elements`; not `<<<`, a launch)."""
    return frozenset(tp["name"] for tp in meta.get("template_params") or () if tp.get("kind") == "value"
                     and tp.get("name") and re.search(rf"(?<!<)<<(?!<)\s*\(?\s*{re.escape(tp['name'])}\b", kernel_text))


def subscript_types(meta: dict[str, Any], kernel_text: str) -> frozenset[str]:
    """Type parameters whose values the kernel uses as array subscripts: a pointer parameter to one is read
    inside another subscript (`grad[in_map[row] * ch + c]` with `const Itype *in_map`), or into a local that a
    subscript uses (`auto item = in[j]; atomicAdd(&bins[item], 1);`), or whose every bit the kernel sets
    (`x == ~((T)0)`, an "empty" marker). Such a parameter is an
    index type, whatever its name: the `float` default is "expression must have integral or unscoped enum
    type" there."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", kernel_text, flags=re.S)
    out: set[str] = set()
    for tp in meta.get("template_params") or ():
        if tp.get("kind") != "type" or not tp.get("name"):
            continue
        t = re.escape(tp["name"])
        for p in meta.get("params") or ():
            if not p.get("name") or not re.search(rf"\b{t}\b[\w\s]*\*", p.get("type") or ""):
                continue
            name = re.escape(p["name"])
            # (or a local read from it first: `auto item = in[j]; bins[item] += 1;`)
            locals_ = re.findall(rf"\b(?:const\s+)?(?:auto|{t})\s+(?:const\s+)?([A-Za-z_]\w*)\s*=\s*{name}\s*\[", text)
            if re.search(rf"\[[^\[\];{{}}]*\b{name}\s*\[", text) or any(
                    re.search(rf"\[[^\[\];{{}}]*\b{re.escape(v)}\b[^\[\];{{}}]*\]", text) for v in locals_):
                out.add(tp["name"])
        # A local of the type itself that a subscript uses (`const T in_idx = start + j; out[k] = in_index[in_idx];`)
        typed = re.findall(rf"(?<![\w:<>*&])(?:const\s+)?{t}\s+(?:const\s+)?([A-Za-z_]\w*)\s*(?:=|;|\(|\{{)", text)
        if any(re.search(rf"\[[^\[\];{{}}]*\b{re.escape(v)}\b[^\[\];{{}}]*\]", text) for v in typed):
            out.add(tp["name"])
        # `~((T)0)`, `~T(0)`, `~static_cast<T>(0)`: every bit set, a value only an integer type has
        if re.search(rf"~\s*\(*\s*(?:\(\s*{t}\s*\)|{t}\s*\(|static_cast\s*<\s*{t}\s*>)", text):
            out.add(tp["name"])
    return frozenset(out)


def dereferenced_types(meta: dict[str, Any], kernel_text: str) -> frozenset[str]:
    """Type parameters that type a by-value parameter the kernel dereferences (`*(first + i)`, `*it`, `it[i]`,
    `it->x`): an iterator (`template <class InputIt, class Op> __global__ void for_each(int n, InputIt first, Op f)`),
    for which the `float` default is "operand of * must be a pointer"; a pointer to the default type is one."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", kernel_text, flags=re.S)
    out: set[str] = set()
    for tp in meta.get("template_params") or ():
        name = tp.get("name")
        if tp.get("kind") != "type" or not name:
            continue
        for p in meta.get("params") or ():
            ptype = re.sub(r"\b(const|volatile|__restrict__)\b|&", " ", p.get("type") or "").split()
            pname = re.escape(p.get("name") or "")
            if ptype != [name] or not pname:
                continue
            # (a `*` after an operand is a product: `a * first` is no dereference)
            if re.search(rf"(?:^|[=(,;{{}}\[!&|+\-<>?:]|\breturn)\s*\*\s*\(?\s*{pname}\b", text, re.M) or \
                    re.search(rf"(?<![\w.>]){pname}\s*(?:\[|->)", text):
                out.add(name)
    return frozenset(out)


# An inferred argument for a type parameter whose objects the kernel only calls or hands on to calls (`Op op` in
# `op(a, b)`, `reduce(n, op, in)`): a float is no function object ("expression preceding parentheses of apparent
# call must have (pointer-to-) function type"); the unit declares this stand-in, whose call returns its first
# argument (what a reduction's binary operator gives back) and takes any arguments after it.
INFERRED_CALLABLE = "km_inferred_callable"


def _kernel_body(meta: dict[str, Any], kernel_text: str) -> str:
    """The kernel's body (from its `{`), comments blanked; "" for a kernel without parameters or body."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", kernel_text, flags=re.S)
    m = re.search(rf"\b{re.escape(meta.get('name') or '')}\s*\(", text) if meta.get("params") else None
    close = m.end() - 1 + _closing(text[m.end() - 1:]) if m else -1
    open_at = text.find("{", close) if m and close >= m.end() else -1
    return text[open_at:] if open_at >= 0 else ""


def called_types(meta: dict[str, Any], kernel_text: str) -> frozenset[str]:
    """Type parameters that type a by-value (or reference) parameter which the kernel's body only calls or passes
    on as a call's argument, and that the body names nowhere else (a function object's type, not data)."""
    body = _kernel_body(meta, kernel_text)
    out: set[str] = set()
    # (a value given to a parameter, or to a function-pointer template parameter `FN(data[i], p)`, is data for it)
    params = [p.get("name") for p in meta.get("params") or () if p.get("name")]
    params += [tp.get("name") for tp in meta.get("template_params") or () if tp.get("kind") == "value"]
    for tp in meta.get("template_params") or ():
        name = tp.get("name")
        if tp.get("kind") != "type" or not name or re.search(rf"\b{re.escape(name)}\b", body):
            continue
        for p in meta.get("params") or ():
            ptype = re.sub(r"\b(const|volatile|__restrict__)\b|&", " ", p.get("type") or "").split()
            pname = p.get("name") or ""
            if ptype != [name] or not pname.isidentifier():
                continue
            uses = list(re.finditer(rf"(?<![\w.>:])({re.escape(pname)})\b", body))
            if uses and all(re.match(r"\s*\(", body[u.end():]) or (
                    re.search(r"[(,]\s*$", body[:u.start()]) and re.match(r"\s*[,)]", body[u.end():])
                    and _callee_before(body, u.start()) not in (None, *params))
                    for u in uses):
                out.add(name)
    return frozenset(out)


_NOT_CALLEES = frozenset(("if", "for", "while", "switch", "return", "sizeof", "alignof", "decltype", "static_cast",
                          "reinterpret_cast", "const_cast", "dynamic_cast"))


def _callee_before(text: str, at: int) -> str | None:
    """The function named before the call's parenthesis that encloses `at` (`reduce<T>(n, op)` -> reduce)."""
    depth = 0
    for i in range(at - 1, -1, -1):
        ch = text[i]
        if ch in ")]}":
            depth += 1
        elif ch in "([{":
            if depth == 0:
                if ch != "(":
                    return None
                m = re.search(r"([A-Za-z_]\w*)\s*(?:<[^<>;{}]*>)?\s*$", text[:i])
                return m.group(1) if m and m.group(1) not in _NOT_CALLEES else None
            depth -= 1
    return None


# Types that have no members: a parameter the kernel names members through (`typename AK::Params`) is no such type.
_SCALARS = lazy_re.compile(r"(?:(?:un)?signed\s+)?(?:float|double|int|char|short|long(?:\s+long)?|bool|size_t|"
                      r"u?int(?:8|16|32|64)_t|half|__half|c10::Half|at::Half|__nv_bfloat16|c10::BFloat16|"
                      r"at::BFloat16|unsigned)")


def class_types(meta: dict[str, Any], kernel_text: str) -> frozenset[str]:
    """Type parameters the kernel names a member through (`AK::kNumThreads`, `typename AK::Params`), or whose
    objects, the kernel's parameters, it names members of (`plan.Eval(y, x)`): classes."""
    names = {t["name"] for t in meta.get("template_params") or [] if t["kind"] == "type"}
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", kernel_text, flags=re.S)
    return frozenset(n for n in names if re.search(rf"(?<![\w:]){re.escape(n)}\s*::\s*[A-Za-z_~]", text)) \
        | frozenset(member_uses(meta, kernel_text))


def member_uses(meta: dict[str, Any], kernel_text: str) -> dict[str, frozenset[str]]:
    """Type parameter -> the members the kernel's body names through its parameters of that type (`Plan plan`,
    `const Plan &plan` with `plan.Eval(y, x)`; `Grid *g` with `g->ch(0)`): what a class given for it must have."""
    body = _kernel_body(meta, kernel_text)
    types = {t["name"] for t in meta.get("template_params") or [] if t["kind"] == "type"}
    out: dict[str, set[str]] = {}
    for p in meta.get("params") or ():
        pname = p.get("name") or ""
        words = re.sub(r"\b(const|volatile|__restrict__|__restrict)\b", " ", p.get("type") or "")
        ptr = words.count("*")
        ptype = re.sub(r"[&*]", " ", words).split()
        if len(ptype) != 1 or ptype[0] not in types or not pname.isidentifier() or ptr > 1 or not body:
            continue
        # (`.` on an object or reference, `->` on a pointer to one)
        access = r"->" if ptr else r"\."
        found = set(re.findall(rf"(?<![\w.>:]){re.escape(pname)}\s*{access}\s*(?:template\s+)?([A-Za-z_]\w*)", body))
        # (an object the kernel also calls, `agg(a, b)`, needs a call operator besides)
        if found and not ptr and re.search(rf"(?<![\w.>:]){re.escape(pname)}\s*\(", body):
            found.add("operator()")
        if found:
            out.setdefault(ptype[0], set()).update(found)
    return {k: frozenset(v) for k, v in out.items()}


def class_stand_ins(inst: dict[str, Any], kernel: str, classes: frozenset[str]) -> str:
    """`P=float,Q=int reason` for the unit's `// km:class-stand-in` line: an inferred instantiation's scalar defaults
    for class parameters (`classes`), where no launch and no class of the project (units.class_args) gave one. A
    build that stops on such a scalar used as a class states this reason (builder.driver); "" where none."""
    if inst.get("origin") != "inferred":
        return ""
    given = [(n, a) for n, a in (inst.get("template_args") or {}).items() if n in classes and _SCALARS.fullmatch(a)]
    if not given:
        return ""
    names = ", ".join(n for n, _a in given)
    return (",".join(f"{n}={a}" for n, a in given) + f" {kernel} names members of {names} (a class, never a scalar), "
            "and neither a launch the miner followed nor a class the project passes another kernel gives one: the "
            "scalar default stands in for the class parameter, so the unit cannot build")


def _scalar_for_class(args: tuple[str, ...], names: list[str], classes: frozenset[str]) -> bool:
    return any(i < len(names) and names[i] in classes and _SCALARS.fullmatch(a.strip())
               for i, a in enumerate(args))


def _callable_stand_ins(found: list[tuple[tuple[str, ...], str]], meta: dict[str, Any], kernel_text: str
                        ) -> list[tuple[tuple[str, ...], str]]:
    """Inferred instantiations with the function-object stand-in where a type parameter is only called."""
    if not kernel_text or not any(o == "inferred" for _, o in found):
        return found
    called = called_types(meta, kernel_text)
    if not called:
        return found
    names = [t["name"] for t in meta["template_params"]]
    out = []
    for args, origin in found:
        if origin == "inferred":
            args = tuple(INFERRED_CALLABLE if i < len(names) and names[i] in called and a == DEFAULT_TYPE
                         else a for i, a in enumerate(args))
        if (args, origin) not in out:
            out.append((args, origin))
    return out


def _with_classes(best: dict[tuple[str, ...], str], names: list[str], classes: frozenset[str],
                  class_args: dict[str, dict[str, str]], chosen: dict[tuple[str, ...], dict[str, str]]) -> None:
    """Inferred instantiations with the class units.class_args found in place of a scalar default given to a class
    parameter; `chosen` records, per new argument list, the parameter -> reason."""
    if not class_args:
        return
    for args, origin in list(best.items()):
        if origin != "inferred":
            continue
        new = tuple(class_args[names[i]]["type"] if i < len(names) and names[i] in class_args
                    and names[i] in classes and _SCALARS.fullmatch(a.strip()) else a for i, a in enumerate(args))
        if new == args:
            continue
        del best[args]
        best.setdefault(new, origin)
        chosen[new] = {n: class_args[n]["reason"] for n, a, b in zip(names, args, new, strict=False) if a != b}


def plan(meta: dict[str, Any], launches: list[Launch], explicit: list[list[str]], *, limit: int = MAX_INSTANTIATIONS,
         omitted: list[dict[str, Any]] | None = None, kernel_text: str = "",
         class_args: dict[str, dict[str, str]] | None = None) -> list[dict[str, Any]]:
    """Distinct instantiations with their origin; nothing found gives one `inferred` default.

    `launches` are the kernel's launch and reference records (`records.Launch`; host templates are
    resolved in launches.find). Instantiations beyond `limit` go to `omitted`.
    `kernel_text` tells which type parameters index arrays (`subscript_types`) for the default.
    `class_args` (units.class_args): a class for a class parameter an inferred instantiation would give a scalar.
    """
    tparams = meta["template_params"]
    names = [t["name"] for t in tparams]
    if meta["is_specialization"] or not tparams:
        return [{"args": [], "template_args": {}, "origin": "specialization" if meta["is_specialization"]
                 else "none"}]
    best: dict[tuple[str, ...], str] = {}
    classes = class_types(meta, kernel_text) if kernel_text else frozenset()
    packs = pack_names(meta)
    # (index-like type parameters and shift-count value parameters: the names _default reads)
    subs = subscript_types(meta, kernel_text) | shift_counts(meta, kernel_text) if kernel_text else frozenset()
    ptrs = dereferenced_types(meta, kernel_text) if kernel_text else frozenset()
    # The translation unit a host template's instantiation came from (`origin_tu`: verify compiles that one).
    tus: dict[tuple[str, ...], str] = {}
    for args, origin, tu in _candidates(launches, explicit, lambda a: _scalar_for_class(tuple(a), names, classes)):
        if origin == "inferred":
            args = _kernel_defaults(list(args), tparams, subs, ptrs)
        norm = _normalize(list(args), tparams, packs)
        if norm is None:
            continue
        if norm not in best or ORIGINS.index(origin) < ORIGINS.index(best[norm]):
            best[norm] = origin
            tus.pop(norm, None)
        if tu and best[norm] == origin and origin == "host_template":
            tus.setdefault(norm, tu)
    # A guess only stands in for nothing: known instantiations push out inferred ones.
    if any(o != "inferred" for o in best.values()):
        best = {a: o for a, o in best.items() if o != "inferred"}
    chosen: dict[tuple[str, ...], dict[str, str]] = {}
    _with_classes(best, names, classes, class_args or {}, chosen)
    # A scalar never stands for a parameter the kernel uses as a class (`float::Params` is no C++): where another
    # instantiation exists, such one is listed as not rendered (weak_args states the reason when none does).
    _omit(best, [a for a in best if _scalar_for_class(a, names, classes)], "scalar_for_class", names, omitted)
    # Arguments still written in a template's own scope (`typename base_type::index_type`, a `<dependent type>`
    # libclang could not spell) name nothing at namespace scope, so their unit cannot build: where the same
    # kernel has instantiations with concrete arguments, they are listed as not rendered instead.
    _omit(best, [a for a in best if any(_UNRESOLVED_ARG.search(x) for x in a)], "unresolved", names, omitted)
    if not best:
        head = []
        for t in tparams:  # parameters up to the first with its own default; the rest from theirs
            if t.get("default"):
                break
            head.append(_default(t, subs, ptrs))
        best[_normalize(head, tparams) or tuple(_default(t, subs, ptrs) for t in tparams)] = "inferred"
        _with_classes(best, names, classes, class_args or {}, chosen)
    found = _callable_stand_ins(list(best.items()), meta, kernel_text)
    kept = _spread(found, tparams, limit)
    if omitted is not None:
        keep = set(kept)
        omitted += [{"args": list(a), "template_args": dict(zip(names, a, strict=False)), "origin": o}
                    for a, o in found if (a, o) not in keep]
    return [{"args": list(a), "template_args": dict(zip(names, a, strict=False)), "origin": o,
             **({"origin_tu": tus[a]} if o == "host_template" and a in tus else {}),
             **({"inferred_classes": chosen[a]} if a in chosen else {})} for a, o in kept]


def _kernel_defaults(args: list[str], tparams: list[dict[str, Any]], subs: frozenset[str],
                     ptrs: frozenset[str]) -> list[str]:
    """A defaulted launch's arguments (its host template's parameters took the default by their own names: `T` of
    `quiver<T, Mode>::sample` is `float`) with the kernel's own text heard where it says more: a type parameter left
    at the default type that the kernel uses as an index is `int`, one it dereferences a pointer (as `_default`)."""
    out = list(args)
    for i, tp in enumerate(tparams[:len(out)]):
        if tp.get("kind") == "type" and out[i].strip() == DEFAULT_TYPE and tp.get("name") in subs | ptrs:
            out[i] = _default({**tp, "default": None}, subs, ptrs)
    return out


def inst_id(args: list[str]) -> str:
    if not args:
        return "default"
    text = "_".join(a.replace("c10::Half", "half").replace("at::Half", "half").replace("__half", "half")
                    .replace("c10::BFloat16", "bf16").replace("at::BFloat16", "bf16")
                    .replace("__nv_bfloat16", "bf16") for a in args)
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")[:60] or "default"
