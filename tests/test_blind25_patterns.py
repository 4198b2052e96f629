"""`extract --build` on tests/fixtures/blind25: patterns found on the twenty-fifth set of repositories (issue 14,
scripts/corpus_repos_blind25.txt, development data in session 23), each reproduced by code of our own and judged
by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta, unit_texts

_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def macro_per_inclusion(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind25/macro_per_inclusion")


@_nvcc
def test_a_header_included_once_per_macro_value_is_written_once_per_inclusion(
        macro_per_inclusion: dict[str, Any]) -> None:
    """`scaled_ops.h` has no include guard: `lazy.h` includes it three times, under `#define SCALED_T float`,
    `double` and `int`, each `#undef`'d after its `#include`, and each inclusion declares the operators of one
    scalar type. The unit wrote the operators once, under the first definition: `scale_view<double>` found no
    `operator*` for `View<double> * double`. Each operator is written once per inclusion under the definition in
    force there, and both instantiations build."""
    m = only_meta(macro_per_inclusion, "scale_view")
    for unit in unit_texts(macro_per_inclusion, m):
        for t in ("float", "double", "int"):
            assert f"#define SCALED_T {t}" in unit, unit
    assert build_statuses(m) == {"float": "ok", "double": "ok"}, build_statuses(m)


@_nvcc
def test_a_scoped_macro_after_the_kernel_comes_with_the_pieces_inside_its_scope(
        macro_per_inclusion: dict[str, Any]) -> None:
    """`#define HALVED_T float` / `#include "halved_ops.h"` / `#undef HALVED_T` follows the kernels' header: the
    definition is in force at neither kernel, so it was left out as a scoped macro of another place, though the
    `operator/` the unit takes from that scope names it ("identifier HALVED_T is undefined"). A scoped definition
    whose scope holds a piece the unit takes comes with it."""
    m = only_meta(macro_per_inclusion, "halve_view")
    (unit,) = unit_texts(macro_per_inclusion, m)
    assert "#define HALVED_T float" in unit, unit
    assert build_statuses(m) == {"float": "ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def overload_by_reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind25/overload_by_reference")


@_nvcc
def test_a_dependent_call_reaches_only_the_overloads_its_arguments_can_bind_to(
        overload_by_reference: dict[str, Any]) -> None:
    """`Grid::reduce` is an overload set of member templates whose same-length lists differ by a `Grid &`
    parameter: `reduce(target, red, post, cudaStream_t(0))` cannot reach `reduce(Red, Pre, Post, Grid &)` (a
    stream does not bind to `Grid &`), `reduce(red, Ident(), post, target)` in `reduce(Red, Post, Grid &)` cannot
    reach `reduce(Grid &, Red, Post, cudaStream_t)` for a `Red` that is no `Grid`, and four arguments do not fill
    five parameters without defaults. Deduced by position, those overloads pushed functors into the wrong
    parameters: `reduce_rows<Ident, Ident, Keep>` ("class Ident has no member init"), `<Sum, Ident, Ident>`
    ("cannot be called with the given argument list"), `<Grid, Sum, Keep>`, `<Sum, Keep, CUstream_st *>`. Only the
    two instantiations the program makes remain, and both build."""
    m = only_meta(overload_by_reference, "reduce_rows")
    assert sorted(i["args"] for i in m["instantiations"]) == [["Sum", "Ident", "Keep"], ["Sum", "Square", "Keep"]], \
        [i["args"] for i in m["instantiations"]]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def parameter_named_like_a_class(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind25/parameter_named_like_a_class")


@_nvcc
def test_template_arguments_are_put_in_one_pass(parameter_named_like_a_class: dict[str, Any]) -> None:
    """`apply_plan<DstPlan, Plan>` launched as `apply_plan<lz::Plan<lz::Buffer>, lz::Plan<lz::Ones>>`: the
    launcher's parameter `DstPlan dst` took `lz::Plan<lz::Buffer>`, and then the `Plan` of that value was
    replaced by the second argument (`lz::lz::Plan<lz::Ones><lz::Buffer>`: "name followed by '::' must be a class
    or namespace name"). Each parameter's name is replaced once, in the kernel's own text only."""
    m = only_meta(parameter_named_like_a_class, "apply_plan")
    (unit,) = unit_texts(parameter_named_like_a_class, m)
    assert "lz::Plan<lz::Buffer> km_dst" in unit, unit
    assert build_statuses(m) == {"lz_Plan_Buffer_lz_Plan_Ones": "ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def toolkit_switch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind25/toolkit_switch")


@_nvcc
def test_a_definition_under_a_toolkit_option_is_the_cuda_builds(toolkit_switch: dict[str, Any]) -> None:
    """`lib/CMakeLists.txt` gives `-DVENDOR_NV` under `if(USE_CUDA_TOOLKIT)` (`-DVENDOR_AMD` under
    `if(USE_ROCM_TOOLKIT)`), inherited by `lib/src/gpu`; the kernel's helper picks its warp exchange by `#if
    VENDOR_NV` / `#elif VENDOR_AMD` / `#else #error`. `USE_CUDA_TOOLKIT` read as an option of no platform, the
    definition was dropped and the unit stopped at the `#error`. A `..._TOOLKIT` switch names its platform, as
    `WITH_CUDA` does: the unit carries `-DVENDOR_NV` and builds."""
    m = only_meta(toolkit_switch, "broadcast_lane0")
    assert "-DVENDOR_NV" in m["build_flags"]["nvcc"], m["build_flags"]
    assert "-DVENDOR_AMD" not in m["build_flags"]["nvcc"], m["build_flags"]
    assert build_statuses(m) == {"float": "ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def constexpr_argument(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind25/constexpr_argument")


@_nvcc
def test_a_constexpr_function_computing_a_value_argument_comes_with_the_unit(
        constexpr_argument: dict[str, Any]) -> None:
    """`launch_sum_tiles<W>` launches `sum_tiles<W, rows_per_thread(W)>`, `rows_per_thread` a host `constexpr`
    function: the instantiations are `<8, rows_per_thread(8)>` and `<32, rows_per_thread(32)>`, whose units lacked
    the function ("identifier rows_per_thread is undefined"). A constexpr function a template argument names is
    taken into the closure like a device function given as an argument, and both units build."""
    m = only_meta(constexpr_argument, "sum_tiles")
    for unit in unit_texts(constexpr_argument, m):
        assert "constexpr int rows_per_thread(int width)" in unit, unit
    assert set(build_statuses(m).values()) == {"ok"} and len(m["instantiations"]) == 2, build_statuses(m)


@pytest.fixture(scope="module")
def undef_in_skipped_branch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind25/undef_in_skipped_branch")


@_nvcc
def test_an_undef_in_a_skipped_branch_closes_no_definition(undef_in_skipped_branch: dict[str, Any]) -> None:
    """`portable.h` defines `fall_through_` as a comment, then under `#if __cplusplus >= 201703L` `#undef`s it and
    defines `[[fallthrough]];`, and under the `#elif` (skipped) `#undef`s it again. That skipped `#undef` was read
    as the end of the C++17 definition's scope, so the unit took neither definition ("identifier fall_through_ is
    undefined"). Only `#undef`s the preprocessor processed close a definition: the unit carries the C++17 one."""
    m = only_meta(undef_in_skipped_branch, "pad_tail")
    (unit,) = unit_texts(undef_in_skipped_branch, m)
    assert "#define fall_through_ [[fallthrough]];" in unit, unit
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def partial_specialization_launcher(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind25/partial_specialization_launcher")


@_nvcc
def test_a_class_instantiation_a_partial_specialization_matches_is_not_the_primarys(
        partial_specialization_launcher: dict[str, Any]) -> None:
    """`launch_tile<R, U>::operator()` launches `tile_sums<R, U>`; `launch_tile<256, U>` is a partial
    specialization that launches nothing (the kernel's `float partial[4 - R / 64]` has no element there).
    `run_tile<64>` and `run_tile<256>` instantiate `launch_tile<64, 2>`, `<64, 1>`, `<256, 2>`, `<256, 1>`; the
    last two went to the primary as well, whose launch then gave `tile_sums<256, ...>` ("zero-sized variable").
    An instantiation a partial specialization matches is that specialization's only: two units, both build."""
    m = only_meta(partial_specialization_launcher, "tile_sums")
    assert sorted(i["args"] for i in m["instantiations"]) == [["64", "1"], ["64", "2"]], \
        [i["args"] for i in m["instantiations"]]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def auto_pointer_argument(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind25/auto_pointer_argument")


@_nvcc
def test_a_kernel_argument_declared_auto_pointer_is_deduced_from_its_initializer(
        auto_pointer_argument: dict[str, Any]) -> None:
    """`copy_peaks<T>` (explicitly instantiated for float and double) launches `copy_peak<<<1, 1>>>(targetPart,
    sourcePart, ...)` with `auto *targetPart = target + part;`: the parse of the template spells that type `auto
    *`, which the deduction took as the argument itself (`copy_peak<auto>`: "auto is not allowed here"). A type
    holding a placeholder is read from the local's initializer, a pointer sum from its pointer operand (`T *`):
    `copy_peak<float>` and `<double>`, both built."""
    m = only_meta(auto_pointer_argument, "copy_peak")
    assert sorted(i["args"] for i in m["instantiations"]) == [["double"], ["float"]], \
        [i["args"] for i in m["instantiations"]]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def library_static_member(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind25/library_static_member")


@_nvcc
def test_a_static_data_member_of_a_library_type_the_unit_lacks_is_left_out(
        library_static_member: dict[str, Any]) -> None:
    """`map_cells<Scaled::ScaleOp>` is launched from `net.cu`, whose closure of the functor takes its enclosing
    class, the base's virtual host methods and so the matrix class `Grid`, whose static data members keep cuBLAS
    handles (`static std::map<int, cublasHandle_t> handles_;`). This toolkit has no cuBLAS header and the parse's
    stand-in is no unit's: member functions naming cuBLAS were left out, static data members were not ("identifier
    cublasHandle_t is undefined"). A static data member is left out for the same reasons as a non-static one.
    (Mined from inside this repository, the stand-in headers are project context and the unit copied their
    typedef: the test copies the fixture out, as a real checkout is.)"""
    m = only_meta(library_static_member, "map_cells")
    (unit,) = unit_texts(library_static_member, m)
    assert "cublasHandle_t> handles_" not in unit, unit
    assert build_statuses(m) == {"Scaled_ScaleOp": "ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def file_stream_member(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind25/file_stream_member")


@_nvcc
def test_a_class_with_a_file_stream_member_brings_fstream(file_stream_member: dict[str, Any]) -> None:
    """`Box<T>`, whose device `wrap` the kernel calls, keeps a `std::fstream` member; `box.h` includes
    `<fstream>`, but that was no header a unit keeps, and the name's declaration (the `typedef` in `<iosfwd>`)
    came through the `<iostream>` the kernel's file includes first, which the unit has: "incomplete type
    std::fstream is not allowed". `<fstream>` (and the other C++ standard headers) are kept like `<sstream>`."""
    m = only_meta(file_stream_member, "wrap_coords")
    for unit in unit_texts(file_stream_member, m):
        assert "#include <fstream>" in unit, unit
    assert build_statuses(m) == {"float": "ok", "double": "ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def dispatch_invalid_local(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind25/dispatch_invalid_local")


@_nvcc
def test_a_written_dispatch_alias_in_a_call_the_parse_could_not_type_is_bound_per_type(
        dispatch_invalid_local: dict[str, Any]) -> None:
    """`launch_scale_rows<scalar_t, int>(in, offsets, out, rows)` inside `AT_DISPATCH_FLOATING_TYPES`, where
    `offsets` is initialized through an ATen operator the parse's torch stand-in lacks: the local is invalid, the
    call is no resolved specialization but an overload set whose arguments were read as written, `scalar_t`
    among them ("identifier scalar_t is undefined"). The dispatch's case blocks bind `scalar_t` to float and
    double around the call: four instantiations, all built."""
    m = only_meta(dispatch_invalid_local, "scale_rows_kernel")
    assert sorted(i["args"] for i in m["instantiations"]) == [
        ["double", "int"], ["double", "long"], ["float", "int"], ["float", "long"]], \
        [i["args"] for i in m["instantiations"]]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def functors_of_two_units(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind25/functors_of_two_units")


@_nvcc
def test_a_type_an_earlier_merge_added_serves_every_unit_that_needs_it(
        functors_of_two_units: dict[str, Any]) -> None:
    """`map_values`'s closure is taken in `a_copy.cu`, which launches nothing; `b_scale.cu` and `c_shift.cu` each
    launch it with a functor nested in their own layer class, derived from `Layer`. The first merge added `Buffer`
    and `Layer` for `ScaleLayer`'s names only; the second found them known and did not add them again, so the
    unit of `map_values<ShiftLayer::ShiftOp>` had `ShiftLayer : public Layer` without `Layer` ("not a class or
    struct name"). A known piece an earlier merge added is emitted for the later merge's names too, every piece of
    its name and kind: `class Buffer;` before `typedef std::vector<Buffer *> BufferList;` shares the definition's,
    and extending the definition alone left the typedef naming an undeclared class."""
    m = only_meta(functors_of_two_units, "map_values")
    assert build_statuses(m) == {"ScaleLayer_ScaleOp": "ok", "ShiftLayer_ShiftOp": "ok"}, build_statuses(m)
