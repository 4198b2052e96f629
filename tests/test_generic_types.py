"""A generic source included once per scalar type, its base library missing (tests/fixtures/generic_types): the
translation unit repeats the same errors per type and function. Every analysis of the unit asked libclang for
all of them again (seven passes); each diagnostic is read once now (`cindex_speed`: records per TU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES

GENERIC = FIXTURES / "generic_types"


def _parse(path: Path):
    from miner.frontends import clang_frontend
    from miner.frontends.config import ParseConfig
    from miner.units.analysis import analyse

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    inputs = {str(p.resolve()) for p in GENERIC.rglob("*") if p.suffix in (".cu", ".h")}
    return clang_frontend.parse(str(path.resolve()), ParseConfig(), inputs, analyse=analyse)


def test_each_diagnostic_of_a_unit_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import clang.cindex as ci

    lib = ci.conf.lib
    get = lib.clang_getDiagnostic
    reads: list[int] = []  # the index of each diagnostic read (iterating asks until libclang answers none)

    def counted_get(tu, i):  # noqa: ANN001, ANN202 - the bindings' ctypes signature
        diag = get(tu, i)
        if diag:
            reads.append(i)
        return diag

    monkeypatch.setattr(lib, "clang_getDiagnostic", counted_get)
    res = _parse(GENERIC / "scale.cu")
    assert res.error is None and res.unit_error is None, (res.error, res.unit_error)
    kernels = {k.name: k for k in res.kernels}
    assert set(kernels) == {"scale_kernel", "shift_kernel"}
    diagnostics = max(reads) + 1
    # (eight types x three functions, each with its unknown names: many errors, every one in the kernels' record)
    assert diagnostics >= 8 * 3 * 2 and kernels["scale_kernel"].diagnostics["errors"] >= 8 * 3 * 2, diagnostics
    # Each read once (the whole parse: 56 x 7 reads when every analysis asked libclang again)
    assert len(reads) == diagnostics, (len(reads), diagnostics)
    # What the analyses made of them is still there: both kernels' launches, found in the generic functions the
    # parse could not type. (Only the first type's: the other inclusions' launches sit at the same place.)
    launched = {tuple(site["kernel"]) for site in res.analysis["launches"]}
    assert launched == {(k.path, k.start_offset) for k in res.kernels}, launched
