"""Harness API: loading a real nvcc-built unit through ctypes, argument conversion, the wrapper."""

from __future__ import annotations

import importlib.util
import json
import shutil
import struct
from pathlib import Path

import pytest

from miner import harness
from miner.validate.wrapper import launch_config, python_expr, write_wrappers

REPO = Path(__file__).resolve().parents[1]
SAXPY = REPO / "tests" / "fixtures" / "faults" / "saxpy-good"


@pytest.fixture(scope="module")
def saxpy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ds") / "saxpy-good"
    shutil.copytree(SAXPY, d, ignore=shutil.ignore_patterns("validation", "*.so"))
    return d


def _load_module(path: Path):
    spec = importlib.util.spec_from_file_location(f"kw_{path.parent.name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_load_builds_and_binds_the_launcher(saxpy_dir: Path) -> None:
    unit = harness.load_unit(saxpy_dir, "float")
    assert unit.symbol == "saxpy_float" and unit.library.name == "libunit.so"
    assert [p.ctype for p in unit.params] == ["pointer", "pointer", "pointer", "float32", "int32"]
    assert not unit.has_atomics
    # Loaded again: the library now exists and is reused, not rebuilt.
    mtime = unit.library.stat().st_mtime
    assert harness.load_unit(saxpy_dir, "float").library.stat().st_mtime == mtime
    with pytest.raises(TypeError, match="takes 5 kernel arguments"):
        unit.launch(1, 256, 0, 0, 0, 1.0)
    with pytest.raises(TypeError, match="non-integer"):
        unit.launch(1, 256, 0, 0, 0, 1.0, 2.5, stream=0)
    with pytest.raises(ValueError, match="grid must be"):
        unit.launch((1, 1, 1, 1), 256, 0, 0, 0, 1.0, 4, stream=0)
    if not harness.cuda_available():
        # A real call into the unit's CUDA runtime: no device here, so it must say so.
        with pytest.raises(harness.CudaLaunchError) as err:
            unit.launch(1, 256, None, None, None, 2.0, 4, stream=0)
        assert err.value.no_gpu and err.value.error_name in ("cudaErrorNoDevice", "cudaErrorInsufficientDriver")


def test_unknown_instantiation_lists_the_known_ones(saxpy_dir: Path) -> None:
    with pytest.raises(KeyError, match="have: float, double"):
        harness.load_unit(saxpy_dir, "half")
    assert not (saxpy_dir / "units" / "double" / "libunit.so").exists()
    with pytest.raises(FileNotFoundError, match="not built"):
        harness.load_unit(saxpy_dir, "double", build=False)


def test_scalar_conversions_are_exact() -> None:
    half = harness.Param("h", "__half", "half")
    bf16 = harness.Param("b", "nv_bfloat16", "bfloat16")
    assert harness._convert(1.0, half).value == 0x3C00
    assert harness._convert(-2.0, half).value == 0xC000
    assert harness._convert(1.0, bf16).value == 0x3F80
    assert harness._convert(3.140625, bf16).value == struct.unpack("<I", struct.pack("<f", 3.140625))[0] >> 16
    assert harness._convert(7, harness.Param("n", "long", "int64")).value == 7
    assert harness._convert(True, harness.Param("f", "bool", "bool")).value is True
    with pytest.raises(TypeError, match="ctypes.Structure"):
        harness._convert(1, harness.Param("s", "Box", "struct"))


def test_cpu_tensor_is_refused_before_any_launch() -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="not on a CUDA device"):
        harness._convert(torch.zeros(3), harness.Param("x", "float *", "pointer"))


def test_launch_expressions_become_python_or_nothing() -> None:
    assert python_expr("(n + 255) / 256", {"n"}) == "(n + 255) // 256"
    assert python_expr("512u", set()) == "512"
    assert python_expr("GET_BLOCKS(n)", {"n"}) is None
    assert python_expr("__import__('os')", set()) is None
    assert python_expr("total / 2", {"n"}) is None  # not a kernel parameter
    params = [{"name": "out", "ctype": "pointer"}, {"name": "count", "ctype": "int32"}]
    meta = {"launches": [{"grid": {"text": "(num + 127) / 128"}, "block": {"text": "128"},
                          "args": ["buf", "num"]}]}
    cfg = launch_config(meta, params)
    assert cfg["grid"] == "(count + 127) // 128" and cfg["block"] == "128"


def test_rendered_wrapper_computes_grid_from_recorded_launch(tmp_path: Path) -> None:
    d = tmp_path / "saxpy-good"
    shutil.copytree(SAXPY, d, ignore=shutil.ignore_patterns("validation", "*.so"))
    meta = json.loads((d / "metadata.json").read_text())
    paths = write_wrappers(d, meta)
    assert [p.parent.name for p in paths] == ["float", "double"]
    kw = _load_module(paths[0])
    assert kw.PARAMS == ["out", "x", "y", "a", "n"]
    assert kw.config(kw._bind((None, None, None, 1.0), {"n": 4097})) == (17, 256, 0)
    with pytest.raises(TypeError, match="missing arguments n"):
        kw._bind((None, None, None, 1.0), {})
    # Without a recorded launch: block 256 and a grid covering the first size-like parameter.
    meta["launches"] = []
    kw2 = _load_module(write_wrappers(d, meta)[1])
    assert kw2.config(kw2._bind((None, None, None, 1.0, 1000), {})) == (4, 256, 0)
    assert "1-D default" in paths[1].read_text()


def test_pointer_element_size_must_match_the_parameter_type() -> None:
    assert harness.pointee_size("const float* __restrict__") == 4
    assert harness.pointee_size("const c10::Half *") == 2 and harness.pointee_size("int64_t*") == 8
    # Typedefs, byte buffers and pointers to pointers are not checked.
    assert harness.pointee_size("floatX*") is None and harness.pointee_size("unsigned char *") is None
    assert harness.pointee_size("float **") is None
    torch = pytest.importorskip("torch")
    boxes = harness.Param("rois", "const float *", "pointer")
    with pytest.raises(TypeError, match=r"rois is const float \* \(4-byte elements\) but the tensor is torch.float64"):
        harness._check_element_size(torch.zeros(5, dtype=torch.float64), boxes)
    harness._check_element_size(torch.zeros(5, dtype=torch.int32), boxes)  # same size: bit tricks are allowed


def test_atomics_in_the_inlined_torch_shim_do_not_count() -> None:
    shim = (REPO / "miner" / "frontends" / "include" / "unit" / "km_torch_unit.h").read_text()
    kernel = "__global__ void k(float *o, const float *x) { o[threadIdx.x] = x[threadIdx.x]; }"
    assert "atomicAdd(" in shim
    assert not harness.uses_atomics(shim + "\n" + kernel)
    assert harness.uses_atomics(shim + "\n" + kernel.replace("o[threadIdx.x] = x[threadIdx.x]", "atomicAdd(o, x[0])"))
