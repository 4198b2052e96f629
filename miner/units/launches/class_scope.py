"""Template arguments written in a class template's scope, evaluated by the compiler per class instantiation.

A method of `Map<coordinate_type, Alloc>` launches `k<coordinate_type, size_type, map_type>`, where `size_type`
is `typename base_type::size_type` and `map_type` a hash-table type built from four more member aliases: only
the class's concrete instantiations (`template class Map<int, pool>;`, a variable of type `Map<int, pool>`)
fix them, and the chain of member aliases, base classes and template template arguments is the compiler's
job, not a text substitution's. For each such launch and each known instantiation of its class, a probe
struct derived from that instantiation (where every member alias is visible without qualification) declares
the launch's arguments, the class's parameters put in:

    namespace ns { struct __km_probe_3 : Map<int, ns::pool> { using a0 = int; using a1 = size_type; ... }; }

The main file is parsed again with the probes appended (`LiveTU.probe`, only in a TU that has such launches)
and each alias's canonical type (qualified, as the unit's explicit instantiation needs it) or each constant's
value replaces the text; a probe the compiler rejects leaves the launch as it was.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import clang.cindex as ci

from miner import lazy_re
from miner.frontends.common import split_top
from miner.units.closure import TUContext
from miner.units.closure.shims import _enclosing_namespaces
from miner.units.launches import deduce_probe, value_spelling
from miner.units.launches.cursors import _evaluated, _key, _tparams
from miner.units.launches.record import _COMMENT, _IDENT, K, Launch
from miner.units.launches.state import _add, _DepCall, _State
from miner.units.launches.text import substitute

_MAX_PROBES = 256  # per TU: a bound on the probe parse's size
_MAX_PER_LAUNCH = 16  # class instantiations x member-template instantiations evaluated per launch


class Prober:
    """Collects the argument lists written in class scope (launches, dependent calls of host templates), writes
    one probe struct per (list, class instantiation), parses once and reads the compiler's answers back."""

    def __init__(self, st: _State, insts: dict[tuple[str, int], list[list[str]]]) -> None:
        self.st, self.insts = st, insts
        self.lines: list[str] = []
        self.jobs: list[tuple[Any, list[tuple[str, str, list[str], list[str]]]]] = []
        self.classes: dict[tuple[str, ...], str] = {}  # (class key, args) -> its member probe's name
        self.members: dict[str, tuple[ci.Cursor, dict[str, str]]] = {}  # member probe -> class, its parameters
        self.results: dict[int, list[list[str]]] = {}
        self.scope_names: dict[tuple[str, int], set[str]] = {}  # class key -> names its scope declares
        self.prelude: list[str] = []  # declarations the probes call (deduce_probe), before them

    def add(self, owner: Any, host: tuple[str, int] | None, texts: list[str], kinds: list[str],
            scope: tuple[list[str], list[str]] | None, force: bool = False, prelude: str = "") -> None:
        """One argument list `texts` written in host `host` (a class template's method or member template)."""
        st = self.st
        cls = st.classes.get(host) if host is not None else None
        key = st.class_keys.get(host) if host is not None else None
        if cls is None or key is None or not texts or not self.insts.get(key) or self.st.ctx.probe is None:
            return
        names = {n for t in texts for n in _IDENT.findall(t)}
        if key not in self.scope_names:
            self.scope_names[key] = _member_names(cls) | set(_member_texts(st.ctx, cls))
        member = host if host != key else None
        own = [p.spelling for p in _tparams(cls)]
        params, member_params = scope or (own, [])
        # Probed: a text naming the class's members, which a text substitution of the class's parameters leaves
        # open, or (in a member template, whose own instantiations say nothing of the class's) its parameters.
        if not force and not names & self.scope_names[key] and not (member is not None and names & set(params)):
            return
        used_member = [p for p in member_params if p in names]
        member_insts = self.insts.get(member, []) if used_member and member is not None else [[]]
        made: list[tuple[str, str, list[str], list[str]]] = []
        for class_args, member_args in itertools.islice(itertools.product(self.insts[key], member_insts),
                                                        _MAX_PER_LAUNCH):
            if len(self.lines) >= _MAX_PROBES or len(params) != len(class_args) or len(own) != len(class_args):
                continue
            ck = (*key, *class_args)
            base = _instance_text(st, cls, own, class_args)
            if base is None:
                continue
            if ck not in self.classes:
                self.classes[ck] = f"__km_members_{len(self.classes)}"
                self.members[self.classes[ck]] = (cls, dict(zip(own, class_args, strict=True)))
                self.lines.append(_probe_text(self.classes[ck], cls, base, [
                    ("km_self", "type", base),
                    *[(f"m_{n}", "type", n) for n in _member_types(cls)]]))
            mapping = {**dict(zip(params, class_args, strict=True)),
                       **dict(zip(member_params, member_args, strict=False))}
            filled = [substitute(t, mapping) for t in texts]
            name = f"__km_probe_{len(self.lines)}"
            self.lines.append(_probe_text(name, cls, base, [
                (f"a{i}", kinds[i] if i < len(kinds) else "type", t) for i, t in enumerate(filled)]))
            made.append((name, self.classes[ck], filled, kinds))
        if made:
            self.jobs.append((owner, made))
            if prelude:
                self.prelude.append(prelude)

    def run(self) -> None:
        """Parse once with every probe; each owner's argument lists (by id) in `results`."""
        if not self.jobs or self.st.ctx.probe is None:
            return
        head = [deduce_probe.HELPERS, *self.prelude] if self.prelude else []
        tu = self.st.ctx.probe("\n".join([*head, *self.lines]))
        if tu is None:
            return
        ctx = self.st.ctx
        found = _read(tu, ctx.norm(ctx.tu.spelling), ctx.norm)
        expanded: dict[str, dict[str, str]] = {}
        for owner, made in self.jobs:
            got: list[list[str]] = []
            selves: set[str] = set()
            for name, mname, filled, kinds in made:
                # One class instantiation spelled two ways (`Map<int, pool>` from a line of text, `Map<int,
                # ns::pool>` from the AST) is probed once.
                self_type = found.get(mname, {}).get("km_self")
                if self_type is not None and (self_type, tuple(filled)) in selves:
                    continue
                selves.add((self_type or mname, tuple(filled)))
                vals = found.get(name, {})
                if mname not in expanded:
                    cls, params = self.members[mname]
                    expanded[mname] = _expand_members(ctx, cls, params, found.get(mname, {}))
                known = expanded[mname]
                # (a member the parse could not type reads back as its own name: not the compiler's answer)
                args = [v if (v := vals.get(f"a{i}")) and not any(n in known for n in _free_names(v))
                        else _expand(t, known) for i, t in enumerate(filled)]
                # A value the compiler did not evaluate stays unread: its written expression with the class's
                # parameters put in (`std::min(2u, N)` -> `std::min(2u, 1)`) need not be a constant of the
                # parameter's type, and the launch keeps what the other sources give.
                if any(k == "value" and not vals.get(f"a{i}") and not _LITERAL.fullmatch(args[i])
                       for i, k in enumerate(kinds[:len(args)])):
                    continue
                # (a deduction the compiler rejected reads back as its own text: no argument)
                if any("__km_at<" in a for a in args):
                    continue
                if all(args) and not any(n in known for a in args for n in _free_names(a)) and args not in got:
                    got.append(args)
            if got:
                self.results[id(owner)] = got


