"""`extract --build` on tests/fixtures/blind27 (the b27b half): patterns found on the twenty-seventh set of
repositories (issue 14, scripts/corpus_repos_blind27.txt, development data in session 24), each reproduced by code of
our own and judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from miner.source import runtime_defines
from tests.conftest import FIXTURES, build_statuses, extract_and_build, load_dataset, only_meta, run_miner, unit_texts

_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind27/runtime_defines")


@_nvcc
def test_names_the_host_defines_for_a_run_time_compile_are_defined_in_the_unit(runtime: dict[str, Any]) -> None:
    """`relax.cu` is compiled with NVRTC by `Engine.cpp`, which writes `typedef ... scalar;` into the module's text,
    defines `BLOCK_WIDTH`, `SQRT` (one of two literals) and the function-like `CLAMP01(v)` through a map of
    defines, and passes `-DDAMPING=2` and `--define-macro=HALO=1` as options. No file defines them, and the unit
    failed on `scalar` ("identifier is undefined"). The unit defines each with the host's value; the other back
    end's map (`other_backend/Backend.cpp`, farther from the source) does not win."""
    m = only_meta(runtime, "relax")
    (unit,) = unit_texts(runtime, m)
    head = unit.split("km:includes-end", 1)[0]
    for line in ("#define BLOCK_WIDTH 64", "#define SQRT sqrt", "#define DAMPING 2", "#define HALO 1",
                 "#define CLAMP01(v) fminf(fmaxf((v), 0.0f), 1.0f)", "#define scalar double"):
        assert line in head, head
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)


@_nvcc
def test_a_name_the_host_computes_at_run_time_is_a_stated_reason(runtime: dict[str, Any]) -> None:
    """`order.cu` takes `ORDER_KEY` from a value the host computes (`traits.keyType()`): nothing to mine, and the
    build's failure says so, naming the host line."""
    m = only_meta(runtime, "order_keys")
    assert build_statuses(m)["default"].startswith("failed"), build_statuses(m)
    stated = m["instantiations"][0]["build"].get("toolkit_removed") or ""
    assert "ORDER_KEY is defined by the host when it compiles the source at run time" in stated, stated
    assert "src/Engine.cpp:17" in stated and "traits.keyType()" in stated, stated


def test_host_defines_reads_maps_streams_and_options() -> None:
    """What the reader takes from host text: literals, a conditional's first literal, a macro's line splices
    joined, `#define` lines and typedefs in streamed strings, NVRTC options; a computed value apart."""
    out = runtime_defines.HostDefines()
    runtime_defines.read_host(
        'defs["A"] = "1";\ndefs["B"] = dbl ? "x" : "y";\ndefs["F(p)"] =\n  "{p += 1; \\\\\\n"\n  "p *= 2;}";\n'
        'defs["C"] = obj.value();\nsrc << "#define D 4\\ntypedef unsigned int E;\\n";\n'
        'const char* o[] = {"-DG=3", "--define-macro=H", "-I/x"};\n', "h.cpp", out)
    got = {n: gs[0].define() for n, gs in out.given.items()}
    assert got == {"A": "A=1", "B": "B=x", "F": "F(p)={p += 1;  p *= 2;}", "D": "D=4", "E": "E=unsigned int",
                   "G": "G=3", "H": "H=1"}, got
    assert out.computed["C"] == ("h.cpp", 6, "obj.value()"), out.computed


def test_an_option_literal_joined_to_a_computed_value_is_computed_not_empty() -> None:
    """`"-DDIM=" + std::to_string(dim)` (an options vector the host fills) is no define of `DIM` as empty: a unit
    with `#define DIM` (nothing) fails on `#if DIM` with "#if with no expression" instead of stating that the
    host computes it. A streamed one (`<< "-DW=" << w`) likewise; a whole literal option stays a given value."""
    out = runtime_defines.HostDefines()
    runtime_defines.read_host(
        'std::vector<std::string> opts;\nopts.emplace_back("-DDIM=" + std::to_string(P::Dim));\n'
        'os << "-DW=" << w << " ";\nopts.push_back("-DFIXED=2");\n', "h.cpp", out)
    assert {n: gs[0].define() for n, gs in out.given.items()} == {"FIXED": "FIXED=2"}, out.given
    assert out.computed["DIM"] == ("h.cpp", 2, '"-DDIM=" + std::to_string(P::Dim)'), out.computed
    assert out.computed["W"] == ("h.cpp", 3, '"-DW=" << w << " "'), out.computed


