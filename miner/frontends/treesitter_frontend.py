"""Fallback frontend: tree-sitter-cuda. Syntax only, but fast and it sees both sides of every #if."""

from __future__ import annotations

import functools
import re

from miner import lazy_re
from miner.frontends.common import (
    attributes_from_prefix,
    line_of,
    make_param,
    make_template_param,
    signature_text,
)
from miner.frontends.model import Kernel

try:
    import tree_sitter
    import tree_sitter_cuda

    AVAILABLE = True
except Exception:  # noqa: BLE001 - a missing or broken grammar means this frontend is off
    AVAILABLE = False

# Containers a kernel definition can sit in; a function_definition anywhere else (for instance
# `CUDA_1D_KERNEL_LOOP(i, n) {...}` inside a body) is not a kernel.
_CONTAINERS = {
    "translation_unit", "declaration_list", "namespace_definition", "linkage_specification",
    "template_declaration", "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif",
    "preproc_elifdef",
}
_NAME_NODES = ("identifier", "field_identifier", "template_function", "qualified_identifier",
               "destructor_name", "operator_name")


@functools.cache
def parser() -> tree_sitter.Parser:
    """The one tree-sitter-cuda parser of the process."""
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))


@functools.lru_cache(maxsize=16)
def _tree(data: bytes) -> tree_sitter.Tree:
    """One parse per file text: the launch-switch search asks about many offsets of the same file (bytes cache
    their hash, so the lookup costs one comparison on a hit)."""
    return parser().parse(data)


def _declarator_name(node: tree_sitter.Node) -> tuple[str, int] | None:
    """Name and byte offset of the declared identifier inside a (nested) declarator."""
    stack = [node]
    while stack:
        n = stack.pop(0)
        if n.type in ("identifier", "field_identifier"):
            return n.text.decode("utf-8", "replace"), n.start_byte
        if n.type == "template_function":
            nm = n.child_by_field_name("name")
            if nm is not None:
                return nm.text.decode("utf-8", "replace"), nm.start_byte
        if n.type == "qualified_identifier":
            nm = n.child_by_field_name("name")
            if nm is not None:
                return _declarator_name(nm)
        if n.type in ("parameter_list", "template_argument_list", "argument_list"):
            continue
        stack.extend(n.children)
    return None


def _is_global(fn: tree_sitter.Node) -> bool:
    return any(ch.type == "__global__" for ch in fn.children)


def _in_container(node: tree_sitter.Node) -> bool:
    p = node.parent
    while p is not None:
        if p.type not in _CONTAINERS:
            return False
        if p.type == "translation_unit":
            return True
        p = p.parent
    return True


def _text(node: tree_sitter.Node) -> str:
    return node.text.decode("utf-8", "replace")


def _params(declarator: tree_sitter.Node) -> list:
    plist = None
    stack = [declarator]
    while stack:
        n = stack.pop(0)
        if n.type == "parameter_list":
            plist = n
            break
        stack.extend(n.children)
    out = []
    if plist is None:
        return out
    for p in plist.named_children:
        if p.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        decl = p.child_by_field_name("declarator")
        found = _declarator_name(decl) if decl is not None else None
        out.append(make_param(_text(p), found[0] if found else ""))
    return out


def _template_params(tdecl: tree_sitter.Node | None) -> list:
    if tdecl is None:
        return []
    plist = tdecl.child_by_field_name("parameters")
    out = []
    if plist is None:
        return out
    for p in plist.named_children:
        text = _text(p)
        if p.type in ("type_parameter_declaration", "optional_type_parameter_declaration",
                      "variadic_type_parameter_declaration"):
            names = [c for c in p.named_children if c.type == "type_identifier"]
            out.append(make_template_param(text, _text(names[0]) if names else "", "type"))
        elif p.type == "template_template_parameter_declaration":
            inner = [c for c in p.named_children if c.type != "template_parameter_list"]
            name = ""
            for c in inner:
                names = [x for x in c.named_children if x.type == "type_identifier"]
                if names:
                    name = _text(names[0])
            out.append(make_template_param(text, name, "template"))
        else:
            decl = p.child_by_field_name("declarator")
            found = _declarator_name(decl) if decl is not None else None
            out.append(make_template_param(text, found[0] if found else "", "value"))
    return out


