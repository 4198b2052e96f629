"""CUTLASS/CuTe from the nvidia-cutlass wheel (miner.cuda_libs.HEADER_LIBRARIES) on tests/fixtures/cutlass_user: a
tree whose kernel includes `cutlass/...` and `cute/...` without holding them (a project has them as a git
submodule a plain checkout lacks). With the wheel, the parse reads the wheel's headers, the unit keeps the
project's `#include`s (nothing of CUTLASS inlined) and the build adds the wheel's include dir; without it, the unit
keeps the includes all the same and its build says what to install. Judged by the real nvcc."""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, load_dataset, run_miner

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


def _wheel_installed() -> bool:
    spec = importlib.util.find_spec("cutlass_library")
    return spec is not None and any((Path(d) / "source" / "include" / "cute").is_dir()
                                    for d in spec.submodule_search_locations or [])


needs_wheel = pytest.mark.skipif(not _wheel_installed(), reason="nvidia-cutlass is not installed")


def _extract(tmp: pytest.TempPathFactory, name: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    src = tmp.mktemp(f"{name}-src") / "cutlass_user"
    shutil.copytree(FIXTURES / "cutlass_user", src)
    out = tmp.mktemp(f"{name}-out")
    proc = run_miner("extract", src, "-o", out, "--build", "-j", "2",
                     env={"XDG_CACHE_HOME": str(tmp.mktemp(f"{name}-cache")), **(env or {})}, timeout=900)
    assert proc.returncode in (0, 1), proc.stderr
    (meta,) = load_dataset(out)
    return {"proc": proc, "out": out, "meta": meta}


@pytest.fixture(scope="module")
def with_wheel(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not _wheel_installed():
        pytest.skip("nvidia-cutlass is not installed")
    return _extract(tmp_path_factory, "wheel")


def _units(d: dict[str, Any]) -> dict[str, str]:
    kdir = Path(d["out"]) / d["meta"]["id"]
    return {i["id"]: (kdir / i["unit"]).read_text() for i in d["meta"]["instantiations"]}


def test_the_tree_holds_no_cutlass() -> None:
    names = {p.name for p in (FIXTURES / "cutlass_user").rglob("*")}
    assert names == {"scale.cuh", "launch.cu"}


@needs_wheel
def test_units_include_cutlass_and_build_with_the_wheels_headers(with_wheel: dict[str, Any]) -> None:
    meta = with_wheel["meta"]
    assert with_wheel["proc"].returncode == 0, with_wheel["proc"].stdout + with_wheel["proc"].stderr
    assert {i["id"]: i["build"]["status"] for i in meta["instantiations"]} == {
        "cutlass_half_t_4": "ok", "float_2": "ok"}
    (v,) = meta["closure"]["vendored"]
    assert (v["library"], v["wheel"], v["include_dir"], v["headers"]) == (
        "cutlass", "nvidia-cutlass", "", ["cutlass/numeric_types.h", "cutlass/array.h", "cute/tensor.hpp"])
    assert v["source"].startswith("nvidia-cutlass==")
    for inst in meta["instantiations"]:
        ext = inst["build"]["external_includes"]
        assert {e["header"] for e in ext} == set(v["headers"])
        assert all(e["package"].startswith("nvidia-cutlass==") for e in ext)
    # The library is not carried into the dataset: the build finds the installed wheel.
    assert not (Path(with_wheel["out"]) / "vendor").exists()
    for text in _units(with_wheel).values():
        includes = text[text.index("// km:includes-begin"):text.index("// km:includes-end")]
        assert "#include <cutlass/array.h>" in includes and "#include <cute/tensor.hpp>" in includes
        body = text[text.index("// km:body-begin"):]
        # The project's own code is inlined; nothing of CUTLASS is (no definition of its types or macros).
        assert "struct Pack" in body and "T times(T x, float a)" in body
        assert re.search(r"namespace (cutlass|cute) *\{", body) is None and "#define CUTLASS" not in body
        assert "pip install nvidia-cutlass" in text


@needs_wheel
def test_verify_compiles_the_original_translation_unit_with_the_wheel(with_wheel: dict[str, Any],
                                                                      tmp_path: Path) -> None:
    proc = run_miner("verify", with_wheel["out"], "-j", "2", "--cache-dir", tmp_path / "vcache", timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2/2 built instantiations verified: 2 identical" in proc.stdout, proc.stdout


def test_without_the_wheel_units_keep_the_includes_and_say_what_to_install(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    # A `cutlass_library` package without headers, first on the path, hides an installed wheel.
    hide = tmp_path_factory.mktemp("no-wheel")
    (hide / "cutlass_library").mkdir()
    (hide / "cutlass_library" / "__init__.py").write_text("")
    d = _extract(tmp_path_factory, "nowheel", env={"PYTHONPATH": str(hide)})
    meta = d["meta"]
    (v,) = meta["closure"]["vendored"]
    assert (v["wheel"], v["source"]) == ("nvidia-cutlass", "nvidia-cutlass (not installed)")
    for inst in meta["instantiations"]:
        b = inst["build"]
        assert (b["status"], b["error_class"]) == ("failed", "missing_toolkit_header"), b
        assert "needs CUTLASS: pip install nvidia-cutlass" in b["error"]
    for text in _units(d).values():
        assert "#include <cutlass/numeric_types.h>" in text and re.search(r"namespace (cutlass|cute) *\{", text) is None
