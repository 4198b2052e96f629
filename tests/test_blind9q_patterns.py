"""`extract --build` on tests/fixtures/blind9q: patterns found on the ninth set of repositories (issue 14,
scripts/corpus_repos_blind9.txt, development repos since session 12), each reproduced by code of our own and judged
by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, load_dataset, only_meta, run_miner, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind9q")



def test_a_using_declaration_of_a_standard_name_brings_its_header(dataset: dict[str, Any]) -> None:
    """`using std::bit_cast;` in a project header (C++20 from meson's `cpp_std`) of which the kernel needs nothing
    else: the unit kept the using-declaration but not `<bit>` ("namespace std has no member bit_cast")."""
    m = only_meta(dataset, "scale_kernel")
    (unit,) = unit_texts(dataset, m)
    assert "using std::bit_cast;" in unit and "#include <bit>" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_an_argument_class_from_another_translation_unit_brings_its_headers(dataset: dict[str, Any]) -> None:
    """The kernel's closure is taken in the first TU that includes its header, which launches nothing; the TU that
    launches it with `OpMax<float>` gives the argument's class and its member specializations (`-FLT_MAX`,
    `INT_MIN`) and, now, the `<float.h>` / `<limits.h>` its header includes (was "identifier FLT_MAX is
    undefined" in every instantiation)."""
    m = only_meta(dataset, "block_reduce")
    assert len(m["instantiations"]) == 3, [i["args"] for i in m["instantiations"]]
    assert all("#include <float.h>" in u and "#include <limits.h>" in u for u in unit_texts(dataset, m))
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_bundled_toolkit_detail_header_is_included_through_its_public_header(dataset: dict[str, Any]) -> None:
    """A project's copy of a toolkit header (`nvtx3/nvToolsExtPayload.h`) whose macro lives in an implementation
    header that refuses a direct include (`#error Never include this file directly`): the unit includes the
    toolkit's public header, not the detail one."""
    m = only_meta(dataset, "fill_slots")
    (unit,) = unit_texts(dataset, m)
    assert "#include <nvtx3/nvToolsExtPayload.h>" in unit and "nvtxDetail" not in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_kernel_using_arch_specific_instructions_builds_for_the_arch_specific_target(dataset: dict[str, Any]) -> None:
    """`wgmma.fence`, `setmaxnreg` and `tensormap.replace` exist only on sm_90a: ptxas rejected them for sm_90
    ("Instruction 'wgmma.fence' not supported on .target 'sm_90'"). The unit says so
    (`// km:nvcc-flags --km-arch-specific`) and is built for the `a` variant of every target; a kernel without them
    keeps the run's targets."""
    for name in ("fenced_store", "consumer_warpgroup", "patch_descriptor"):
        m = only_meta(dataset, name)
        (unit,) = unit_texts(dataset, m)
        assert "--km-arch-specific" in unit
        assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
        assert {i["build"]["arch"] for i in m["instantiations"]} == {"sm_90a,compute_90a"}
    plain = only_meta(dataset, "fill_slots")
    assert {i["build"]["arch"] for i in plain["instantiations"]} == {"sm_90,compute_90"}


def test_an_arch_specific_unit_is_verified_against_its_original_on_that_target(
        dataset: dict[str, Any], tmp_path: Path) -> None:
    """`verify` compiles the unit and its original translation unit for the target the unit was built for
    (compute_90a): on compute_90 the original does not assemble either and nothing could be compared."""
    out = tmp_path / "ds"
    shutil.copytree(dataset["out"], out)
    r = run_miner("verify", out, "-j", "2", "--kernels", "fenced_store", "--kernels", "fill_slots",
                  "--cache-dir", tmp_path / "vcache", timeout=600)
    assert r.returncode == 0, r.stderr
    fid = {m["name"]: m["instantiations"][0].get("fidelity") or {} for m in load_dataset(out)
           if m["name"] in ("fenced_store", "fill_slots")}
    assert fid["fenced_store"].get("status") == "identical" and fid["fenced_store"].get("arch") == "compute_90a", fid
    assert fid["fill_slots"].get("status") == "identical" and fid["fill_slots"].get("arch") == "compute_90", fid


def test_a_macro_that_writes_several_specializations_brings_each_primary_template(dataset: dict[str, Any]) -> None:
    """`DEFINE_PACK_LOADS(2)` writes specializations of `load_forward` and `load_reverse`: the parse folds them into
    one piece named after the first, so the unit lacked the primary template of the other ("load_reverse is not a
    template")."""
    m = only_meta(dataset, "gather_reversed")
    (unit,) = unit_texts(dataset, m)
    assert "__device__ Pack<N> load_forward(const unsigned* p);" in unit
    assert "__device__ Pack<N> load_reverse(const unsigned* p);" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_grid_constant_parameter_written_through_a_macro_is_plain_in_the_launcher(dataset: dict[str, Any]) -> None:
    """`const PROJ_GRID_CONSTANT WorkArgs args` with `#define PROJ_GRID_CONSTANT __grid_constant__`: the launcher's
    copy of the parameter kept the macro ("__grid_constant__ annotation is only allowed on a parameter of a
    __global__ function")."""
    m = only_meta(dataset, "scaled_copy")
    (unit,) = unit_texts(dataset, m)
    launcher = unit[unit.index('extern "C" int km_launch_'):]
    assert "PROJ_GRID_CONSTANT" not in launcher.split("{", 1)[0]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_atens_device_numeric_limits_come_with_the_unit_shim(dataset: dict[str, Any]) -> None:
    """`at::numeric_limits<acc_t>::lower_bound()` (ATen/cuda/NumericLimits.cuh) in a dispatched torch kernel: the
    parse had no such header and the unit shim no such template ("name followed by '::' must be a class or
    namespace name"; for Half, "namespace at has no member numeric_limits")."""
    m = only_meta(dataset, "row_max_kernel")
    assert sorted(i["id"] for i in m["instantiations"]) == ["double_double", "float_float", "half_float"]
    assert all("template <typename T> struct numeric_limits" in u and "KM_BITS_LIMITS(Half" in u
               for u in unit_texts(dataset, m))
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_template_template_argument_of_a_host_template_reaches_the_kernel(dataset: dict[str, Any]) -> None:
    """`return host_apply<ScaleEpilogue>(...)`, whose launch passes its template template parameter on to the
    kernel: libclang spells no template-template argument of a function specialization, so the host template's
    arguments were unknown and the kernel's `Epilogue` was given a default (`128`: "no instance of function
    template matches"). The call's written text names it."""
    m = only_meta(dataset, "apply_epilogue")
    assert [(i["args"], i["origin"]) for i in m["instantiations"]] == [
        (["4", "float", "float", "float", "ScaleEpilogue"], "host_template")]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_array_parameters_are_pointers_in_the_launcher_and_the_host_wrapper(dataset: dict[str, Any]) -> None:
    """`const unsigned keys[]` (typed `const unsigned []`): the launcher wrote `const unsigned [] km_keys` ("expected
    a ')'") and the host wrapper `unsigned [] *keys`. Both take the adjusted pointer type."""
    m = only_meta(dataset, "compact_flags")
    (unit,) = unit_texts(dataset, m)
    assert "const unsigned * km_keys" in unit and "[] km_" not in unit
    folder = Path(dataset["out"]) / m["id"]
    wrapper = (folder / m["instantiations"][0]["host_wrapper"]).read_text(encoding="utf-8")
    assert "unsigned *keys = nullptr;" in wrapper and "[]" not in wrapper
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_constant_named_only_in_the_kernels_launch_bounds_comes_along(dataset: dict[str, Any]) -> None:
    """`KERNEL_BOUNDS(SCAN_CTA_SIZE)` between `__global__ void` and the name, `const int SCAN_CTA_SIZE = 256;` in a
    globals header: the attribute's argument is no cursor the closure walks ("identifier SCAN_CTA_SIZE is
    undefined")."""
    m = only_meta(dataset, "block_scan")
    (unit,) = unit_texts(dataset, m)
    assert "const int SCAN_CTA_SIZE = 256;" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