def resolve(st: _State, insts: dict[tuple[str, int], list[list[str]]], aliases: dict[int, dict[str, str]]
            ) -> Prober:
    """Probe every launch and dependent call written in a class template's scope (one parse); the dependent
    calls' answers are added to the callees' concrete instantiations here, the launches' are applied by
    `apply` once the launches are finished. `aliases` are each launch's local aliases (by id)."""
    prober = Prober(st, insts)
    for rec in st.launches + st.refs:
        if rec.template_args is not None:
            continue
        cls = st.classes.get(rec.host_template) if rec.host_template is not None else None
        member = _member_names(cls) if cls is not None else set()
        local = {k: v for k, v in aliases.get(id(rec), {}).items() if v and k not in member}
        deduce = getattr(rec, "_deduce", None)
        if deduce is not None:
            # The whole list deduced by the compiler from the launch's arguments (deduce_probe), the written
            # leading ones passed explicitly; one name per launch for its declaration.
            kinds = _param_kinds(st, rec)
            name = f"__km_deduce_{len(prober.prelude)}"
            info = {k: substitute(v, local).replace(deduce_probe.NAME, name) for k, v in deduce.items()}
            prober.add(rec, rec.host_template, deduce_probe.texts(info, kinds), kinds,
                       getattr(rec, "_scope", None), force=True, prelude=info["decl"])
            continue
        prober.add(rec, rec.host_template, [substitute(t, local) for t in rec.template_args_text],
                   _param_kinds(st, rec), getattr(rec, "_scope", None))
    leading = _leading_to_launches(st)
    for dc in st.dep_calls:
        callee = st.host_cursors.get(dc.callee)
        kinds = [_KINDS.get(p.kind, "type") for p in _tparams(callee)] if callee is not None else []
        deduce = getattr(dc, "_deduce", None) if dc.callee in leading else None
        if deduce is not None:  # (the written leading arguments and the deduced rest, as for a launch above)
            name = f"__km_deduce_{len(prober.prelude)}"
            info = {k: v.replace(deduce_probe.NAME, name) for k, v in deduce.items()}
            prober.add(dc, dc.caller, deduce_probe.texts(info, kinds), kinds, getattr(dc, "_scope", None),
                       force=True, prelude=info["decl"])
            continue
        prober.add(dc, dc.caller, dc.args_text, kinds, getattr(dc, "_scope", None))
    prober.run()
    for dc in st.dep_calls:
        for args in prober.results.get(id(dc), []):
            _add(st.concrete, dc.callee, args)
        if getattr(dc, "_deduce", None) is not None and prober.results.get(id(dc)):
            # (the compiler's whole lists replace the written leading arguments, which bind too few parameters)
            dc._probed_only = True  # type: ignore[attr-defined]
    return prober


