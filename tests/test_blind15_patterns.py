"""`extract --build` on tests/fixtures/blind15: patterns found on the fifteenth set of repositories (issue 14,
scripts/corpus_repos_blind15.txt, development repos since session 16), each reproduced by code of our own and
judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import (
    FIXTURES,
    build_statuses,
    extract_and_build,
    load_dataset,
    only_meta,
    run_miner,
    unit_texts,
)

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


def _mine_sub(tmp_path_factory: pytest.TempPathFactory, fixture: str, sub: str) -> dict[str, Any]:
    """Mine one folder of a fixture project, the project being the whole fixture (scripts/mine_corpus.py's way)."""
    name = Path(fixture).name
    src = tmp_path_factory.mktemp(f"{name}-src") / name
    shutil.copytree(FIXTURES / fixture, src)
    out = tmp_path_factory.mktemp(f"{name}-out")
    cache = tmp_path_factory.mktemp(f"{name}-cache")
    proc = run_miner("extract", src / sub, "-o", out, "--project", src, "--build", "-j", "2",
                     env={"XDG_CACHE_HOME": str(cache)}, timeout=600)
    return {"proc": proc, "out": out, "metas": load_dataset(out), "src": src}


@pytest.fixture(scope="module")
def umbrella_lib(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _mine_sub(tmp_path_factory, "blind15/umbrella_lib", "include/sig")


def test_a_kernel_header_reached_only_through_the_public_header_is_parsed_in_a_program_that_includes_it(
        umbrella_lib: dict[str, Any]) -> None:
    """A header-only library mined from its header folder: `scale.cuh` includes nothing and calls
    `detail::times`, declared in `util.h`, which names `bare_t` of `traits.h` without including it; only the
    public header `include/sig.h` (outside the mined folder) includes the three in order, and the example program
    includes that. The kernel header was parsed alone ("name followed by :: must be a class or namespace name")."""
    m = only_meta(umbrella_lib, "scale_kernel")
    assert m["parse_context"]["translation_unit"].endswith("examples/scale_example.cu"), m["parse_context"]
    assert m["launches"], m
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def umbrella_detail(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _mine_sub(tmp_path_factory, "blind15/umbrella_detail", "include/vec")


def test_what_a_macro_writes_beside_the_declaration_taken_brings_its_names(umbrella_detail: dict[str, Any]) -> None:
    """A header-only library reached through its public header `vec.h`: the kernel calls `detail::scalar_add`,
    which `VEC_BINARY_OP(add, Add, +)` writes together with the class `AddOp`, whose host `describe()` names
    `detail::name_of<T1>()` of `core/names.h`. The invocation is one piece of the unit, but only the function's
    references were followed ("namespace vec::detail has no member name_of")."""
    m = only_meta(umbrella_detail, "add_kernel")
    assert m["parse_context"]["translation_unit"].endswith("examples/add_example.cu"), m["parse_context"]
    (unit,) = unit_texts(umbrella_detail, m)
    assert "inline std::string name_of()" in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_declaration_written_in_a_nested_macros_argument_is_the_whole_invocation(
        umbrella_detail: dict[str, Any]) -> None:
    """`VEC_UNARY_OP(neg, Neg)` writes `internal_neg` and `NegOp` as the argument of `VEC_IF_HOST(...)`: libclang
    gives each of them an empty extent at the invocation's start, so the piece was empty and the unit lacked the
    class that the macro-written `neg` overload (taken with the set of `neg`s the kernel calls) names ("namespace
    vec::detail has no member NegOp"). The text is the invocation, its macros come along."""
    m = only_meta(umbrella_detail, "neg_kernel")
    (unit,) = unit_texts(umbrella_detail, m)
    assert "VEC_UNARY_OP(neg, Neg)" in unit and "#define VEC_IF_HOST" in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def flag_removal(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind15/flag_removal")


def test_torch_default_flags_a_build_script_removes_are_not_the_builds(flag_removal: dict[str, Any]) -> None:
    """setup.py removes `-D__CUDA_NO_HALF_CONVERSIONS__`, `-D__CUDA_NO_BFLOAT16_CONVERSIONS__` (and the operator
    ones) from `torch.utils.cpp_extension.COMMON_NVCC_FLAGS` in a loop over a list before `setup()`; the kernel
    needs `static_cast<float>` of a `__nv_bfloat16`. Units were built with torch's defaults, and with the removed
    strings read as flags it passes ("no suitable conversion function from __nv_bfloat16 to float")."""
    m = only_meta(flag_removal, "row_sumsq")
    nvcc = m["build_flags"]["nvcc"]
    assert not any(f.startswith("-D__CUDA_NO_") for f in nvcc), nvcc
    assert "--expt-relaxed-constexpr" in nvcc, nvcc
    assert build_statuses(m) and set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def enum_config(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind15/enum_config")


def test_an_enum_parameter_of_an_uninstantiated_launching_class_takes_an_enumerator(
        enum_config: dict[str, Any]) -> None:
    """The launch sits in a partial specialization `Labeler<Config<space_device, V, I>>` with enum parameters
    that nothing instantiates; its `IndexType` is `PrecMap<I>::Type`, and `PrecMap` has a definition only for the
    enumerators. The defaults gave `static_cast<Prec>(128)` ("incomplete type PrecMap<(Prec)128> is not
    allowed"); the first enumerator names a complete type."""
    m = only_meta(enum_config, "fill_labels")
    args = [" ".join(i["args"]) for i in m["instantiations"]]
    assert args and not any("128" in a for a in args), args
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def member_alias(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind15/member_alias")


def test_a_member_alias_naming_another_member_alias_is_spelled_through_it(member_alias: dict[str, Any]) -> None:
    """`Generator<Config<space_device, V, I>>::run` (defined out of line) launches `fill_rows<IndexType,
    ValueType, 16>` with `typedef typename Matrix_d::index_type IndexType;` and `typedef Matrix<Config<...>>
    Matrix_d;` in the class: the unit's instantiation named `typename Matrix_d::index_type`, which means nothing
    outside the class ("a class or namespace qualified name is required")."""
    m = only_meta(member_alias, "fill_rows")
    args = [" ".join(i["args"]) for i in m["instantiations"]]
    assert args and not any("Matrix_d" in a for a in args), args
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def crlf_macro(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind15/crlf_macro")


def test_a_macro_continued_over_crlf_lines_is_taken_whole(crlf_macro: dict[str, Any]) -> None:
    """`ops.h` has Windows line ends: `#define SCALE_ADD(OUT, A, B, \\` ends its lines with a backslash, CR, LF.
    The #define patterns took backslash-CR as an escaped character and stopped at the LF, so the unit held the
    first line alone ("expected parameter name before end of line")."""
    m = only_meta(crlf_macro, "fma_kernel")
    (unit,) = [(crlf_macro["out"] / m["id"] / i["unit"]).read_text(encoding="utf-8") for i in m["instantiations"]]
    assert "(OUT) = (A) * (B) + (C);" in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def undef_helper(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind15/undef_helper")


def test_a_helper_modules_undefines_of_torch_defaults_reach_the_units(undef_helper: dict[str, Any]) -> None:
    """setup.py's nvcc list is `nvcc_flags()` of `tools/flags.py`, which appends `-U__CUDA_NO_HALF_CONVERSIONS__`
    (and the other three), and its sources come from a function (no build scope names the file). The folder's
    setup.py kept only the -D flags its evaluated sinks pass, so the units had torch's defaults and
    `out[i] = 0.5` on a `__half` had no conversion ("no operator = matches these operands")."""
    m = only_meta(undef_helper, "half_fill")
    nvcc = m["build_flags"]["nvcc"]
    assert "-U__CUDA_NO_HALF_CONVERSIONS__" in nvcc and "-D__CUDA_NO_HALF_CONVERSIONS__" not in nvcc, nvcc
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def shadow_error(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _mine_sub(tmp_path_factory, "blind15/shadow_error", "src")


def test_a_project_header_named_like_a_system_one_is_the_projects(shadow_error: dict[str, Any]) -> None:
    """`residual.cu` (the mined `src/`) includes `<solve_config.h>` and `<error.h>`, both in the project's
    `include/` (its build's `-I include`). glibc has an `error.h` too, so the include was left to the system:
    the project's `error.h` never became context, and its enumerators were missing from the unit
    ("identifier SOLVE_ERR_BAD_SIZE is undefined") though the parse, with `-I include`, had them."""
    m = only_meta(shadow_error, "residual_kernel")
    assert "../include" in m["parse_context"]["include_dirs"], m["parse_context"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    (unit,) = unit_texts(shadow_error, m)
    assert "SOLVE_ERR_BAD_SIZE = 3" in unit, unit


def test_the_original_finds_the_projects_header_before_the_systems(shadow_error: dict[str, Any],
                                                                   tmp_path: Path) -> None:
    """verify compiled the original with the mined dirs after the system's for `<angle>` includes (`-idirafter`):
    `<error.h>` was glibc's, and the original did not compile ("SOLVE_ERR_BAD_SIZE is undefined":
    original_unbuildable). The project's build passes `-I include`, before the system's folders."""
    ds = tmp_path / "ds"
    shutil.copytree(shadow_error["out"], ds)
    r = run_miner("verify", ds, "--cache-dir", tmp_path / "cache", timeout=600)
    assert r.returncode == 0, (r.stdout, r.stderr)
    (m,) = load_dataset(ds)
    assert [i["fidelity"]["status"] for i in m["instantiations"]] == ["identical"], m["instantiations"]


def test_a_dir_holding_another_platforms_standin_for_a_system_header_stays_after_the_system(tmp_path: Path) -> None:
    """A Windows stand-in `unistd.h` (include-guarded, including `<direct.h>` and `<winsock2.h>`, which no
    folder here has) must not hide the system's `<unistd.h>`: its dir stays `-iquote`/`-idirafter`. A project
    `error.h` whose platform includes sit under `#ifdef` is the project's own: its dir is `-I`."""
    from miner.verify import original

    win, own = tmp_path / "win", tmp_path / "own"
    win.mkdir()
    own.mkdir()
    (win / "unistd.h").write_text("#ifndef KM_UNISTD_H\n#define KM_UNISTD_H\n#include <stdio.h>\n"
                                  "#include <direct.h>\n#include <winsock2.h>\n#define F_OK 0\n#endif\n")
    (own / "error.h").write_text("#pragma once\n#ifdef _WIN32\n#include <windows.h>\n#else\n#include <unistd.h>\n"
                                 "#endif\n#ifdef WITH_MPI\n#include <mpi.h>\n#endif\n#include <stdio.h>\n"
                                 "enum Err { ERR_OK };\n")
    orig = original.Original(root=tmp_path, tu=tmp_path / "k.cu", rel="k.cu", defines=[], include_dirs=[win, own])
    flags = original.compile_flags(orig, "-arch=compute_90")
    assert ["-Xcompiler", f"-iquote,{win},-idirafter,{win}"] == flags[flags.index("-Xcompiler"):][:2], flags
    assert f"-I{own}" in flags and not any(str(own) in f for f in flags if f != f"-I{own}"), flags


@pytest.fixture(scope="module")
def system_header(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind15/system_header")


def test_a_system_header_whose_declarations_a_kept_body_names_is_included(system_header: dict[str, Any]) -> None:
    """`Grid<T>`'s destructor (a special member: its body stays) fails through `GRID_FAIL`, which calls the host
    helper `print_trace` of `trace.h`; that uses `backtrace` of `<execinfo.h>` and `abi::__cxa_demangle` of
    `<cxxabi.h>`, which `trace.h` includes. A unit kept only standard and toolkit includes ("identifier backtrace
    is undefined"), and the build took `<execinfo.h>` for a missing CUDA library header."""
    m = only_meta(system_header, "smooth_kernel")
    (unit,) = unit_texts(system_header, m)
    assert "#include <execinfo.h>" in unit and "#include <cxxabi.h>" in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def absent_library(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind15/absent_library")


def test_a_data_member_of_an_absent_librarys_type_leaves_the_units_class(absent_library: dict[str, Any]) -> None:
    """The launch's arguments are spelled through `Matrix<...>::index_type`, so the unit holds the class; its host
    side keeps a handle `nosuchMatDescr_t descr;` of a library whose header (`<nosuch_sparse_v2.h>`) this machine
    lacks, and its destructor frees it. The unit failed on the unknown type ("identifier nosuchMatDescr_t is
    undefined"): the member goes, and the destructor keeps its declaration only."""
    m = only_meta(absent_library, "fill_rows")
    (unit,) = unit_texts(absent_library, m)
    assert "nosuchMatDescr_t descr" not in unit and "nosuchDestroyDescr" not in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def cccl_using(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind15/cccl_using")


def test_a_using_declaration_of_a_toolkit_library_the_unit_does_not_include_is_left_out(
        cccl_using: dict[str, Any]) -> None:
    """`iterators.h` names thrust's `counting_iterator` into the library's `detail` namespace; the kernel, in that
    namespace, names nothing of thrust, so the unit includes no thrust header, but the using-declaration was kept
    ("identifier thrust is undefined"): the parse's framework shim of the header is no toolkit path."""
    m = only_meta(cccl_using, "shift_kernel")
    (unit,) = unit_texts(cccl_using, m)
    assert "thrust" not in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def cccl_using_guarded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind15/cccl_using_guarded")


def test_a_using_declaration_of_a_toolkit_library_is_judged_by_its_namespace_not_its_stand_ins_file(
        cccl_using_guarded: dict[str, Any]) -> None:
    """As above, but the header includes `<cuda/std/version>` first (to pick the thrust or the `cuda::` iterator by
    CCCL release): the parse's CCCL stand-ins share one vocabulary, declared by the first of them, so
    `thrust::counting_iterator` sat in the stand-in of `cuda/std/version`, and the using-declaration was kept in a
    unit that includes `cuda/std/...` but no thrust header ("identifier thrust is undefined")."""
    m = only_meta(cccl_using_guarded, "roll_kernel")
    (unit,) = unit_texts(cccl_using_guarded, m)
    assert "thrust" not in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def mode_instances(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind15/mode_instances")


def test_a_partial_specialization_over_a_configuration_class_takes_the_explicit_instantiations(
        mode_instances: dict[str, Any]) -> None:
    """`Scaler<Config<space_device, V, I>>::scale` launches `scale_rows` with the configuration's member types;
    `template class Scaler<ModeConfig<M>::Type>;`, written per build mode through `FOR_DEVICE_MODES`, names
    `Config<space_device, prec_double, prec_int>`. The partial specialization's parameters sit inside its one
    written argument, which was compared as a whole: no match, so the launch kept `typename Config<space_device,
    V, I>::ValueType` and the kernel took defaults (`double` rows: "expression must have integral or unscoped enum
    type")."""
    m = only_meta(mode_instances, "scale_rows")
    args = sorted(tuple(i["args"]) for i in m["instantiations"])
    assert args == [("double", "int"), ("float", "int")], args
    assert {i["origin"] for i in m["instantiations"]} == {"host_template"}, m["instantiations"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_an_explicitly_instantiated_class_instantiates_its_base_class_template(
        mode_instances: dict[str, Any]) -> None:
    """`ScalerBase<C>::count` launches `count_rows` with `typename C::IndexType`; only the derived partial
    specialization `Scaler<Config<space_device, V, I>> : public ScalerBase<Config<space_device, V, I>>` is
    explicitly instantiated, which instantiates its base. The base had no known instantiation, so the kernel took
    the default (`double` rows: "expression must have integral or unscoped enum type")."""
    m = only_meta(mode_instances, "count_rows")
    assert [i["args"] for i in m["instantiations"]] == [["int"]], m["instantiations"]
    assert {i["origin"] for i in m["instantiations"]} == {"host_template"}, m["instantiations"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def expr_lib(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _mine_sub(tmp_path_factory, "blind15/expr_lib", "include/ex")


def test_a_kernel_launched_below_a_librarys_expression_api_takes_the_programs_instantiated_types(
        expr_lib: dict[str, Any]) -> None:
    """A header-only expression-template library: the example program writes `(z = x + y).run()`, whose
    `operator=` (a deduced return type) builds `Assign<buffer<float, 1>, SumOp<...>>`, its `run` calls the host
    template `detail::exec`, which launches `apply_kernel<kBlock>(op)`. The kernel's argument is that class (the
    kernel names `op.out`, `op.in`); nothing the text propagation follows reaches the launch, so it took `float`
    ("expression must have class type but it has type float"). clang has instantiated the chain: the program's
    own functions are followed through the instantiated bodies to the launch."""
    m = only_meta(expr_lib, "apply_kernel")
    args = [i["template_args"] for i in m["instantiations"]]
    buf = "ex::buffer<float, 1, cuda::std::array<int, 1>>"
    assert args == [{"Block": "128", "Assignment": f"ex::Assign<{buf}, ex::detail::SumOp<{buf}, {buf}>>"}], args
    assert "args_missing" not in m or not m["args_missing"], m.get("args_missing")
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_kernel_below_an_api_another_program_calls_takes_that_programs_instantiated_types(
        expr_lib: dict[str, Any]) -> None:
    """The library's two example programs both include its public header; the miner parses one of them
    (`fill_example.cu`, the umbrella's choice), but only the other calls `(z = x + y).run()`, the API above
    `apply_kernel`'s launch (and the reverse for `fill_kernel`, below `ex::fill(z, v).run()`). A kernel left
    without arguments in the program parsed takes those of the project's program that names the functions above
    its launch (`exec` <- `Assign::run`, `Assign` <- `buffer::operator=`), parsed with its instantiations."""
    tus = {only_meta(expr_lib, k)["parse_context"]["translation_unit"].rsplit("/", 1)[-1]
           for k in ("apply_kernel", "fill_kernel")}
    assert len(tus) == 1, tus
    fill = only_meta(expr_lib, "fill_kernel")
    args = [i["template_args"] for i in fill["instantiations"]]
    # (`cuda::std::array`, the buffer's defaulted shape: the parse's libcu++ stand-in spells it `std::array`)
    assert args == [{"FillT": "ex::detail::FillOp<ex::buffer<double, 1, cuda::std::array<int, 1>>>"}], args
    assert set(build_statuses(fill).values()) == {"ok"}, build_statuses(fill)
    apply = only_meta(expr_lib, "apply_kernel")
    assert [i["origin"] for i in apply["instantiations"]] == ["host_template"], apply["instantiations"]
    assert set(build_statuses(apply).values()) == {"ok"}, build_statuses(apply)


@pytest.fixture(scope="module")
def lambda_lib(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _mine_sub(tmp_path_factory, "blind15/lambda_lib", "include/lx")


def test_a_launch_in_a_templated_lambda_takes_the_programs_instantiated_operator(
        lambda_lib: dict[str, Any]) -> None:
    """`lx::run` launches `ept_kernel<Cap>(op)` inside a lambda templated on the elements per thread
    (`[&]<int Ept>(auto &&handler)`, called as `.template operator()<4>(...)`); the operator type is deduced
    from `run`'s own argument, which only the example program's call fixes (`lx::Scale<float>`). A launch in a
    lambda was kept from the program's instantiated arguments (they are the dispatch's tags elsewhere), so the
    kernel took a scalar for `Op` ("expression must have class type")."""
    m = only_meta(lambda_lib, "ept_kernel")
    args = sorted(tuple(sorted(i["template_args"].items())) for i in m["instantiations"])
    assert args == [(("Cap", "lx::Caps<1>"), ("Op", "lx::Scale<float>")),
                    (("Cap", "lx::Caps<4>"), ("Op", "lx::Scale<float>"))], args
    assert {i["origin"] for i in m["instantiations"]} == {"host_template"}, m["instantiations"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
