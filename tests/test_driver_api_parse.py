"""The parse of code built on the CUDA driver API, and what a parse left broken must not do to a kernel's scope
(seen on a C++ wrapper library's examples: `<cuda/api.hpp>`, all of its types from `<cuda.h>`). Our own fixtures,
judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "driver_api")


@pytest.fixture(scope="module")
def unclosed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "unclosed_namespace")


def test_the_driver_api_of_cuda_h_is_in_the_parse(driver: dict[str, Any]) -> None:
    """`wrap::fill_args` holds a `CUstreamCaptureMode`, a driver API type the parse stub lacked (it had five of the
    driver's typedefs): the member was invalid, so the unit's struct dropped it (another layout than the kernel's
    argument) and the kernel's `a.mode` did not compile. The parse shim of `<cuda.h>` now includes the toolkit's own
    header (config.toolkit_driver_header): no parse error in the kernels' files, the struct whole, both units build."""
    m = only_meta(driver, "fill_from_args")
    assert m["diagnostics"]["errors"] == 0, m["diagnostics"]
    (unit,) = unit_texts(driver, m)
    assert "#include <cuda.h>" in unit and "CUstreamCaptureMode mode;" in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    m = only_meta(driver, "fill_scaled")
    assert m["diagnostics"]["errors"] == 0, m["diagnostics"]
    (launch,) = m["launches"]
    assert launch["launcher"] == "fill_on" and launch["values"]["block"] == 128, launch
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_namespace_the_parse_left_open_in_a_header_does_not_take_the_main_files_kernel(
        unclosed: dict[str, Any]) -> None:
    """`broken.h` opens `namespace wrap { namespace mem {` and the parse never sees them closed (here the braces are
    missing; in the library, clang's recovery from unknown driver types lost them). libclang then puts everything
    after it, the main file's `twice` and `doubled`, in `wrap::mem`, and the unit wrapped the global kernel in that
    namespace: it built, under another mangled name than the original's. A namespace without an end encloses only
    its own file's declarations (clang_frontend.unclosed_namespace, for the kernel and for the closure's index)."""
    m = only_meta(unclosed, "doubled")
    assert m["qualified_name"] == "doubled", m["qualified_name"]
    (unit,) = unit_texts(unclosed, m)
    assert "namespace wrap" not in unit and "namespace mem" not in unit, unit
    assert "__device__ float twice(float v)" in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def std_through(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "std_through_project")


def test_a_standard_name_brought_by_a_project_header_that_gives_the_unit_nothing_else(
        std_through: dict[str, Any]) -> None:
    """`Label`'s host constructors call `std::strncpy`; `<cstring>` comes only through the project's `common.hpp`,
    which gives the unit no piece, so the unit kept no include of it ("namespace std has no member strncpy"; the
    wrapper library's examples, once their kernels were in the right namespace). The header a project file's
    include chain brought a referenced declaration through is included, a standard one too
    (closure.system_headers.included_header)."""
    m = only_meta(std_through, "first_letter")
    (unit,) = unit_texts(std_through, m)
    assert "#include <cstring>" in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def std_after(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "std_after_toolkit")


def test_a_std_name_of_a_c_header_the_toolkit_entered_first_includes_its_cpp_header(std_after: dict[str, Any]) -> None:
    """As above, but `common.hpp` includes `<cuda.h>` before `<cstring>`: the parse enters the C library's
    `string.h` first through the toolkit's headers, so `strncpy`'s include chain names no project header, and the
    unit's `<cuda_runtime.h>` declares only `::strncpy` ("namespace std has no member strncpy"; the wrapper
    library's examples). A C-library name written with `std::` brings the `<cX>` header of its `X.h`
    (closure.system_headers.std_counterpart)."""
    m = only_meta(std_after, "first_letter")
    (unit,) = unit_texts(std_after, m)
    assert "#include <cstring>" in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def quiet_drop(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "quiet_drop")


def test_a_launch_clang_dropped_without_an_error_of_its_own_is_read_back(quiet_drop: dict[str, Any]) -> None:
    """`Trainer::origin` has a type from a header the checkout lacks (a neural-graphics renderer over an empty
    submodule): the parse reports it once, at the member, and then leaves every statement using the member out of
    the AST without a word. `shift<<<...>>>(data, origin.x, n)` was no launch (`unresolved`); the statement is read
    back from the text (launches.recovered), with its grid formula and block. `scale`'s launch, in a branch the
    preprocessor skipped, stays another configuration's."""
    m = only_meta(quiet_drop, "shift")
    (launch,) = m["launches"]
    assert launch["launcher"] == "step" and launch["values"]["block"] == 128, launch
    assert launch["formula"]["grid"] == "(n + (128) - 1) / (128)", launch
    assert [a["expr"] for a in launch["args"]] == ["data", "origin.x", "n"], launch
    m = only_meta(quiet_drop, "scale")
    assert m["launches"] == [] and m["launch_missing"]["reason"] == "configuration_skipped", m["launch_missing"]
