"""`extract --build` on tests/fixtures/blind18: patterns found on the eighteenth set of repositories (issue 14,
scripts/corpus_repos_blind18.txt, development repos since session 19), each reproduced by code of our own and
judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from miner.builder.toolkit_redefinition import redefined_by_toolkit
from tests.conftest import build_statuses, extract_and_build, load_dataset, only_meta, run_miner

_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def old_double_atomics(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind18/old_double_atomics")


@_nvcc
def test_a_function_the_source_defines_and_the_toolkit_now_defines_is_a_stated_reason(
        old_double_atomics: dict[str, Any]) -> None:
    """A header written before CUDA 8 defines `static __device__ double atomicAdd(double *, double)` under no
    condition; every toolkit since defines it in sm_60_atomic_functions.h, so the unit (which copies it as written)
    and the original translation unit both stop on the redefinition. The build states that instead of leaving an
    unexplained "has already been defined"; a kernel of the same header that needs no such function builds."""
    m = only_meta(old_double_atomics, "accumulate_rows")
    [inst] = m["instantiations"]
    assert inst["build"]["status"] == "failed", build_statuses(m)
    why = inst["build"].get("toolkit_removed") or ""
    assert why.startswith("atomicAdd(double *, double) is defined by the source (legacy_atomics.cuh:7"), inst["build"]
    assert "<sm_60_atomic_functions.h>" in why and "does not compile with this toolkit either" in why, why
    assert set(build_statuses(only_meta(old_double_atomics, "accumulate_halves")).values()) == {"ok"}


_UNIT = """// km:body-begin
// function_decl atomicAdd from legacy.cuh:{line}
static __device__ double atomicAdd(double *p, double v) {{ return v; }}
// the kernel, k.cu:1
"""
_ERROR = ('units/double/unit.cu(3): error: function "atomicAdd(double *, double)" has already been defined '
          '(previous definition at line 93 of {toolkit}/include/sm_60_atomic_functions.h)')


@pytest.mark.parametrize(("header", "stated"), [
    ("#ifndef LEGACY_CUH\n#define LEGACY_CUH\n\n{defn}\n#endif\n", True),
    ("{defn}\n", True),
    # Under a condition the unit does not keep: the original may skip the definition, so the failure may be the
    # unit's and nothing is stated.
    ("#ifndef LEGACY_CUH\n#define LEGACY_CUH\n#ifndef HAVE_DOUBLE_ATOMICS\n{defn}\n#endif\n#endif\n", False),
    ("#if OLD_TOOLKIT\n{defn}\n#endif\n", False),
])
def test_a_redefinition_is_stated_only_for_a_definition_under_no_condition(tmp_path: Path, header: str,
                                                                            stated: bool) -> None:
    defn = "static __device__ double atomicAdd(double *p, double v) { return v; }"
    text = header.format(defn=defn)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "legacy.cuh").write_text(text)
    (tmp_path / "toolkit" / "include").mkdir(parents=True)
    line = text.splitlines().index(defn) + 1
    toolkit = str(tmp_path / "toolkit")
    why = redefined_by_toolkit(_UNIT.format(line=line), _ERROR.format(toolkit=toolkit),
                               lambda: (str(tmp_path / "toolkit" / "include"),), str(tmp_path / "src"), ["legacy.cuh"])
    assert (why is not None) == stated, why
    # The previous definition in a header of the project, not the toolkit: nothing stated.
    assert redefined_by_toolkit(_UNIT.format(line=line), _ERROR.format(toolkit=str(tmp_path / "src")),
                                lambda: (str(tmp_path / "toolkit" / "include"),), str(tmp_path / "src"),
                                ["legacy.cuh"]) is None


@pytest.fixture(scope="module")
def chosen_variants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind18/chosen_variants")


@_nvcc
def test_the_kept_instantiations_vary_the_modes_when_type_pairs_fill_the_limit(
        chosen_variants: dict[str, Any]) -> None:
    """`auto kernel = gather_taps<V, W, L, 9, true>;` then `if`s reassigning it to the `<8/9, true/false>`
    variants, in a host template instantiated for 3 value types x 5 (width, load type) pairs: 60 variants in 15
    type combinations for 16 units. Each combination gave its first row, so every kept unit was `<..., 9, true>`;
    now all four modes appear, every type combination is still kept, and the units build."""
    m = only_meta(chosen_variants, "gather_taps")
    args = [i["template_args"] for i in m["instantiations"]]
    assert len(args) == 16, args
    assert {(a["Taps"], a["Normalize"]) for a in args} == {("9", "true"), ("9", "false"), ("8", "true"),
                                                           ("8", "false")}, args
    assert len({(a["Value"], a["Load"]) for a in args}) == 15, args
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def virtual_shapes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind18/virtual_shapes")


@_nvcc
def test_call_prototypes_of_virtual_calls_are_numbered_per_listing(virtual_shapes: dict[str, Any],
                                                                   tmp_path: Path) -> None:
    """Kernels calling virtual methods through base pointers: each indirect call has a PTX call prototype that
    nvcc numbers through the whole file (`prototype_4` in the original, where earlier kernels' calls come first;
    `prototype_0` in the unit). The numbering is position, not code: every unit verifies identical."""
    r = run_miner("verify", virtual_shapes["out"], "-q", "--cache-dir", tmp_path / "cache", timeout=600)
    assert r.returncode == 0, r.stderr
    got = {f"{m['name']}/{i['id']}": (i.get("fidelity") or {}).get("status")
           for m in load_dataset(Path(virtual_shapes["out"])) for i in m["instantiations"]}
    assert got == {"make_shapes/default": "identical", "total_area/default": "identical",
                   "count_inside/default": "identical"}, got


@pytest.fixture(scope="module")
def static_constants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind18/static_constants")


@_nvcc
def test_a_file_local_constant_of_a_separately_compiled_original_verifies_identical(
        static_constants: dict[str, Any], tmp_path: Path) -> None:
    """A kernel reading a header's `static __constant__` table and calling a device function another file defines:
    the original is compiled with `-rdc=true`, where nvcc names the table `__nv_static_30__<hash>_9_source_cu_
    <hash>_kModulus`; the unit, compiled whole-program, names it `kModulus`. Same memory, same code: identical."""
    m = only_meta(static_constants, "reduce_limbs")
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    r = run_miner("verify", static_constants["out"], "-q", "--cache-dir", tmp_path / "cache", timeout=600)
    assert r.returncode == 0, r.stderr
    [inst] = only_meta({"metas": load_dataset(Path(static_constants["out"]))}, "reduce_limbs")["instantiations"]
    assert inst["fidelity"]["status"] == "identical", inst["fidelity"]


def test_a_callees_local_shared_array_named_through_a_type_spelled_elsewhere_compares_identical(
        tmp_path: Path) -> None:
    """A block reduction helper `reduce<Acc>` with a function-local `static __shared__` array, called by a kernel
    over torch-style accessors: its mangled name spells the accessor's namespace, `torch::headeronly::...` in the
    original and the shim's `at::...` in the unit, so the two listings named one shared array two ways (the
    entry's own locals were already compared as the entry's name is). The names of function-local shared
    variables are placement: they compare by order of first use, and different code still differs."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed")
    import subprocess

    from miner.verify import ptx

    def source(ns: str, factor: str = "2.0f") -> str:
        return (f"namespace {ns} {{ template <typename T> struct Acc {{ T *p; __device__ T &operator[](int i) const "
                "{ return p[i]; } }; }\n"
                "template <typename A> __device__ float reduce(A a, float v) {\n"
                "  static __shared__ float partial[32];\n"
                "  partial[threadIdx.x & 31] = v + a[0]; __syncthreads();\n"
                "  float s = 0; for (int k = 0; k < 32; ++k) s += partial[k]; return s; }\n"
                f"__global__ void sum_kernel({ns}::Acc<float> a, float *out) {{\n"
                f"  out[threadIdx.x] = reduce(a, {factor} * a[threadIdx.x]); }}\n")

    listings = {}
    for name, text in {"original": source("torch_headeronly"), "unit": source("at"),
                       "changed": source("at", "3.0f")}.items():
        (tmp_path / f"{name}.cu").write_text(text)
        subprocess.run(["nvcc", "-arch=sm_90", "-ptx", "-o", str(tmp_path / f"{name}.ptx"),
                        str(tmp_path / f"{name}.cu")], check=True, capture_output=True, timeout=300)
        parsed = ptx.parse((tmp_path / f"{name}.ptx").read_text())
        [entry] = parsed.entries
        listings[name] = ptx.listing(parsed, entry)
    assert any("partial" in ln for ln in (tmp_path / "original.ptx").read_text().splitlines())
    assert listings["original"] == listings["unit"], ptx.first_difference(listings["original"], listings["unit"])
    assert listings["changed"] != listings["unit"]