def _qualified(fn: tree_sitter.Node, name: str) -> str:
    parts = [name]
    p = fn.parent
    while p is not None:
        if p.type == "namespace_definition":
            nm = p.child_by_field_name("name")
            if nm is not None:
                parts.append(_text(nm))
        p = p.parent
    return "::".join(reversed(parts))


def _namespaces(fn: tree_sitter.Node) -> list[str]:
    """The namespaces around `fn`, outermost first, "" for an anonymous one (`a::b` as one entry)."""
    out: list[str] = []
    p = fn.parent
    while p is not None:
        if p.type == "namespace_definition":
            nm = p.child_by_field_name("name")
            out.append(_text(nm) if nm is not None else "")
        p = p.parent
    return out[::-1]


def parse_bytes(data: bytes, path: str) -> tuple[list[Kernel], int]:
    """Kernels in one file's bytes, and the number of syntax-error nodes seen."""
    tree = parser().parse(data)
    kernels: list[Kernel] = []
    errors = 0
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            errors += 1
        if node.type == "function_definition":
            if _is_global(node) and _in_container(node):
                kernels.append(_kernel(node, data, path))
            continue  # bodies hold no kernel definitions
        stack.extend(node.children)
    kernels.sort(key=lambda k: k.start_offset)
    for k in kernels:
        k.diagnostics = {"count": errors, "errors": errors,
                         "messages": [f"tree-sitter: {errors} syntax error node(s)"] if errors else []}
    return kernels, errors


def _kernel(fn: tree_sitter.Node, data: bytes, path: str) -> Kernel:
    tdecl = fn.parent if fn.parent is not None and fn.parent.type == "template_declaration" else None
    start = tdecl.start_byte if tdecl is not None else fn.start_byte
    end = fn.end_byte
    declarator = fn.child_by_field_name("declarator")
    found = _declarator_name(declarator) if declarator is not None else None
    name, name_offset = found if found else ("", start)
    text = data[start:end].decode("utf-8", "replace")
    prefix = data[start:name_offset].decode("utf-8", "replace")
    tparams = _template_params(tdecl)
    is_spec = tdecl is not None and not tparams
    return Kernel(
        name=name,
        qualified_name=_qualified(fn, name),
        path=path,
        start_offset=start,
        end_offset=end,
        start_line=line_of(data, start),
        end_line=line_of(data, end),
        signature=signature_text(text),
        params=_params(declarator) if declarator is not None else [],
        template_params=tparams,
        attributes=attributes_from_prefix(prefix),
        is_specialization=is_spec,
        frontend="treesitter",
        c_linkage=_c_linkage(fn),
        namespaces=_namespaces(fn),
    )


def _c_linkage(fn: tree_sitter.Node) -> bool:
    """Inside `extern "C"` (`extern "C" __global__ void k` or an `extern "C" {}` block)."""
    node = fn.parent
    while node is not None:
        if node.type == "linkage_specification":
            value = node.child_by_field_name("value")
            return value is not None and value.text is not None and value.text.strip(b'"') == b"C"
        node = node.parent
    return False


def activating_defines(data: bytes, offset: int) -> list[str]:
    """-D flags that make the preprocessor keep the code at `offset`: for a kernel tree-sitter saw in a
    branch the configured parse skipped. Only what can be forced by defining names is returned
    (`#ifdef X` -> X, `#if defined(X) && Y` -> X, Y, the `#else` of `#ifndef X` -> X,
    `#if X >= 3` -> X=3, `#if X >= NEEDED` with `#define NEEDED 3` earlier in the file -> X=3); a branch that
    needs a name undefined adds nothing."""
    node = _tree(data).root_node.named_descendant_for_byte_range(offset, offset)
    consts = {name: value for at, name, value in _numeric_defines(data) if at < offset}
    out: list[str] = []
    while node is not None and node.parent is not None:
        parent = node.parent
        if parent.type in ("preproc_ifdef", "preproc_if", "preproc_elif", "preproc_elifdef"):
            in_else = parent.child_by_field_name("alternative") == node
            directive = parent.children[0].type if parent.children else ""
            if parent.type in ("preproc_ifdef", "preproc_elifdef"):
                name = parent.child_by_field_name("name")
                negated = directive in ("#ifndef", "#elifndef")
                if name is not None and in_else == negated:
                    out.append(name.text.decode("utf-8", "replace"))
            else:
                cond = parent.child_by_field_name("condition")
                if cond is not None:
                    out += _defines_for(cond, want=not in_else, consts=consts)
        node = parent
    return list(dict.fromkeys(out))


