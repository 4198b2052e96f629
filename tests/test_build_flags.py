"""miner.source.build_flags: the project's nvcc flags read from its build files, white-listed."""

from __future__ import annotations

from pathlib import Path

from miner.builder.scheduler import Builder
from miner.builder.toolchain import BuildOptions
from miner.builder.unit_split import Unit
from miner.source import build_flags


def test_setup_py_of_a_torch_extension(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "setup.py").write_text(
        "from torch.utils.cpp_extension import CUDAExtension\n"
        "nvcc = ['-O3', '--std c++2a', '-expt-extended-lambda', '-U__CUDA_NO_HALF_OPERATORS__', '-DUSE_X',\n"
        "        '-gencode=arch=compute_80,code=sm_80', '-I/opt/x', '-o', 'out']  # '-std=c++23' in a comment\n"
        "if win: cflags = ['/std:c++17', '-std=c++17']\n")
    got = build_flags.find(str(tmp_path / "src" / "k.cu"), str(tmp_path))
    assert got == {"nvcc": ["-std=c++20", "-D__CUDA_NO_HALF_CONVERSIONS__", "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
                            "-D__CUDA_NO_HALF2_OPERATORS__", "--expt-relaxed-constexpr", "--extended-lambda",
                            "-U__CUDA_NO_HALF_OPERATORS__"],
                   "from": ["setup.py"]}


def test_cmake_standard_and_no_build_file(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "CMakeLists.txt").write_text("set(CMAKE_CXX_STANDARD 17)\n# set(CMAKE_CUDA_STANDARD 23)\n"
                                             "target_compile_features(k PUBLIC cuda_std_20)\n")
    assert build_flags.find(str(tmp_path / "a" / "k.cu"), str(tmp_path))["nvcc"] == ["-std=c++20"]
    assert build_flags.find(str(tmp_path / "a" / "k.cu"), str(tmp_path / "a")) is None
    # a python file that builds no torch extension says nothing
    (tmp_path / "a" / "setup.py").write_text("setup(name='x', extra=['-std=c++20'])\n")
    assert build_flags.find(str(tmp_path / "a" / "k.cu"), str(tmp_path / "a")) is None


def test_applied_and_parse_args() -> None:
    assert build_flags.applied(["-std=c++14", "--expt-relaxed-constexpr"]) == ["--expt-relaxed-constexpr"]
    assert build_flags.applied(["-std=c++20"]) == ["-std=c++20"]
    assert build_flags.parse_args(["-std=c++14"]) == ["-std=c++17"]
    assert build_flags.parse_args(["-std=c++20", "-D__CUDA_NO_HALF2_OPERATORS__", "-U__CUDA_NO_HALF_OPERATORS__"]) == [
        "-std=c++20", "-DKM_BUILD_HALF_FLAGS", "-D__CUDA_NO_HALF2_OPERATORS__"]
    assert build_flags.source_std("template <class T> concept C = true;") == "-std=c++20"
    assert build_flags.source_std("int requires = 3;") is None


def test_units_with_different_flags_are_never_batched_together(tmp_path: Path) -> None:
    def unit(i: int, flags: list[str]) -> Unit:
        return Unit("k", i, str(i), tmp_path, f"u{i}.cu", "s", "k", includes=["#include <cuda_runtime.h>"],
                    batchable=True, flags=flags, key=str(i))
    b = Builder.__new__(Builder)
    b.opts = BuildOptions(jobs=1)
    batches = b._plan([unit(0, []), unit(1, ["-std=c++20"]), unit(2, []), unit(3, ["-std=c++20"])])
    assert sorted(sorted(u.index for u in g) for g in batches) == [[0, 2], [1, 3]]


