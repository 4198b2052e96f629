"""`extract --build` on tests/fixtures/blind11l: patterns found on the eleventh set's inference-engine kernels
(issue 14, scripts/corpus_repos_blind11.txt, development repos since session 14), each reproduced by code of our own
and judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from miner import cuda_libs
from miner.units.render import _source_missing
from tests.conftest import FIXTURES, build_statuses, extract_and_build, load_dataset, only_meta, run_miner, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind11l")


def test_a_macro_that_specializes_two_class_templates_brings_both_primaries(dataset: dict[str, Any]) -> None:
    """`MAP_KIND(kReal, float);` writes `kind_of<float>` and `type_of<Kind::kReal>`: the parse folds both into one
    piece named after the first, so the unit kept the macro's text but not the second's primary template
    ("type_of is not a template")."""
    m = only_meta(dataset, "tag_values")
    (unit,) = unit_texts(dataset, m)
    assert "struct type_of;" in unit and "struct kind_of;" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_using_declaration_of_an_internal_std_header_brings_the_public_one(dataset: dict[str, Any]) -> None:
    """`using std::shared_ptr;` in a project header the kernel needs nothing else of: libclang places shared_ptr in
    `bits/shared_ptr.h`; the unit includes the standard header that brought it in (`<memory>`), was "namespace std
    has no member shared_ptr"."""
    m = only_meta(dataset, "scale_span")
    (unit,) = unit_texts(dataset, m)
    assert "using std::shared_ptr;" in unit and "#include <memory>" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.mark.skipif(cuda_libs.header_library_dir(cuda_libs.HEADER_LIBRARIES[0]) is None,
                    reason="nvidia-cutlass is not installed")
def test_an_alias_of_a_wheel_namespace_stays_out_of_a_unit_without_the_wheel(dataset: dict[str, Any]) -> None:
    """`namespace ct = cutlass;` in a project header, for a kernel that names nothing of CUTLASS: the unit includes
    none of the wheel's headers, and the kept alias was "name must be a namespace name"."""
    m = only_meta(dataset, "twice_all")
    (unit,) = unit_texts(dataset, m)
    assert "namespace ct = cutlass;" not in unit and "cutlass/" not in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_header_found_through_an_include_dir_above_the_mined_folder_is_the_projects(tmp_path: Path) -> None:
    """Mining `src/lib/kernels` of a checkout whose files include `src/lib/utils/helpers.h` from the top (the parse's
    include dir `../../..`): a failed unit was stated as "includes src/lib/utils/helpers.h, which the project does not
    contain" (118 of lmdeploy's failures), hiding its real first error. A header no include dir holds still is."""
    kernels = tmp_path / "src" / "lib" / "kernels"
    (tmp_path / "src" / "lib" / "utils").mkdir(parents=True)
    kernels.mkdir(parents=True)
    (tmp_path / "src" / "lib" / "utils" / "helpers.h").write_text("#pragma once\n")
    (kernels / "scale.cu").write_text('#include "src/lib/utils/helpers.h"\n__global__ void k() {}\n')
    meta = {"source": {"path": "scale.cu"},
            "parse_context": {"root": str(kernels), "include_dirs": ["../../.."], "translation_unit": "scale.cu"}}
    assert _source_missing(meta) is None
    (kernels / "scale.cu").write_text('#include "src/lib/utils/absent.h"\n__global__ void k() {}\n')
    assert "which the project does not contain" in (_source_missing(meta) or "")


def test_a_value_pack_takes_the_launch_arguments_and_its_size(dataset: dict[str, Any]) -> None:
    """`template <int... Ds>` launched as `permute_nibbles<0, 1, 3, 2>`: four arguments for one parameter were no
    instantiation, the unit guessed `Ds = 0` and wrote `static_cast<int...>(0)` and `Dims<int, sizeof...(0)>`
    ("the sizeof... operator can be used only in a variadic template"). The pack takes the launch's values and
    `sizeof...(Ds)` their count."""
    m = only_meta(dataset, "permute_nibbles")
    assert [(i["args"], i["origin"]) for i in m["instantiations"]] == [(["0, 1, 3, 2"], "call_site")]
    (unit,) = unit_texts(dataset, m)
    assert "template __global__ void permute_nibbles<0, 1, 3, 2>(unsigned*, const unsigned*, Dims<int, 4>);" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_dropped_launch_takes_its_template_values_from_the_functions_constants(dataset: dict[str, Any]) -> None:
    """`sweep<BLOCK_X, BLOCK_DIM, LOG_TILE><<<...>>>(dsink.data().get(), ...)` in a statement the parse dropped (a
    `thrust::device_vector` it could not declare), with `constexpr int BLOCK_X = 128;` above it: the launch read back
    from the text kept the names, which the unit does not declare ("identifier BLOCK_X is undefined")."""
    m = only_meta(dataset, "sweep")
    assert [i["args"] for i in m["instantiations"]] == [["128", "256", "5"]]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_member_a_kept_friend_calls_keeps_its_body(dataset: dict[str, Any]) -> None:
    """`friend bool operator==(const Buffer&, const Buffer&)`, defined after the class as `a.as_tuple() ==
    b.as_tuple()`, comes with the namespace's `operator==` set (the kernel compares a device `Tag`); the host-only
    `auto as_tuple() const` was left declared only ("cannot deduce the return type of function as_tuple ... it has
    not been defined", 89 of lmdeploy's instantiations)."""
    m = only_meta(dataset, "count_same")
    (unit,) = unit_texts(dataset, m)
    assert "auto as_tuple() const { return std::tie(data_, size_); }" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_an_archive_checkouts_headers_above_the_mined_folder_are_its_context(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """`src/lib/kernels` of a checkout without `.git` (the corpora are git archives), whose files include
    `src/lib/utils/helpers.h` from the checkout's top: the project was the mined folder alone, so the helper was no
    input nor context, and the unit lacked it ("identifier halve is undefined"; lmdeploy's `src/turbomind/core`).
    The top its includes are spelled from (found through an input they name) is the project's."""
    src = tmp_path_factory.mktemp("archive-src") / "archive"
    shutil.copytree(FIXTURES / "blind11l_archive", src)
    out = tmp_path_factory.mktemp("archive-out")
    cache = tmp_path_factory.mktemp("archive-cache")
    run_miner("extract", src / "src" / "lib" / "kernels", "-o", out, "--build", "-j", "2",
              env={"XDG_CACHE_HOME": str(cache)}, timeout=600)
    (m,) = [m for m in load_dataset(out) if m["name"] == "halve_all"]
    unit = (out / m["id"] / m["instantiations"][0]["unit"]).read_text(encoding="utf-8")
    assert "LIB_HD float halve(float x)" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
