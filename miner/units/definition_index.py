"""Where a project's files define a function or variable of a given name: a cheap index (a word search, then
tree-sitter on the files that hold the word) that says which files are worth a libclang parse when a kernel's
unit lacks the definition of something its translation unit only declares (units.cross_file).

A definition of internal linkage (`static`, or inside an unnamed namespace) is recorded as such: it belongs to
its own file and is never a candidate for another file's declaration.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import tree_sitter

from miner.frontends.treesitter_frontend import parser

# Nodes whose children may hold namespace-scope declarations (`#if` branches, `extern "C" { }`, namespaces).
_CONTAINERS = {"translation_unit", "declaration_list", "linkage_specification", "namespace_definition",
               "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef", "template_declaration"}
_DECLARATORS = {"function_declarator", "init_declarator", "array_declarator", "pointer_declarator",
                "reference_declarator", "parenthesized_declarator"}


@dataclass(frozen=True)
class Site:
    path: str
    line: int
    kind: str  # "function" | "variable"
    name: str
    internal: bool  # static or in an unnamed namespace: only its own file's


def sites(files: Iterable[tuple[str, bytes]], names: set[str]) -> dict[str, list[Site]]:
    """name -> the definitions of that name (functions with a body, variables that are no `extern`
    declaration) at namespace scope in `files`."""
    if not names:
        return {}
    alternatives = b"|".join(re.escape(n.encode()) for n in sorted(names))
    word = re.compile(rb"(?<![A-Za-z0-9_])(" + alternatives + rb")(?![A-Za-z0-9_])")
    out: dict[str, list[Site]] = {}
    for path, data in files:
        if not word.search(data):
            continue
        tree = parser().parse(data)
        for site in _walk(tree.root_node, path, names, False):
            out.setdefault(site.name, []).append(site)
    return out


def _walk(node: tree_sitter.Node, path: str, names: set[str], internal: bool) -> Iterable[Site]:
    for ch in node.children:
        t = ch.type
        if t == "namespace_definition":
            anonymous = ch.child_by_field_name("name") is None
            yield from _walk(ch, path, names, internal or anonymous)
        elif t in _CONTAINERS:
            yield from _walk(ch, path, names, internal)
        elif t in ("function_definition", "declaration"):
            static = internal or any(c.type == "storage_class_specifier" and c.text == b"static" for c in ch.children)
            extern = any(c.type == "storage_class_specifier" and c.text == b"extern" for c in ch.children)
            if t == "function_definition":
                name = _name(ch.child_by_field_name("declarator"))
                if name in names:
                    yield Site(path, ch.start_point[0] + 1, "function", name, static)
                continue
            for d in ch.children_by_field_name("declarator"):
                if d.type == "function_declarator" or _has_function(d):
                    continue  # a prototype
                if extern and d.type != "init_declarator":
                    continue  # `extern __device__ int n;` declares; `extern int n = 0;` defines
                name = _name(d)
                if name in names:
                    yield Site(path, ch.start_point[0] + 1, "variable", name, static)


def _has_function(d: tree_sitter.Node) -> bool:
    return any(c.type == "function_declarator" for c in d.children) and d.type != "init_declarator"


def _name(d: tree_sitter.Node | None) -> str | None:
    """The declared name of a declarator: the last part of a qualified name (`ns::f`)."""
    while d is not None:
        if d.type in ("identifier", "field_identifier"):
            return d.text.decode("utf-8", "replace")
        if d.type == "qualified_identifier":
            d = d.child_by_field_name("name")
            continue
        if d.type in ("destructor_name", "operator_name", "template_function"):
            return None
        if d.type in _DECLARATORS:
            d = d.child_by_field_name("declarator")
            continue
        return None
    return None