def _leading_to_launches(st: _State) -> set[tuple[str, int]]:
    """Host templates that launch a kernel or call, through dependent calls, one that does: a deduction probe is
    written only for calls of these (a project's wrappers of library algorithms, called from every method of a
    class, took the probe's whole budget before the launches' own deductions)."""
    found = {rec.host_template for rec in st.launches + st.refs if rec.host_template is not None}
    found |= {st.out_of_line.get(k, k) for k in list(found)}
    changed = True
    while changed:
        changed = False
        for dc in st.dep_calls:
            if dc.callee in found and dc.caller not in found:
                found.add(dc.caller)
                changed = True
    return found


def objects(st: _State, insts: dict[tuple[str, int], list[list[str]]]) -> bool:
    """Calls on a class template's member object (`host_chain.ObjectCall`): the object's type read per instantiation
    of the calling class (`decltype(*impl_)` -> `ns::table_impl<long long, 4>`) instantiates the callee's class
    template, and a member template of that class named by the call gets its arguments deduced from the call's
    argument types, as a dependent call of the caller (probed or substituted like any other). One parse; True
    when anything was added."""
    from miner.units.launches.host_chain import _def_key
    from miner.units.launches.sites import _deduce

    prober = Prober(st, insts)
    for oc in st.object_calls:
        prober.add(oc, oc.host, [oc.probe], ["type"], oc.scope, force=True)
    prober.run()
    by_name: dict[str, list[tuple[tuple[str, int], ci.Cursor]]] = {}
    for cls in {id(c): c for c in st.classes.values()}.values():
        key = _key(st.ctx, cls)
        if key is not None:
            name = "::".join((*_enclosing_namespaces(cls), cls.spelling))
            by_name.setdefault(name, []).append((key, cls))
    changed = False
    for oc in st.object_calls:
        for (text,) in prober.results.get(id(oc), []):
            m = re.fullmatch(r"(?:const\s+)?(?:::)?([\w:]+)\s*<(.*)>\s*(?:const\s*)?&*", text.strip())
            if m is None:
                continue
            args = split_top(m.group(2))
            for ckey, cls in by_name.get(m.group(1), []):
                if len(args) != len(_tparams(cls)):
                    continue
                changed |= _add(st.concrete, ckey, args)
                for mkey, fn in list(st.host_cursors.items()):
                    if st.class_keys.get(mkey) != ckey or mkey == ckey or fn.spelling != oc.name:
                        continue
                    got = _deduce(fn, oc.args, oc.names, whole=True)
                    own = scope_params(fn, cls)[1]
                    if not got or len(got) != len(own) or any("type-parameter" in a for a in got):
                        continue
                    dc = _DepCall(oc.host, list(oc.names), _def_key(st.ctx, fn) or mkey, got)
                    if dc not in st.dep_calls:
                        dc._scope = oc.scope  # type: ignore[attr-defined]
                        # Arguments naming the caller's class members (`ref_type`) are the probe's to read: a
                        # text substitution of the parameters would leave them open.
                        members = _member_names(st.classes[oc.host]) | set(_member_texts(st.ctx, st.classes[oc.host]))
                        dc._probed_only = any(n in members for a in got for n in _free_names(a))  # type: ignore[attr-defined]
                        st.dep_calls.append(dc)
                        changed = True
    return changed


def apply(st: _State, prober: Prober) -> None:
    """The compiler's reading of each launch probed (its text named the class's members, which a text
    substitution of the class's parameters leaves open)."""
    for rec in st.launches + st.refs:
        got = prober.results.get(id(rec))
        if got:
            rec.host_template_args = [list(a) for a in got]
            rec.host_defaulted = False
            rec.resolved_text = None


