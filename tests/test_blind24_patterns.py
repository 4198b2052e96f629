"""`extract --build` on tests/fixtures/blind24: patterns found on the twenty-fourth set of repositories (issue 14,
scripts/corpus_repos_blind24.txt, measured before any change in session 22), each reproduced by code of our own and
judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from miner.source import qualifier_macros
from tests.conftest import build_statuses, extract_and_build, only_meta, unit_texts

_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def absent_library_init(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind24/absent_library_init")


@_nvcc
def test_a_data_member_of_an_absent_librarys_type_leaves_with_its_initializer(
        absent_library_init: dict[str, Any]) -> None:
    """The kernel takes `Bridge::Table`, so the unit holds `Bridge`; its host side keeps handles of a library this
    machine lacks, with default member initializers (`NosuchEnv *env = NULL;`, `= nullptr`, `{}`). Such a member
    is an invalid declaration whose extent stops at its name: the member went, its `= NULL;` stayed in the class
    ("expected a declaration"). The initializer goes with it, the member of a known type stays, and the unit
    builds."""
    m = only_meta(absent_library_init, "scale_by_table")
    (unit,) = unit_texts(absent_library_init, m)
    assert "= NULL" not in unit and "= nullptr" not in unit and "{};" not in unit, unit
    assert "int retries = 3;" in unit, unit
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def framework_qualifier(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind24/framework_qualifier")


@_nvcc
def test_kernels_written_with_a_qualifier_macro_one_framework_branch_defines_are_mined_in_that_branch(
        framework_qualifier: dict[str, Any]) -> None:
    """`rows.cu` is one source for CUDA and OpenCL: `DEV_KERNEL void scale_rows(...)`, with `#define DEV_KERNEL
    __global__` under `#ifdef FW_CUDA` in `defs.h` (`__kernel` under `FW_OPENCL`), the switch given by the build
    alone. The text holds no `__global__` outside that define: nothing was mined ("no kernels found"). Both kernels
    are mined with `FW_CUDA` defined, which their units carry, and build."""
    assert framework_qualifier["proc"].returncode == 0, framework_qualifier["proc"].stderr
    for name in ("scale_rows", "add_rows"):
        m = only_meta(framework_qualifier, name)
        assert "FW_CUDA" in m["parse_context"]["defines"], m["parse_context"]
        (unit,) = unit_texts(framework_qualifier, m)
        assert "#define FW_CUDA 1" in unit, unit
        assert build_statuses(m) == {"default": "ok"}, build_statuses(m)


def test_the_switch_of_a_defined_qualifier_is_a_plain_name_no_source_defines() -> None:
    """The switch is the name whose definition turns the `#define M __global__` branch on; none for an
    unconditional define or the compiler's own guard, none for a switch a source defines; a macro no text writes
    before a function is no kernel qualifier."""
    defs = (b"#ifdef FW_CUDA\n#define KERN_A __global__\n#elif defined(FW_CL)\n#define KERN_A __kernel\n#endif\n"
            b"#if defined(__CUDACC__)\n#define KERN_B __global__\n#endif\n"
            b"#define KERN_C __global__ // always\n"
            b"#define ON_HERE\n#ifdef ON_HERE\n#define KERN_D __global__\n#endif\n#define UNUSED __global__\n")
    uses = b"KERN_A void a(int *p) {}\nKERN_B void b(int *p) {}\nKERN_C void c(int *p) {}\nKERN_D void d(int *p) {}\n"
    assert qualifier_macros.defined_qualifiers([defs, uses]) == {"KERN_A": "FW_CUDA", "KERN_B": None,
                                                                  "KERN_C": None, "KERN_D": None}
