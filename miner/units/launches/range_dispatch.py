"""Range dispatch: a helper that runs `Functor<N>::run(...)` for every N between two bounds.

`DispatchRange<NormsFunctor, MIN_D, MAX_D>(d, args...)` (a function template whose first parameter is a
template template parameter and whose value parameters come in `min`/`max` pairs) picks the runtime `d` among
compile-time values through a recursive helper struct: C++ instantiates the functor for every value of the range,
and the functor's static method launches the kernel. The recursion itself is dependent code the walk cannot follow,
so the call's bounds stand for it: each value (each combination, for a two-dimensional helper) is an instance of the
functor class, whose methods lend it to their launches. A range too large to mine whole (2..1024) gives its first
values and its last.
"""

from __future__ import annotations

import itertools

import clang.cindex as ci

from miner import lazy_re
from miner.units.launches import value_spelling
from miner.units.launches.cursors import _key, _primary, _tparams
from miner.units.launches.record import K
from miner.units.launches.state import _add, _State

_MAX_INSTANCES = 256
_SAMPLED = 16  # instances kept of a range too large to mine whole
_TPARAM_KINDS = (K.TEMPLATE_TYPE_PARAMETER, K.TEMPLATE_NON_TYPE_PARAMETER, K.TEMPLATE_TEMPLATE_PARAMETER)
_MIN, _MAX = lazy_re.compile(r"(?i)min"), lazy_re.compile(r"(?i)max")


def note_call(st: _State, children: list[ci.Cursor], ref: ci.Cursor | None) -> None:
    if ref is None or ref.kind != K.FUNCTION_DECL or ref.get_num_template_arguments() <= 1 or not children:
        return
    prim = _primary(ref)
    params = _tparams(prim) if prim.kind == K.FUNCTION_TEMPLATE else []
    if not params or params[0].kind != K.TEMPLATE_TEMPLATE_PARAMETER:
        return
    # The functor takes the helper's type arguments (`Kernel<T, N, M>` of `Dispatch2D<Kernel, T, minN, ...>`),
    # then one value per range.
    shape = [p.kind for p in params[0].get_children() if p.kind in _TPARAM_KINDS]
    types: list[str] = []
    values: list[tuple[str, int]] = []
    for i, p in enumerate(params[1:], start=1):
        if i >= ref.get_num_template_arguments():
            break
        try:
            kind = ref.get_template_argument_kind(i)
        except ValueError:  # (a pack: the helper's forwarded arguments)
            break
        if p.kind == K.TEMPLATE_TYPE_PARAMETER and kind == ci.TemplateArgumentKind.TYPE:
            types.append(value_spelling.type_spelling(ref.get_template_argument_type(i)))
        elif p.kind == K.TEMPLATE_NON_TYPE_PARAMETER and kind == ci.TemplateArgumentKind.INTEGRAL:
            values.append((p.spelling, ref.get_template_argument_value(i)))
        else:
            break
    ranges = [range(lo, hi + 1) for (a, lo), (b, hi) in zip(values[::2], values[1::2], strict=False)
              if _MIN.search(a) and _MAX.search(b) and lo <= hi]
    if not ranges or len(ranges) * 2 != len(values) or shape != (
            [K.TEMPLATE_TYPE_PARAMETER] * len(types) + [K.TEMPLATE_NON_TYPE_PARAMETER] * len(ranges)):
        return
    functor = next((d.referenced for d in children[0].walk_preorder() if d.kind == K.TEMPLATE_REF
                    and d.referenced is not None and d.referenced.kind == K.CLASS_TEMPLATE), None)
    key = _key(st.ctx, functor)
    if key is None or key[0] not in st.ctx.inputs:
        return
    for combo in itertools.product(*_sampled(ranges)):
        _add(st.concrete, key, [*types, *(str(v) for v in combo)])


def _sampled(ranges: list[range]) -> list[list[int]]:
    """Every value, or where the combinations pass _MAX_INSTANCES, the first values of each range and its last:
    each one an instantiation the original compiles, not all of them (a range of 2..1024 is 1023 kernels)."""
    total = 1
    for r in ranges:
        total *= len(r)
    if total <= _MAX_INSTANCES:
        return [list(r) for r in ranges]
    keep = max(1, int(_SAMPLED ** (1 / len(ranges))) - 1)
    return [list(r) if len(r) <= keep + 1 else [*r[:keep], r[-1]] for r in ranges]