_LITERAL = lazy_re.compile(r"-?\d+[uUlL]*|true|false")
_KINDS = {K.TEMPLATE_TYPE_PARAMETER: "type", K.TEMPLATE_NON_TYPE_PARAMETER: "value",
          K.TEMPLATE_TEMPLATE_PARAMETER: "template"}


def scope_params(fn: ci.Cursor, cls: ci.Cursor) -> tuple[list[str], list[str]]:
    """(the class's parameters, the member template's own) as a method's definition names them: in the class,
    the class's names; out of line, libclang lists the member's own list first, then the class's as written
    there (`template <typename X> template <bool r> void C<X>::f()` gives `r, X`)."""
    names = [p.spelling for p in _tparams(cls)]
    mine = [p.spelling for p in _tparams(fn)]
    if fn.lexical_parent is not None and fn.lexical_parent == cls:
        return names, mine if fn.kind == K.FUNCTION_TEMPLATE else []
    if len(mine) >= len(names):
        own = mine[:len(mine) - len(names)]
        return mine[len(own):], own
    return names, []


def _member_names(cls: ci.Cursor) -> set[str]:
    """The names a class template declares for its scope: member aliases, constants, using-declarations, nested
    classes (`struct mutable_view {...};`, a launch's argument through `auto view = get_mutable_view();`)."""
    return {c.spelling for c in cls.get_children()
            if c.kind in (K.TYPEDEF_DECL, K.TYPE_ALIAS_DECL, K.TYPE_ALIAS_TEMPLATE_DECL, K.VAR_DECL,
                          K.USING_DECLARATION, K.STRUCT_DECL, K.CLASS_DECL, K.CLASS_TEMPLATE) and c.spelling}


def _param_kinds(st: _State, rec: Launch) -> list[str]:
    """`type` or `value` per kernel template parameter (`type` where unknown)."""
    k: Any = st.kernels.get(rec.kernel) if rec.kernel is not None else None
    params = getattr(k, "template_params", None) or []
    return [getattr(p, "kind", "type") for p in params]


def _instance_text(st: _State, cls: ci.Cursor, own: list[str], class_args: list[str]) -> str | None:
    """The class instantiation a probe derives from: `Map<int, pool>`; for a partial specialization, its primary
    with the written pattern's parameters put in (`struct F<GPUDevice, T>` for T = float: `F<GpuDevice, float>`),
    None where the pattern is unknown."""
    if cls.kind != K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION:
        return f"{cls.spelling}<{', '.join(class_args)}>"
    pkey = _key(st.ctx, cls)
    mapping = dict(zip(own, class_args, strict=False))
    for parts in st.partials.values():
        for k, pattern, _params in parts:
            if k == pkey:
                return f"{cls.spelling}<{', '.join(substitute(p, mapping) for p in pattern)}>"
    return None


def _probe_text(name: str, cls: ci.Cursor, base: str, items: list[tuple[str, str, str]]) -> str:
    """A struct derived from one instantiation of the class, one declaration a line (a compiler error is told
    apart by its line): `using a1 = size_type;`, `static constexpr auto a2 = (kTile);`."""
    ns = _enclosing_namespaces(cls)
    body = []
    for item, kind, t in items:
        if kind == "value":
            body.append(f"static constexpr auto {item} = ({t});")
        elif kind == "type":
            body.append(f"using {item} = {t};")
        else:  # a template template argument: its name, read from an alias template
            body.append(f"template <class... KmP> using {item} = {t}<KmP...>;")
    head = "".join(f"namespace {n} {{ " if n else "namespace { " for n in ns)
    tail = " }" * len(ns)
    return f"{head}struct {name} : {base} {{\n" + "\n".join(body) + f"\n}};{tail}"


