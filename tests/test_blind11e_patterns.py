"""`extract --build` on tests/fixtures/blind11e: patterns left on the eleventh set's development repos (issue 14,
scripts/corpus_repos_blind11.txt: lmdeploy's and mlx's kernels, session 15), each reproduced by code of our own
and judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, build_statuses, extract_and_build, only_meta, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind11e")


def _args(meta: dict[str, Any]) -> list[dict[str, str]]:
    return [inst["template_args"] for inst in meta["instantiations"]]


def test_a_lambda_of_several_tag_parameters_is_launched_once_per_call(dataset: dict[str, Any]) -> None:
    """`invoke(Int<8>, Int<4>, Int<1>)` and two more calls of a lambda of three `auto` parameters, from another
    lambda and in a plain function (whose calls name the lambda's `operator()` first): only one-parameter lambdas
    were read, so `width.value` stayed unknown and the kernel got the guess 128 (its static assertion failed).
    Each call is one instantiation; the tags of different calls are never crossed."""
    m = only_meta(dataset, "gate_kernel")
    assert sorted((a["kWidth"], a["kItems"], a["kClear"]) for a in _args(m)) == [
        ("160", "10", "false"), ("64", "16", "true"), ("8", "4", "true")]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    m = only_meta(dataset, "flatten_kernel")
    assert sorted((a["kDim"], a["kCta"]) for a in _args(m)) == [("128", "64"), ("64", "32")]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_host_friend_defined_in_its_class_is_declared_only(dataset: dict[str, Any]) -> None:
    """`friend std::ostream& operator<<(std::ostream& os, const Queue& q) { os << q.impl_; ... }` in a host class
    that a unit takes (its `==` belongs to the overload set of a device `==`): the unit has `<memory>`, whose
    `std::ostream` is incomplete, so printing the `shared_ptr` failed ("no operator "<<" matches", 28 of lmdeploy's
    failures). A host-only friend defined in its class is found by argument lookup only; no device code calls
    it, so it is declared only, as a host member is."""
    m = only_meta(dataset, "count_equal")
    (unit,) = unit_texts(dataset, m)
    assert "friend std::ostream& operator<<(std::ostream& os, const Queue& q)\n    ;" in unit
    assert "os << q.impl_" not in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_fetched_librarys_include_is_no_copy_of_a_project_folder(dataset: dict[str, Any]) -> None:
    """`#include <fmtx/format.h>` of a library the build fetches (`FetchContent_Declare(fmtx ...)`, `fmtx::fmtx`):
    the tree has no `fmtx/`, and the copied-headers rule read the project's own `gemm/format.h` as it because the
    build files name `fmtx`. That header includes the class reading `bits<T>` before `bits` is defined (an include
    cycle), so the unit put `SubPtr` first ("identifier bits is undefined", lmdeploy's `fmt/format.h`). Only a build
    that writes the folder into a path (a copy's destination) counts."""
    m = only_meta(dataset, "scale_packed")
    (unit,) = unit_texts(dataset, m)
    assert unit.index("inline constexpr int bits") < unit.index("struct SubPtr")
    assert "struct Format" not in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_lambda_called_with_type_tags_is_launched_once_per_type(dataset: dict[str, Any]) -> None:
    """`invoke(t{})` for each dispatched type (in a case macro), read back as `using T = decltype(t);`, and a lambda
    whose first parameter is another lambda's (`dispatch(uint8_t{})`, `dispatch(T{})` calling `invoke(tkv,
    std::integral_constant<int, 64>{})`): only integral tags were read, so `T` and `Tkv` stayed unknown and the
    kernels got the guess `float` (lmdeploy's `TM_DISPATCH_PRIMARY_DTYPES(dtype, invoke)` and `flattenKV_v2`)."""
    m = only_meta(dataset, "act_kernel")
    assert sorted((a["kVec"], a["T"]) for a in _args(m)) == [("4", "__half"), ("4", "double")]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    m = only_meta(dataset, "store_kernel")
    assert sorted((a["T"], a["Tkv"], a["kDim"]) for a in _args(m)) == [
        ("float", "float", "128"), ("float", "float", "64"), ("float", "unsigned char", "128"),
        ("float", "unsigned char", "64")]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_lambda_handed_to_a_dispatch_function_takes_the_tags_it_is_called_with(dataset: dict[str, Any]) -> None:
    """`dispatch_float_types(dt, [&](auto type_tag) { using CTYPE = typename decltype(type_tag)::type; ... })`, whose
    body's cases call `f(type_identity<float>{})`, and `dispatch_bool(v, [&](auto large) {...})` calling
    `f(std::true_type{})` / `f(std::false_type{})` (mlx launches nearly every kernel so): the lambda's parameters
    were unknown, so the kernels got guesses their static assertions reject. They take the tags of the calls in
    the dispatch function's body; an identity wrapper's tag stands for the type it holds."""
    m = only_meta(dataset, "fill_kernel")
    got = sorted((a["T"], a["IdxT"]) for a in _args(m))
    assert [t for t, _ in got] == ["double", "double", "float", "float"], got
    assert {i for _, i in got} == {"std::conditional_t<true, long, int>", "std::conditional_t<false, long, int>"}
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    m = only_meta(dataset, "sum_kernel")
    assert sorted(a["BLOCK_DIM"] for a in _args(m)) == ["256", "32"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_grid_sized_with_libcuxx_ceil_div_keeps_the_dispatch_call(dataset: dict[str, Any]) -> None:
    """`dispatch_width(cuda::ceil_div(n, N_READS), [&](auto width) { k<width()><<<...>>>(...); })`: the parse's CCCL
    stand-in for `<cuda/cmath>` declared no `ceil_div`, the call was invalid and its lambda, with the launch inside,
    dropped out of the AST (mlx sizes 58 grids so). A parse shim declares libcu++'s integer helpers; the unit
    includes the real header."""
    m = only_meta(dataset, "widen_kernel")
    assert sorted(a["WIDTH"] for a in _args(m)) == ["4", "8"]
    (unit, _) = unit_texts(dataset, m)
    assert "#include <cuda/cmath>" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_parsed_translation_unit_is_freed_after_its_analysis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A parse worker parses translation unit after translation unit (`--jobs 1`: one worker); an `lru_cache` on a
    method of the vendored-library finder, keyed by the instance, held each TU's context and through it libclang's
    whole AST, so memory grew with every file (mlx's CUDA backend: 7.4 GB, killed for memory before its builds
    began). After each parse none of the worker's translation units is alive (counted in the worker, which the
    fork hands these patches, and written to a file)."""
    import gc
    import weakref

    import clang.cindex as ci

    from miner.cli import main
    from miner.frontends import clang_frontend

    alive: list[weakref.ref[Any]] = []
    real = ci.TranslationUnit.from_source.__func__  # type: ignore[attr-defined]
    real_parse = clang_frontend.parse
    counts = tmp_path / "alive.txt"

    def from_source(cls: Any, *args: Any, **kwargs: Any) -> Any:
        tu = real(cls, *args, **kwargs)
        alive.append(weakref.ref(tu))
        return tu

    def parse(*args: Any, **kwargs: Any) -> Any:
        res = real_parse(*args, **kwargs)
        gc.collect()
        with open(counts, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()} {len(alive)} {sum(r() is not None for r in alive)}\n")
        return res

    monkeypatch.setattr(ci.TranslationUnit, "from_source", classmethod(from_source))
    monkeypatch.setattr(clang_frontend, "parse", parse)
    monkeypatch.setenv("KM_PARSE_CACHE", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    src = tmp_path / "two_units"
    shutil.copytree(FIXTURES / "blind11e" / "two_units", src)
    assert main(["extract", str(src), "-o", str(tmp_path / "out"), "-j", "1", "-q"]) == 0
    rows = [line.split() for line in counts.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 2 and len({pid for pid, _, _ in rows}) == 1, rows  # (one worker parsed them all)
    assert int(rows[-1][1]) >= 2, rows
    assert [still for _, _, still in rows] == ["0"] * len(rows), rows
