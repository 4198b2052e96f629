"""Which methods of an implicitly instantiated class template instance C++ would instantiate.

A member of type `Mat<curandState>` instantiates the class, but only the methods the program uses on that instance
get their bodies instantiated; a launch in `Mat<T>::Fill` takes `T = curandState` only if `Fill` is called on such
an instance (or the class is explicitly instantiated). Taking every method for every instance wrote units the
original never compiles (`FillKernel<curandState>`: "no operator - matches"). Calls are recorded from the walk's
non-dependent code (`_walk_body`: the callee is a method of a class template specialization); an instance is
filtered only where a concrete type names it in this translation unit (C++ instantiates per translation unit), no
explicit instantiation names it, no call of the method on it was seen, and the class's own file does not call the
method by name (another method may call it: `this->Fill()` is dependent and invisible here).
"""

from __future__ import annotations

import re

import clang.cindex as ci

from miner.units.launches.cursors import _key, _primary, _template_args
from miner.units.launches.record import K
from miner.units.launches.state import _add, _State

_CLASSES = (K.CLASS_DECL, K.STRUCT_DECL)


def note_call(st: _State, ref: ci.Cursor | None) -> None:
    """A call whose callee is a method or constructor of a concrete class template specialization."""
    if ref is None or ref.kind not in (K.CXX_METHOD, K.CONSTRUCTOR, K.FUNCTION_TEMPLATE):
        return
    parent = ref.semantic_parent
    if parent is None or parent.kind not in _CLASSES or parent.get_num_template_arguments() <= 0:
        return
    prim = _primary(parent)
    key = _key(st.ctx, prim) if prim.kind == K.CLASS_TEMPLATE else None
    args = _template_args(parent)
    if key is None or key[0] not in st.ctx.inputs or not args:
        return
    st.method_calls.setdefault((key, tuple(args)), set()).add("" if ref.kind == K.CONSTRUCTOR else ref.spelling)
    # (the call shows the instance exists here, as a type naming it would: `p->Fill(0.5f)` through a
    # `std::unique_ptr<Mat<float>>` member, whose type names only the smart pointer)
    _add(st.concrete, key, args)
    st.typed_classes.add((key, tuple(args)))


def used_instances(st: _State, class_key: tuple[str, int], method: str, known: list[list[str]]) -> list[list[str]]:
    """Of a class template's instances, those whose `method` C++ instantiates in this translation unit (all of them
    where unsure). None left: this TU instantiates the method for none of them (its launch gets the defaults,
    which another TU's real arguments replace when the results are merged)."""
    return [args for args in known if _used(st, class_key, method, args)]


def _used(st: _State, class_key: tuple[str, int], method: str, args: list[str]) -> bool:
    cls = st.classes.get(class_key)
    # (libclang spells a class template's constructor `slot_map<Key, Value>`)
    if cls is None or method.split("<", 1)[0].strip() in (cls.spelling, "~" + cls.spelling):
        return True  # a constructor or destructor: every instance has run one
    inst = (class_key, tuple(args))
    # Sure only of an instance a concrete type names in this translation unit (a member, a variable, a base
    # class), which no explicit instantiation names: one that a host template's instantiation brought may be
    # used in that template's dependent code, which records no call.
    if inst in st.explicit_classes or inst not in st.typed_classes:
        return True
    if _virtual(cls, method):
        return True  # (an instance that exists has a vtable: every virtual method of it is instantiated)
    return method in st.method_calls.get(inst, ()) or _called_inside(st, class_key, method)


def _virtual(cls: ci.Cursor, method: str) -> bool:
    """Whether the class declares `method` virtual (or overriding): called through a base pointer, which names no
    call of it on the instance."""
    return any(ch.kind == K.CXX_METHOD and ch.spelling == method and ch.is_virtual_method()
               for ch in cls.get_children())


def _called_inside(st: _State, class_key: tuple[str, int], method: str) -> bool:
    """Whether the class's file calls `method` beyond its declaration and one out-of-line definition."""
    cache = st.ctx.__dict__.setdefault("_method_mentions", {})
    if (class_key, method) not in cache:
        text = st.ctx.read(class_key[0]).decode("utf-8", "replace")
        cache[(class_key, method)] = len(re.findall(rf"(?<![\w~]){re.escape(method)}\s*(?:<[^;{{}}()]*>\s*)?\(",
                                                    text)) > 2
    return cache[(class_key, method)]
