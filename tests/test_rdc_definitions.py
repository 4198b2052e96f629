"""`extract --build` on tests/fixtures/rdc: a project built with separate compilation (`nvcc -rdc=true`), whose
kernels call device functions and use `__device__` / `__constant__` variables that a shared header declares and
another .cu of the project defines (issue 14). Judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, build_statuses, extract_and_build, load_dataset, only_meta, run_miner, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def rdc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "rdc/src")


def test_same_name_static_functions_of_other_files_are_never_taken(rdc: dict[str, Any]) -> None:
    """`static __device__ float rdc_clamp(float)` is defined in clampa.cu and clampb.cu with different bodies:
    internal linkage, so each kernel's unit holds its own file's and only that one (a cross-file definition
    lookup must not pick the other file's body by name and signature)."""
    for kernel, mine, other in (("rdc_clamp_a", "x < 0.0f", "x > 1.0f"), ("rdc_clamp_b", "x > 1.0f", "x < 0.0f")):
        m = only_meta(rdc, kernel)
        text = "\n".join(unit_texts(rdc, m))
        assert mine in text and other not in text, (kernel, text)
        assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_device_definitions_of_another_project_file_come_into_the_unit(rdc: dict[str, Any]) -> None:
    """kern.cu calls `rdc_scale`, `rdcns::rdc_blend` and `rdc_poly` and uses `rdc_counter` and `rdc_coeffs`,
    which helpers.cuh only declares: the unit needs helpers.cu's definitions (with `RDC_BIAS`, `RdcPair`, the
    static `rdc_square` that `rdc_poly` calls, and the `__constant__` array's initializer) to compile alone."""
    m = only_meta(rdc, "rdc_kernel")
    text = "\n".join(unit_texts(rdc, m))
    assert "return x * s + RDC_BIAS;" in text, text
    assert "__constant__ float rdc_coeffs[4] = {1.0f, 0.5f, 0.25f, 0.125f};" in text, text
    assert "extern __device__ int rdc_counter;" not in text, text
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_where_each_definition_came_from_is_recorded(rdc: dict[str, Any]) -> None:
    """`closure.cross_file` names each definition the unit took from another file, with its file and line."""
    m = only_meta(rdc, "rdc_kernel")
    got = {c["symbol"]: c["from"] for c in m["closure"]["cross_file"]}
    assert got == {"rdc_scale": "util/helpers.cu:9", "rdcns::rdc_blend": "util/helpers.cu:11",
                   "rdc_poly": "util/helpers.cu:13", "rdc_counter": "util/helpers.cu:5",
                   "rdc_coeffs": "util/helpers.cu:6"}, got


def test_an_overload_comes_from_the_file_that_defines_that_overload_with_what_it_calls(rdc: dict[str, Any]) -> None:
    """`rdc_scale(int, int)` is defined in scale_int.cu, `rdc_scale(float, float)` in helpers.cu: the int kernel's
    unit takes the int one (matched by its parameter types, not by name), and `rdc_offset`, which that
    definition calls and a third file defines with a macro of its own. The float kernel, whose closure holds both
    prototypes, takes no definition of the overload it never calls."""
    m = only_meta(rdc, "rdc_int_kernel")
    text = "\n".join(unit_texts(rdc, m))
    assert "return x * s + rdc_offset();" in text and "#define RDC_OFFSET 7" in text, text
    assert "RDC_BIAS" not in text, text
    assert {c["symbol"]: c["from"] for c in m["closure"]["cross_file"]} == {
        "rdc_scale": "util/scale_int.cu:2", "rdc_offset": "util/offset.cu:3"}, m["closure"]["cross_file"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    other = "\n".join(unit_texts(rdc, only_meta(rdc, "rdc_kernel")))
    assert "rdc_offset()" not in other, other


def test_a_declared_device_function_no_project_file_defines_is_stated(rdc: dict[str, Any]) -> None:
    """`rdc_elsewhere` is declared in the header and defined nowhere in the project: the kernel's unresolved
    entries say so (the unit keeps the declaration; its build fails as the original's link would without the
    library)."""
    m = only_meta(rdc, "rdc_lib_kernel")
    hits = [u for u in m["unresolved"] if u["symbol"] == "rdc_elsewhere"]
    assert hits and "no project file defines" in hits[0]["reason"], m["unresolved"]
    assert "cross_file" not in m["closure"], m["closure"]
    # defined only under an `#ifdef` the configuration mined leaves off: the file is named, and why it gave none
    m = only_meta(rdc, "rdc_guarded_kernel")
    hits = [u for u in m["unresolved"] if u["symbol"] == "rdc_guarded"]
    assert hits and "(guarded.cu) are none of this one in the configuration mined" in hits[0]["reason"], m["unresolved"]


def test_verify_compiles_the_original_with_the_files_that_define_what_it_declares(rdc: dict[str, Any],
                                                                                  tmp_path: Path) -> None:
    """Alone, kern.cu's PTX calls `rdc_scale` and the other definitions as `.extern` functions the unit inlines:
    no comparison. verify compiles it with helpers.cu (the `closure.cross_file` files) as one relocatable TU
    (`-rdc=true`), whose kernel is the unit's to the instruction; the int kernel's original takes its two files."""
    ds = tmp_path / "ds"
    shutil.copytree(rdc["out"], ds)
    r = run_miner("verify", ds, "--kernels", "rdc_kernel,rdc_int_kernel", "--cache-dir", tmp_path / "cache",
                  timeout=600)
    assert r.returncode == 0, (r.stdout, r.stderr)
    got = {m["name"]: [i["fidelity"]["status"] for i in m["instantiations"]] for m in load_dataset(ds)
           if m["name"] in ("rdc_kernel", "rdc_int_kernel")}
    assert got == {"rdc_kernel": ["identical"], "rdc_int_kernel": ["identical"]}, got


def test_a_program_of_a_collection_takes_its_own_definition_and_never_another_programs(rdc: dict[str, Any]) -> None:
    """Three programs side by side declare `rdc_bits` alike (one USR); prog1 and prog3 define it differently and
    prog2 not at all. A definition counts only under the folder holding both the kernel's file and the
    declaration: prog1's kernel takes prog1's, prog3's prog3's, and prog2's is stated, not given another's."""
    for kernel, mine, other in (("rdc_bits_1", "x & 0xffu", "x & 0xfu;"), ("rdc_bits_3", "x & 0xfu;", "x & 0xffu")):
        m = only_meta(rdc, kernel)
        text = "\n".join(unit_texts(rdc, m))
        assert mine in text and other not in text, (kernel, text)
        assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    m = only_meta(rdc, "rdc_bits_2")
    text = "\n".join(unit_texts(rdc, m))
    assert "x & 0xf" not in text, text
    hits = [u for u in m["unresolved"] if u["symbol"] == "rdc_bits"]
    assert hits and "outside the folder of the kernel" in hits[0]["reason"], m["unresolved"]


def test_a_member_function_defined_out_of_line_in_another_file_comes_into_the_unit(rdc: dict[str, Any]) -> None:
    """`RdcBody::step` is declared in its class (body.h) and defined in body.cpp with a macro of that file: the
    unit takes the out-of-line definition after the class (with the class's other device members defined out of
    line, as the closure takes a class)."""
    m = only_meta(rdc, "rdc_step_bodies")
    text = "\n".join(unit_texts(rdc, m))
    assert "void RdcBody::step(float dt) { vel *= RDC_DRAG;" in text and "#define RDC_DRAG 0.99f" in text, text
    assert [(c["symbol"], c["from"]) for c in m["closure"]["cross_file"]] == [
        ("RdcBody::step", "particles/body.cpp:4")], m["closure"]["cross_file"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_definition_outside_the_mined_folder_is_found_in_the_project(tmp_path: Path) -> None:
    """Only `ops/` is mined, with `--project` at the sources' top: helpers.cu (in `util/`, which nothing includes)
    is no file of the run, but a file of the project under the folder of the kernel and its declaration."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "rdc" / "src", src)
    out = tmp_path / "out"
    r = run_miner("extract", src / "ops", "-o", out, "--project", src, "--build", "-j", "2",
                  env={"XDG_CACHE_HOME": str(tmp_path / "cache")}, timeout=600)
    assert r.returncode in (0, 1), (r.stdout, r.stderr)
    (m,) = [m for m in load_dataset(out) if m["name"] == "rdc_kernel"]
    assert [c["from"] for c in m["closure"]["cross_file"]] == [
        "../util/helpers.cu:9", "../util/helpers.cu:5", "../util/helpers.cu:6", "../util/helpers.cu:11",
        "../util/helpers.cu:13"], m["closure"]["cross_file"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    # verify finds the defining file through the `..` of `from` and compiles it with the original
    r = run_miner("verify", out, "--kernels", "rdc_kernel", "--cache-dir", tmp_path / "vcache", timeout=600)
    assert r.returncode == 0, (r.stdout, r.stderr)
    (m,) = [m for m in load_dataset(out) if m["name"] == "rdc_kernel"]
    assert [i["fidelity"]["status"] for i in m["instantiations"]] == ["identical"], m["instantiations"]
