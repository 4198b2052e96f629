"""A build batch re-qualifies `::name` for names a unit declares at its top level (the unit now lives in a
namespace of its own). Units that inline a large header library are megabytes long: the look-back before each
`::` reads a window, not the whole prefix (which made one batch take minutes to write)."""

from __future__ import annotations

import time

from miner.builder.batch import _requalify


def test_requalify_rewrites_own_names_only() -> None:
    body = ("int helper() { return 1; }\n__device__ int k() { return ::helper() + ::abs(-1) + x::helper(); }\n"
            "struct S { int v; };\nint g = sizeof(::S) + (int)(::helper());\nint h = ::helper;   \n")
    out = _requalify(body, "km_b0_")
    assert "return km_b0_::helper() + ::abs(-1) + x::helper();" in out   # ::abs is not the unit's; x::helper qualified
    assert "sizeof(km_b0_::S)" in out and "(int)(km_b0_::helper())" in out and "h = km_b0_::helper;" in out


def test_requalify_is_linear_in_the_body() -> None:
    line = "__device__ inline int use{i}(int v) {{ return ::helper() + v;{pad} }}\n"
    body = "__device__ inline int helper() { return 1; }\n" + "".join(
        line.format(i=i, pad=" " * 40) for i in range(40000))   # ~3 MB, 40000 `::helper`
    t0 = time.monotonic()
    out = _requalify(body, "km_b0_")
    assert out.count("km_b0_::helper()") == 40000
    assert time.monotonic() - t0 < 20   # the whole-prefix look-back: hours