def _read(tu: ci.TranslationUnit, main: str, norm) -> dict[str, dict[str, str]]:
    """Each probe struct's declarations that compiled: canonical types and evaluated constants, by name."""
    bad: set[int] = set()
    for d in tu.diagnostics:
        if d.severity >= ci.Diagnostic.Error and d.location.file is not None and norm(d.location.file.name) == main:
            bad.add(d.location.line)
    out: dict[str, dict[str, str]] = {}
    stack = list(tu.cursor.get_children())
    while stack:
        c = stack.pop()
        if c.kind == K.NAMESPACE and c.location.file is not None and norm(c.location.file.name) == main:
            stack.extend(c.get_children())
        elif c.kind == K.STRUCT_DECL and c.spelling.startswith(("__km_probe_", "__km_members_")):
            got = out.setdefault(c.spelling, {})
            for ch in c.get_children():
                if ch.location.line in bad:
                    continue
                if ch.kind == K.TYPE_ALIAS_DECL:
                    t = value_spelling.type_spelling(ch.underlying_typedef_type)
                    if t and "type-parameter" not in t and "<dependent" not in t:
                        got[ch.spelling] = t
                elif ch.kind == K.VAR_DECL and (v := _evaluated(ch)) is not None:
                    is_bool = ch.type.get_canonical().kind == ci.TypeKind.BOOL
                    got[ch.spelling] = ("true" if v else "false") if is_bool else str(v)
                elif ch.kind == K.TYPE_ALIAS_TEMPLATE_DECL and (t := _written_template(ch)):
                    got[ch.spelling] = t
    return out


def _free_names(text: str) -> list[str]:
    """Identifiers of a text that are not qualified members (`size_type`, not `base_type::size_type`)."""
    return [m.group(1) for m in re.finditer(r"(?<![\w:.])(?<!->)([A-Za-z_]\w*)", text)]


def _expand(text: str, mapping: dict[str, str]) -> str:
    """Member aliases of the class replaced by what they stand for (names after `::`, `.`, `->` kept)."""
    return re.sub(r"(?<![\w:.])(?<!->)([A-Za-z_]\w*)", lambda m: mapping.get(m.group(1), m.group(1)), text)


def _expand_members(ctx: TUContext, cls: ci.Cursor, params: dict[str, str], probed: dict[str, str]) -> dict[str, str]:
    """Each member type alias of the class in one instantiation: the compiler's canonical type where the probe
    compiled, else its written text with the class's parameters and the other members put in (a member the
    parse could not type, `TemplatedAllocator<thrust::pair<key_type, index_type>>` where the parse lacks a
    library, is still written out for the unit, which is compiled with the real headers)."""
    written = _member_texts(ctx, cls)
    names = set(written)
    out: dict[str, str] = {n[2:]: t for n, t in probed.items()
                           if n.startswith("m_") and not names & set(_free_names(t))}
    for _ in range(8):  # aliases naming aliases, a few levels deep
        changed = False
        for n, t in written.items():
            if n in out and n not in names & set(_free_names(out[n])) and f"m_{n}" in probed \
                    and not names & set(_free_names(probed[f"m_{n}"])):
                continue
            v = _expand(substitute(t, params), {k: x for k, x in out.items() if k != n})
            if out.get(n) != v:
                out[n], changed = v, True
        if not changed:
            break
    return out


_MEMBER_ALIAS = lazy_re.compile(r"(?<![\w:])(?:using\s+([A-Za-z_]\w*)\s*=\s*([^;{}]+);"
                           r"|typedef\s+([^;{}]+?)\s*\b([A-Za-z_]\w*)\s*;)")


def _member_types(cls: ci.Cursor) -> list[str]:
    return [c.spelling for c in cls.get_children() if c.kind in (K.TYPEDEF_DECL, K.TYPE_ALIAS_DECL)]


def _member_texts(ctx: TUContext, cls: ci.Cursor) -> dict[str, str]:
    """A class template's member type aliases as written (`using map_type = map<key_type, T>;`), read from the
    class body's text: one the parse could not type is not in the AST at all, yet the unit needs it."""
    e = cls.extent
    if e.start.file is None:
        return {}
    raw = ctx.read(ctx.norm(e.start.file.name))[e.start.offset:e.end.offset].decode("utf-8", "replace")
    text = _COMMENT.sub(lambda m: " " * len(m.group()), raw)
    depth, level = 0, []
    for ch in text:  # brace depth of each character: members sit at depth 1
        depth += (ch == "{")
        level.append(depth)
        depth -= (ch == "}")
    out: dict[str, str] = {}
    for m in _MEMBER_ALIAS.finditer(text):
        if level[m.start()] != 1:
            continue
        name, body = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        out.setdefault(name, re.sub(r"\s*(::|<|>|,)\s*", lambda x: x.group(1) + (" " if x.group(1) == "," else ""),
                                    " ".join(body.split())))
    return out


def _written_template(c: ci.Cursor) -> str:
    """`template <class... KmP> using t2 = ns::pool<KmP...>;` -> `ns::pool` (a template template argument)."""
    for ch in c.get_children():
        if ch.kind == K.TYPE_ALIAS_DECL:
            spelled = ch.underlying_typedef_type.spelling
            return spelled.split("<", 1)[0].strip()
    return ""