def earlier_branches(data: bytes, offset: int) -> list[int]:
    """The offsets of the code of each branch before the one holding `offset`, of the `#if` / `#ifdef` chain whose
    later branch (`#elif`, `#else`) holds it, first branch first; empty where `offset` sits in no later branch."""
    node = _tree(data).root_node.named_descendant_for_byte_range(offset, offset)
    chain: list = []  # the branch nodes from the one holding `offset` up to the chain's `#if`
    while node is not None and node.parent is not None:
        parent = node.parent
        if parent.type in _BRANCHES and (parent.type == "preproc_else" or not chain
                                         or parent.child_by_field_name("alternative") == chain[-1]):
            if chain and parent.child_by_field_name("alternative") != chain[-1]:
                break
            chain.append(parent)
            if parent.type in ("preproc_if", "preproc_ifdef"):
                break
        elif chain:
            break
        node = parent
    if len(chain) < 2 or chain[-1].type not in ("preproc_if", "preproc_ifdef"):
        return []
    out = []
    for branch in reversed(chain[1:]):
        skip = {branch.child_by_field_name(f) for f in ("condition", "name", "alternative")}
        body = [c for c in branch.named_children if c not in skip]
        if not body:
            return []
        out.append(body[0].start_byte)
    return out


_BRANCHES = ("preproc_if", "preproc_ifdef", "preproc_elif", "preproc_elifdef", "preproc_else")


_NUMERIC_DEFINE = lazy_re.compile(
    rb"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+\(?[ \t]*((?:0[xX])?[0-9a-fA-F]+)[uUlL]*[ \t]*\)?"
                             rb"[ \t]*(?://[^\n]*)?$", re.M)


@functools.lru_cache(maxsize=16)
def _numeric_defines(data: bytes) -> tuple[tuple[int, str, int], ...]:
    """Object-like macros defined as a plain number (`#define NEEDED_VERSION 130300`), with their offsets: a
    version test usually compares the library's macro with such a named threshold written earlier in the file."""
    out: list[tuple[int, str, int]] = []
    for m in _NUMERIC_DEFINE.finditer(data):
        try:
            out.append((m.start(), m.group(1).decode(), int(m.group(2).decode(), 0)))
        except ValueError:  # (`0755`-style octal, `1e3`): not a threshold to read
            continue
    return tuple(out)


def _defines_for(cond: tree_sitter.Node, want: bool, consts: dict[str, int] | None = None) -> list[str]:
    """Names to define so that `cond` evaluates to `want` (empty where defining cannot help); `consts` are the
    numeric macros defined before the branch, for a threshold written as a name."""
    t = cond.type
    if t == "parenthesized_expression" and cond.named_child_count == 1:
        return _defines_for(cond.named_children[0], want, consts)
    if t == "unary_expression" and cond.children and cond.children[0].type == "!":
        arg = cond.child_by_field_name("argument")
        return _defines_for(arg, not want, consts) if arg is not None else []
    if t == "preproc_defined" or t == "identifier":
        ident = cond if t == "identifier" else next((c for c in cond.named_children if c.type == "identifier"), None)
        return [ident.text.decode("utf-8", "replace")] if want and ident is not None else []
    if t == "binary_expression":
        op = cond.child_by_field_name("operator")
        left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
        if op is None or left is None or right is None:
            return []
        if op.type == "&&" and want or op.type == "||" and not want:
            return _defines_for(left, want, consts) + _defines_for(right, want, consts)
        if op.type == "||" and want:
            return _defines_for(left, want, consts)
        if want and left.type == "identifier" and op.type in (">=", "==", ">"):
            if right.type == "number_literal":
                value = int(right.text.decode().rstrip("uUlL"), 0)
            elif right.type == "identifier" and consts and right.text.decode() in consts:
                value = consts[right.text.decode()]
            else:
                return []
            name = left.text.decode("utf-8", "replace")
            # (a name the file itself defines as a number is no library's to force)
            return [] if consts and name in consts else [f"{name}={value + (op.type == '>')}"]
    return []
