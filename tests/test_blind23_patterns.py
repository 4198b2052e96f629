"""Which build configuration applies to a source (issue 14, session 22): patterns of the twenty-second and
twenty-third sets (scripts/corpus_repos_blind22.txt, scripts/corpus_repos_blind23.txt) where the miner read the wrong
build description, each reproduced by code of our own under tests/fixtures/blind23 and judged by the real libclang
parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from miner.source import build_flags
from tests.conftest import FIXTURES, build_statuses, extract_and_build, only_meta

_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def shell_build(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind23/shell_build")


@_nvcc
def test_a_shell_scripts_nvcc_line_naming_the_source_beats_an_extension_nothing_can_import(
        shell_build: dict[str, Any]) -> None:
    """`lib/compile.sh` runs `nvcc -std=c++17 ... scale.cu -o libscale.so` (the library the project loads with
    ctypes); `lib/setup.py` beside it names `scale.cu` in a `CUDAExtension` none of whose sources defines a Python
    module. The unit gets the script's flags, not torch's `-D__CUDA_NO_BFLOAT16_CONVERSIONS__` (under which the
    kernel's `(float)bf16` does not compile), and both instantiations build."""
    m = only_meta(shell_build, "scale_rows_kernel")
    assert m["build_flags"]["from"] == ["lib/compile.sh"], m["build_flags"]
    assert m["build_flags"]["nvcc"] == ["-std=c++17"], m["build_flags"]
    assert build_statuses(m) == {"4_256": "ok", "8_512": "ok"}, m["instantiations"]


def test_an_importable_extension_still_counts_beside_a_shell_script(tmp_path: Path) -> None:
    """The control: where the extension's sources define the module (`PYBIND11_MODULE` in its binding file), the
    extension is a build of the source as the script is, and its torch flags stay; a script that names another
    file says nothing about this one."""
    src = FIXTURES / "blind23" / "shell_build" / "lib"
    lib = tmp_path / "lib"
    shutil.copytree(src, lib)
    (lib / "setup.py").write_text((src / "setup.py").read_text().replace('["scale.cu"]', '["scale.cu", "bind.cpp"]'))
    (lib / "bind.cpp").write_text("#include <torch/extension.h>\nPYBIND11_MODULE(scale_cuda, m) {}\n")
    found = build_flags.find(str(lib / "scale.cu"), str(tmp_path))
    assert found is not None and found["from"] == ["lib/compile.sh", "lib/setup.py"], found
    assert "-D__CUDA_NO_BFLOAT16_CONVERSIONS__" in found["nvcc"], found
    other = tmp_path / "other"  # (a folder of its own: the build files' readings are cached per path)
    shutil.copytree(src, other)
    (other / "compile.sh").write_text("nvcc -std=c++20 --shared other.cu -o libother.so\n")
    found = build_flags.find(str(other / "scale.cu"), str(tmp_path))
    assert found is not None and found["from"] == ["other/setup.py"] and "-std=c++20" not in found["nvcc"], found