def test_cxx20_torch_translation_units_parse_with_the_shared_prefix(tmp_path: Path) -> None:
    """Two C++20 torch TUs get the precompiled torch prefix; libclang 18 refused it under -std=c++20
    (TranslationUnitLoadError) unless it was saved with the preprocessing record the units' parse asks for,
    and every kernel fell back to tree-sitter without launches."""
    import pytest

    from tests.conftest import load_dataset, run_miner

    pytest.importorskip("clang.cindex")
    src = tmp_path / "ext"
    (src / "csrc").mkdir(parents=True)
    (src / "setup.py").write_text("from torch.utils.cpp_extension import CUDAExtension\n"
                                  "args = {'nvcc': ['-std=c++20']}\n")
    for name in ("a", "b"):
        (src / "csrc" / f"{name}.cu").write_text(
            "#include <torch/extension.h>\n"
            f"template <typename T> __global__ void {name}_kernel(T *x, int n) {{ if (n) x[0] = T(1); }}\n"
            f"void {name}(at::Tensor t) {{\n"
            "  AT_DISPATCH_FLOATING_TYPES(t.scalar_type(), \"k\", [&] {\n"
            f"    {name}_kernel<scalar_t><<<1, 32>>>(t.data_ptr<scalar_t>(), 1);\n"
            "  });\n}\n")
    out = tmp_path / "out"
    proc = run_miner("extract", src, "-o", out, "-j", "2", "-v", env={"XDG_CACHE_HOME": str(tmp_path / "cache")},
                     timeout=600)
    assert proc.returncode == 0, proc.stderr
    metas = load_dataset(out)
    assert {m["name"]: (m["frontend"], len(m["launches"])) for m in metas} == {
        "a_kernel": ("clang", 2), "b_kernel": ("clang", 2)}  # float and double
    assert all(m["build_flags"]["nvcc"][0] == "-std=c++20" for m in metas)


def test_a_script_of_several_extensions_gives_a_file_the_flags_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "csrc" / "sub").mkdir(parents=True)
    (tmp_path / "setup.py").write_text(
        "import os\nfrom torch.utils.cpp_extension import CUDAExtension\n"
        "common = ['-O3', '--expt-extended-lambda']\n"
        "exts = [CUDAExtension(name='norm', sources=['csrc/norm.cpp', 'csrc/norm_kernel.cu'],\n"
        "                      extra_compile_args={'nvcc': common + ['-std=c++17']}),\n"
        "        CUDAExtension(name='softmax', sources=[os.path.join('csrc', 'sub', 'softmax.cu')],\n"
        "                      extra_compile_args={'nvcc': ['-U__CUDA_NO_HALF_OPERATORS__', '-std=c++20']})]\n")
    norm = build_flags.find(str(tmp_path / "csrc" / "norm_kernel.cu"), str(tmp_path))
    assert norm is not None and "-U__CUDA_NO_HALF_OPERATORS__" not in norm["nvcc"]
    assert norm["nvcc"][0] == "-std=c++17" and "--extended-lambda" in norm["nvcc"]
    soft = build_flags.find(str(tmp_path / "csrc" / "sub" / "softmax.cu"), str(tmp_path))
    assert soft is not None and "-U__CUDA_NO_HALF_OPERATORS__" in soft["nvcc"] and soft["nvcc"][0] == "-std=c++20"
    # a file no extension names (a header; sources gathered by glob) gets every flag written
    other = build_flags.find(str(tmp_path / "csrc" / "common.cuh"), str(tmp_path))
    assert other is not None and "-U__CUDA_NO_HALF_OPERATORS__" in other["nvcc"] and other["nvcc"][0] == "-std=c++20"


def test_defines_of_the_nvcc_flag_lists_only(tmp_path: Path) -> None:
    """A `-D` in a literal nvcc list (dict key or `args['nvcc'] = / +=`) is the build's own configuration; one
    in a cxx list, a plain variable or an environment default is not, nor one that selects HIP."""
    (tmp_path / "setup.py").write_text(
        "import os\nfrom torch.utils.cpp_extension import CUDAExtension\n"
        "args = {'cxx': ['-O3', '-DCPU_ONLY'], 'nvcc': ['-O3', '-DWITH_CUDA', '-DTILE=16']}\n"
        "args['nvcc'] += ['-DUSE_ROCM', '-D__FILENAME__=\"$$(notdir $$<)\"', '-DHAS_FP16=1 -DFAST']\n"
        "flags = ['-DNOT_NVCC']\nmlu = os.getenv('MLU_ARGS', '-DNDEBUG')\n"
        "ext = CUDAExtension(name='x', sources=['k.cu'], extra_compile_args=args)\n")
    got = build_flags.find(str(tmp_path / "k.cu"), str(tmp_path))
    assert got is not None
    defines = [f for f in got["nvcc"] if f.startswith("-D") and not f.startswith("-D__CUDA_NO_")]
    assert sorted(defines) == ["-DFAST", "-DHAS_FP16=1", "-DTILE=16", "-DWITH_CUDA"], got
    assert build_flags.parse_args(got["nvcc"])[1:] == defines
    assert set(defines) <= set(build_flags.applied(got["nvcc"]))
