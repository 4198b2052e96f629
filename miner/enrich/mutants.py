"""Mutants of a kernel unit: small, deliberate bugs a test worth keeping must notice.

A generated test is judged by behaviour: it must pass on the real unit and fail on each mutant
(docs/enrich.md, "Mutation check"). The mutants are made from the unit's text with tree-sitter-cuda,
on the kernel's own body only, by four operators that stand for the ways a weak test is fooled:

- `no_write`: the kernel body is emptied, so the output is never written (a test that never reads
  the output, or compares it with itself, passes);
- `poison`: every store into the output writes the negated value (`out[i] = v` -> `out[i] = -(v)`,
  atomics likewise), so a test that reads the output only through its shape, or with a tolerance
  that accepts anything, passes;
- `drop_term`: one arithmetic term of a value computation is dropped (`a * x[i] + y[i]` ->
  `a * x[i]`); index arithmetic (thread and block built-ins), conditions and subscripts are left
  alone, so the mutant changes values, not which element is written;
- `off_by_one`: one load reads the neighbouring element (`x[i]` -> `x[(i) + 1]`).

The output is what the kernel writes through a pointer parameter whose pointee is not const, or
through a tensor accessor passed by value that is not const (`PackedTensorAccessor32<...> out`,
`out[i][j] = v`: torch extensions write their outputs so), and through local pointers or accessors
derived from one. Which parameters count is `writes_through`, the rule the prompt and the static check
use, applied to the parameter's type with the unit's `#define`/`using`/`typedef` aliases expanded
(`#define Acc4R PackedTensorAccessor32<...>`: the metadata type says only `Acc4R`). Operators find
their sites in source order and the first `per_kind` sites are used, so the mutant set of a unit is
deterministic. A mutant that does not compile (a negated struct, say) is dropped by the build, not here.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from miner import lazy_re
from miner.enrich.prompt_context import writes_through

if TYPE_CHECKING:  # tree-sitter is needed only to mutate CUDA: Triton mutants (miner.triton.mutants) use `ast`
    import tree_sitter

KINDS = ("no_write", "poison", "drop_term", "off_by_one")
_ARITH = {"+", "-", "*", "/"}
_BUILTINS = lazy_re.compile(r"\b(threadIdx|blockIdx|blockDim|gridDim|warpSize)\b")
_ATOMIC = lazy_re.compile(r"^atomic(Add|Sub|Max|Min|Exch|And|Or|Xor)(_block|_system)?$")


@dataclass(frozen=True)
class Mutant:
    name: str          # "no_write", "poison", "drop_term.1", "off_by_one.2": stable across instantiations
    kind: str
    description: str   # what changed, with the code before and after, for records and repair prompts
    source: str        # the whole mutated unit


@functools.cache
def _parser() -> tree_sitter.Parser:
    import tree_sitter
    import tree_sitter_cuda

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))


def _text(node: tree_sitter.Node) -> str:
    return node.text.decode("utf-8", "replace")


def _walk(node: tree_sitter.Node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _declared_name(node: tree_sitter.Node | None) -> str | None:
    while node is not None:
        if node.type == "identifier":
            return _text(node)
        if node.type in ("qualified_identifier", "template_function"):
            node = node.child_by_field_name("name")
            continue
        node = node.child_by_field_name("declarator")
    return None


def kernel_definitions(tree: tree_sitter.Tree, name: str) -> list[tree_sitter.Node]:
    """Every `__global__` definition of `name` in the unit (a primary template and its specializations)."""
    short = name.split("::")[-1]
    out = []
    for n in _walk(tree.root_node):
        if n.type == "function_definition" and any(c.type == "__global__" for c in n.children):
            decl = n.child_by_field_name("declarator")
            if _declared_name(decl) == short and n.child_by_field_name("body") is not None:
                out.append(n)
    return out


def _type_aliases(root: tree_sitter.Node) -> dict[str, str]:
    """Object-like `#define NAME text`, `using NAME = T;` and `typedef T NAME;` of the unit: {NAME: text}."""
    out: dict[str, str] = {}
    for n in _walk(root):
        if n.type == "preproc_def" and n.child_by_field_name("value") is not None:
            out[_text(n.child_by_field_name("name"))] = _text(n.child_by_field_name("value")).strip()
        elif n.type == "alias_declaration" and n.child_by_field_name("type") is not None:
            out[_text(n.child_by_field_name("name"))] = _text(n.child_by_field_name("type"))
        elif n.type == "type_definition" and n.child_by_field_name("type") is not None:
            name = _declared_name(n.child_by_field_name("declarator"))
            if name:
                out[name] = _text(n.child_by_field_name("type"))
    return out


def _expand(type_text: str, aliases: dict[str, str]) -> str:
    for _ in range(4):  # aliases of aliases, a few levels; a cycle stops here
        new = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: aliases.get(m.group(0), m.group(0)), type_text)
        if new == type_text:
            break
        type_text = new
    return type_text


def _pointer_params(fn: tree_sitter.Node, aliases: dict[str, str] | None = None) -> tuple[set[str], set[str]]:
    """(names of parameters the kernel may write through, names of all pointer and accessor parameters)."""
    writable: set[str] = set()
    pointers: set[str] = set()
    plist = next((n for n in _walk(fn.child_by_field_name("declarator")) if n.type == "parameter_list"), None)
    for p in plist.named_children if plist is not None else []:
        decl = p.child_by_field_name("declarator")
        if decl is None:
            continue
        name = _declared_name(decl) or ""
        # `const T* x` (qualifier before the declarator) protects the data; `T* const y` only the pointer.
        const = any(c.type == "type_qualifier" and _text(c) == "const" for c in p.children)
        pointer = any(n.type in ("pointer_declarator", "array_declarator") for n in _walk(decl))
        ptype = _expand(_text(p.child_by_field_name("type")) if p.child_by_field_name("type") else "", aliases or {})
        if decl.type == "reference_declarator":
            continue  # `Acc& out` is not how kernels take accessors; left alone rather than guessed
        if not pointer and "Accessor" not in ptype:
            continue
        pointers.add(name)
        if writes_through({"pointer": pointer, "const": const, "type": ("const " if const else "") + ptype}):
            writable.add(name)
    return writable, pointers


def _base(node: tree_sitter.Node | None) -> tuple[str | None, bool]:
    """(root identifier, whether memory is dereferenced on the way): `out[i].x` -> ("out", True)."""
    deref = False
    while node is not None:
        t = node.type
        if t == "identifier":
            return _text(node), deref
        if t == "subscript_expression":
            deref = True
            node = node.child_by_field_name("argument")
        elif t == "pointer_expression":
            op = node.child_by_field_name("operator")
            deref = deref or (op is not None and _text(op) == "*")
            node = node.child_by_field_name("argument")
        elif t == "field_expression":
            op = node.child_by_field_name("operator")
            deref = deref or (op is not None and _text(op) == "->")
            node = node.child_by_field_name("argument")
        elif t in ("parenthesized_expression", "cast_expression"):
            node = node.child_by_field_name("value") or (node.named_children[-1] if node.named_children else None)
        elif t == "binary_expression":
            node = node.child_by_field_name("left")
        else:
            return None, deref
    return None, deref


def _local_pointers(body: tree_sitter.Node, writable: set[str], pointers: set[str],
                    aliases: dict[str, str] | None = None) -> None:
    """Add local pointers initialised from a parameter (`T* row = out + r * n;`), and local accessors
    declared with an accessor type (`TensorAccessor<T, 1> row = out[r];`), in source order. (`auto row =
    out[r]` is not followed: whether it is a row or an element depends on the accessor's rank.)"""
    for n in _walk(body):
        if n.type != "declaration":
            continue
        const = any(c.type == "type_qualifier" and _text(c) == "const" for c in n.children)
        dtype = n.child_by_field_name("type")
        accessor = dtype is not None and "Accessor" in _expand(_text(dtype), aliases or {})
        for init in (c for c in n.named_children if c.type == "init_declarator"):
            decl, value = init.child_by_field_name("declarator"), init.child_by_field_name("value")
            if decl is None or value is None or (decl.type != "pointer_declarator" and not accessor):
                continue
            name = _declared_name(decl)
            used = {_text(i) for i in _walk(value) if i.type == "identifier"}
            if name and used & pointers:
                pointers.add(name)
                if not const and used & writable:
                    writable.add(name)


@dataclass
class _Site:
    start: int
    end: int
    replacement: str
    before: str
    after: str = ""


def _store_sites(body: tree_sitter.Node, writable: set[str]) -> list[tuple[tree_sitter.Node, tree_sitter.Node]]:
    """(store node, the value it stores) for assignments through writable pointers and atomics on them."""
    out = []
    for n in _walk(body):
        if n.type == "assignment_expression":
            name, deref = _base(n.child_by_field_name("left"))
            value = n.child_by_field_name("right")
            if deref and name in writable and value is not None:
                out.append((n, value))
        elif n.type == "call_expression":
            fn, args = n.child_by_field_name("function"), n.child_by_field_name("arguments")
            if fn is None or args is None or not _ATOMIC.match(_text(fn)) or len(args.named_children) != 2:
                continue
            addr, value = args.named_children
            name, _ = _base(addr)
            if name in writable:
                out.append((n, value))
    return out


def _inside(node: tree_sitter.Node, stop: tree_sitter.Node, kinds: tuple[str, ...]) -> bool:
    """Whether `node` sits in a subscript index or a condition (below `stop`)."""
    child, p = node, node.parent
    while p is not None and p != stop:
        field = None
        for i in range(p.child_count):
            if p.children[i] == child:
                field = p.field_name_for_child(i)
                break
        if p.type == "subscript_argument_list" or (field == "condition" and p.type in kinds):
            return True
        if p.type == "for_statement" and field in ("initializer", "update"):
            return True
        child, p = p, p.parent
    return False


_CONDITIONS = ("if_statement", "while_statement", "do_statement", "for_statement", "conditional_expression")


def _index_vars(body: tree_sitter.Node, pointers: set[str]) -> set[str]:
    """Variables that pick elements rather than compute values: used in subscripts, loop headers,
    pointer offsets, or in the computation of such a variable (a fixed point over assignments)."""
    idx: set[str] = set()
    defs: list[tuple[str, tree_sitter.Node]] = []
    for n in _walk(body):
        parts: list[tree_sitter.Node] = []
        if n.type == "subscript_argument_list":
            parts = [n]
        elif n.type == "for_statement":
            parts = [c for f in ("initializer", "condition", "update") if (c := n.child_by_field_name(f))]
        elif n.type == "init_declarator":
            decl, value = n.child_by_field_name("declarator"), n.child_by_field_name("value")
            name = _declared_name(decl)
            if name and value is not None:
                if decl is not None and decl.type == "pointer_declarator":
                    parts = [value]
                else:
                    defs.append((name, value))
        elif n.type == "assignment_expression":
            left, value = n.child_by_field_name("left"), n.child_by_field_name("right")
            if left is not None and left.type == "identifier" and value is not None:
                defs.append((_text(left), value))
        for part in parts:
            idx |= {_text(i) for i in _walk(part) if i.type == "identifier"}
    idx -= pointers
    changed = True
    while changed:
        changed = False
        for name, value in defs:
            if name in idx:
                new = {_text(i) for i in _walk(value) if i.type == "identifier"} - pointers - idx
                if new:
                    idx |= new
                    changed = True
    return idx


def _assigned_to(node: tree_sitter.Node, stop: tree_sitter.Node) -> str | None:
    """The variable whose declaration or assignment `node`'s value flows into, if any."""
    p = node.parent
    while p is not None and p != stop:
        if p.type == "init_declarator":
            return _declared_name(p.child_by_field_name("declarator"))
        if p.type == "assignment_expression":
            left = p.child_by_field_name("left")
            return _text(left) if left is not None and left.type == "identifier" else None
        p = p.parent
    return None


def _term_sites(body: tree_sitter.Node, pointers: set[str],
                stores: list[tuple[tree_sitter.Node, tree_sitter.Node]]) -> list[_Site]:
    """`a op b` -> `a`, in order of preference: inside a stored value, in a value variable, elsewhere.

    Arithmetic on the thread and block built-ins, in subscripts and in conditions is never mutated:
    there it changes which element is written, which `off_by_one` covers."""
    in_store = {_key(v) for _, v in stores}
    index_vars = _index_vars(body, pointers)
    tiers: list[list[_Site]] = [[], [], []]
    for n in _walk(body):
        if n.type != "binary_expression":
            continue
        op, left = n.child_by_field_name("operator"), n.child_by_field_name("left")
        if op is None or left is None or _text(op) not in _ARITH or _BUILTINS.search(_text(n)):
            continue
        if all(c.type == "number_literal" for c in n.named_children) or _inside(n, body, _CONDITIONS):
            continue
        site = _Site(n.start_byte, n.end_byte, f"({_text(left)})", _text(n), f"({_text(left)})")
        p, stored = n, False
        while p is not None and p != body:
            if _key(p) in in_store:
                stored = True
                break
            p = p.parent
        target = _assigned_to(n, body)
        value_var = target is not None and target not in index_vars and target not in pointers
        tiers[0 if stored else 1 if value_var else 2].append(site)
    return tiers[0] + tiers[1] + tiers[2]


def _load_sites(body: tree_sitter.Node, pointers: set[str], stores: list[tuple[tree_sitter.Node, tree_sitter.Node]]
                ) -> list[_Site]:
    """`p[e]` -> `p[(e) + 1]` for loads through pointer parameters; loads in stored values first."""
    lefts: set = set()
    for s, _ in stores:
        # The whole chain of the store's address is written, not read: `out[i][j] = v` has `out[i]` inside.
        node = s.child_by_field_name("left") if s.type == "assignment_expression" else None
        while node is not None and node.type in ("subscript_expression", "field_expression",
                                                 "parenthesized_expression"):
            lefts.add(_key(node))
            node = node.child_by_field_name("argument") or (
                node.named_children[0] if node.type == "parenthesized_expression" and node.named_children else None)
    in_store = {_key(v) for _, v in stores}
    first: list[_Site] = []
    rest: list[_Site] = []
    for n in _walk(body):
        if n.type != "subscript_expression" or _key(n) in lefts:
            continue
        name, _ = _base(n)
        idx = n.child_by_field_name("indices")
        if name not in pointers or idx is None or len(idx.named_children) != 1:
            continue
        e = idx.named_children[0]
        arg = n.child_by_field_name("argument")
        site = _Site(e.start_byte, e.end_byte, f"({_text(e)}) + 1", _text(n),
                     f"{_text(arg) if arg is not None else name}[({_text(e)}) + 1]")
        p, stored = n, False
        while p is not None and p != body:
            if _key(p) in in_store:
                stored = True
                break
            p = p.parent
        (first if stored else rest).append(site)
    return first + rest


def _key(node: tree_sitter.Node | None) -> tuple[int, int, str] | None:
    # Python wrappers of tree-sitter nodes are made afresh on each access: compare spans, not objects.
    return None if node is None else (node.start_byte, node.end_byte, node.type)


def _apply(data: bytes, sites: list[_Site]) -> str:
    out = data
    for s in sorted(sites, key=lambda s: s.start, reverse=True):
        out = out[: s.start] + s.replacement.encode() + out[s.end :]
    return out.decode("utf-8", "replace")


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def make_mutants(unit_text: str, kernel_name: str, per_kind: int = 2) -> list[Mutant]:
    """The mutants of `kernel_name` in one unit; empty when the kernel's definition is not found."""
    data = unit_text.encode("utf-8")
    tree = _parser().parse(data)
    defs = kernel_definitions(tree, kernel_name)
    if not defs:
        return []
    aliases = _type_aliases(tree.root_node)
    bodies = []
    for fn in defs:
        writable, pointers = _pointer_params(fn, aliases)
        body = fn.child_by_field_name("body")
        _local_pointers(body, writable, pointers, aliases)
        bodies.append((body, writable, pointers, _store_sites(body, writable)))
    mutants = [Mutant("no_write", "no_write", "the kernel body is removed: the output is never written",
                      _apply(data, [_Site(b.start_byte, b.end_byte, "{}", "") for b, *_ in bodies]))]
    poison = [_Site(v.start_byte, v.end_byte, f"-({_text(v)})", _text(s)) for b, _, _, stores in bodies
              for s, v in stores]
    if poison:
        mutants.append(Mutant("poison", "poison", "every store into the output writes the negated value: "
                              + "; ".join(sorted({_short(s.before) for s in poison})[:3]), _apply(data, poison)))
    # Sites per definition, paired by position, so specializations mutate alike.
    for kind, finder in (("drop_term", lambda b, w, p, s: _term_sites(b, p, s)),
                         ("off_by_one", lambda b, w, p, s: _load_sites(b, p, s))):
        per_def = [finder(*entry) for entry in bodies]
        for k in range(per_kind):
            sites = [sites[k] for sites in per_def if k < len(sites)]
            if not sites:
                break
            after = sites[0].after or sites[0].replacement
            what = ("drops a term" if kind == "drop_term" else "reads the neighbouring element")
            mutants.append(Mutant(f"{kind}.{k + 1}", kind, f"{what}: `{_short(sites[0].before)}` -> `{_short(after)}`",
                                  _apply(data, sites)))
    return [m for m in mutants if m.source != unit_text]