def test_a_host_value_is_not_given_to_a_source_that_declares_the_name() -> None:
    """A host's `#define x pos.x` for another module must not reach a source that uses `x` as a member or declares
    a variable `x`; a source that uses the name as its own gets it."""
    found = runtime_defines.HostDefines()
    runtime_defines.read_host('d["x"] = "pos.x";\nd["real"] = "float";\n', "host.cpp", found)
    assert runtime_defines.for_source(found, "k.cu", [b"void f(float4 p) { float y = p.x; }"], set()) == []
    assert runtime_defines.for_source(found, "k.cu", [b"void f(int x) { real r = x; }"], set()) == ["real=float"]
    assert runtime_defines.for_source(found, "k.cu", [b"template <int x> void f(real* p) { p[0] = x; }"],
                                      set()) == ["real=float"]
    assert runtime_defines.for_source(found, "k.cu", [b"enum Axis { x, y }; void f(int* p) { p[0] = x; }"],
                                      set()) == []


@pytest.fixture(scope="module")
def preludes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind27/host_preludes")


@_nvcc
@pytest.mark.parametrize(("kernel", "helper"), [("clear_ints", "make_int4(int a)"),
                                                ("accumulate", "to_fixed(float x)")])
def test_sources_the_host_puts_before_a_kernel_source_are_its_closure(preludes: dict[str, Any], kernel: str,
                                                                     helper: str) -> None:
    """`Programs.cpp` builds a module from `ProgramSources::common` (streamed first) and `ProgramSources::vecops +
    ProgramSources::clear`: `clear.cu` uses `make_int4(int)` of `vecops.cu` and `to_fixed` of `common.cu` without
    including either. The unit called the toolkit's four-argument `make_int4` ("too few arguments") and lacked
    `to_fixed`. Both are parsed before the source, and the unit holds the helper before its use."""
    m = only_meta(preludes, kernel)
    (unit,) = unit_texts(preludes, m)
    body = unit.split("km:body-begin", 1)[1]
    assert helper in body and body.index(helper) < body.index(f"void {kernel}("), unit
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def own_names(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind27/own_toolkit_names")


@_nvcc
def test_a_toolkit_name_the_source_defines_itself_brings_no_toolkit_header(own_names: dict[str, Any]) -> None:
    """`halfpack.cu`, written for a compiler without the toolkit's headers, defines its own `struct __half`. The
    unit added `<cuda_fp16.h>` for the name `__half`, and the class was defined twice ("has already been
    defined"); the closure's own definition keeps the header out."""
    m = only_meta(own_names, "pack_half")
    (unit,) = unit_texts(own_names, m)
    assert "#include <cuda_fp16.h>" not in unit, unit
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def std_using(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind27/std_using_c_type")


@_nvcc
def test_a_using_of_a_std_c_type_brings_the_cxx_header(std_using: dict[str, Any]) -> None:
    """`labels.h` includes `<cstdint>` and writes `using std::uint8_t;` in the kernel's namespace; the kernel uses
    nothing else of it, and its own file includes `<stdint.h>`. The using declaration's header was taken as
    `<stdint.h>`, already included, which declares `::uint8_t` only ("namespace std has no member uint8_t"):
    the unit includes `<cstdint>`."""
    m = only_meta(std_using, "paint_labels")
    (unit,) = unit_texts(std_using, m)
    assert "#include <cstdint>" in unit, unit
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def cccl_using(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind27/cccl_using")


@_nvcc
def test_a_using_of_a_thrust_functor_keeps_the_thrust_header(cccl_using: dict[str, Any]) -> None:
    """`functors.hpp` writes `using thrust::plus;` in the project's namespace and derives a functor from `plus<T>`;
    nothing else in the unit names thrust, so its `<thrust/functional.h>` was left out as host code's (and the
    using with it: "plus is not a template"). The using names a name the unit uses: the header stays."""
    m = only_meta(cccl_using, "blend_histograms")
    (unit,) = unit_texts(cccl_using, m)
    assert "#include <thrust/functional.h>" in unit and "using thrust::plus;" in unit, unit
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)


def test_a_header_kernel_launched_only_in_a_skipped_branch_says_so(tmp_path: Path) -> None:
    """`scale_rows.cuh` launches its kernel through a macro defined and used under `#if defined(__CUDACC__) &&
    (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= MIN_ARCH)`, which the parse's `__CUDA_ARCH__` skips. The skipped
    branches were read of the translation unit's own file only, so the header's kernel was `unresolved`; it is
    `configuration_skipped`, naming the directive on one line."""
    out = tmp_path / "out"
    proc = run_miner("extract", FIXTURES / "blind27/header_skipped_launch", "-o", out,
                     env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr
    (m,) = [m for m in load_dataset(out) if m["name"] == "scale_rows"]
    missing = m["launch_missing"]
    assert missing["reason"] == "configuration_skipped", missing
    assert ("scale_rows.cuh:19 under `#if defined(__CUDACC__) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= "
            "MIN_ARCH)`") in missing["detail"], missing
