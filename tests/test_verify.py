"""`kernel-miner verify`: units of our own fixture kernels compile to the same PTX as their original
translation unit (real nvcc), and a unit changed by hand is caught with the lines that differ."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from miner.dataset import schema
from miner.verify import ptx
from tests.conftest import FIXTURES, load_dataset, run_miner
from tests.test_build import needs_nvcc

pytestmark = needs_nvcc


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture extracted and built once (outside any git checkout); tests work on copies."""
    base = tmp_path_factory.mktemp("verify")
    src = base / "src"
    shutil.copytree(FIXTURES / "verify", src)
    out = base / "ds"
    r = run_miner("extract", src, "-o", out, "--build", "-j", "2",
                  "-q", timeout=600)
    assert r.returncode == 0, r.stderr
    return out


def _copy(built: Path, tmp_path: Path) -> Path:
    ds = tmp_path / "ds"
    shutil.copytree(built, ds)
    return ds


def _fidelity(ds: Path) -> dict[str, dict]:
    return {f"{m['name']}/{i['id']}": i.get("fidelity") for m in load_dataset(ds) for i in m["instantiations"]}


def test_units_are_identical_to_the_original(built: Path, tmp_path: Path) -> None:
    ds = _copy(built, tmp_path)
    cache = tmp_path / "cache"
    r = run_miner("verify", ds, "--cache-dir", cache, "-j", "2", timeout=600)
    assert r.returncode == 0, r.stderr
    # Exercised on the way: an anonymous-namespace callee (per-file uniquifier), an assert (file name and
    # line), a static __shared__ array at module level in the original and demoted in the unit, printf strings.
    assert "6/6 built instantiations verified: 6 identical, 0 differs, 0 original_unbuildable" in r.stdout
    fid = _fidelity(ds)
    assert set(fid) == {"vf_scale/float", "vf_scale/double", "vf_gather/float_4", "vf_report/default",
                        "vf_total/default", "vf_axpy/float"}
    assert all(f["status"] == "identical" and f["original"] == "vf_launch.cu" for f in fid.values())
    # vf_axpy is instantiated nowhere in the original: the wrapper's explicit instantiation made it.
    assert fid["vf_axpy/float"]["explicit_instantiation"] is True
    assert fid["vf_scale/float"]["explicit_instantiation"] is False
    assert fid["vf_scale/double"]["entry"] == "_Z8vf_scaleIdEviPKT_PS0_7VfRange"
    for m in load_dataset(ds):
        assert schema.errors(m) == [], m["id"]
    # Warm rerun: every PTX from the cache, no nvcc call.
    again = run_miner("verify", ds, "--cache-dir", cache, timeout=300)
    assert again.returncode == 0 and " 0 nvcc calls, 6 cached" in again.stdout, again.stdout
    # build --verify: the build's summary line, then verify's, from the same caches.
    both = run_miner("build", ds, "--verify", "--verify-cache-dir", cache, "-j", "2", timeout=600)
    assert both.returncode == 0, both.stderr
    lines = both.stdout.splitlines()
    assert "6/6 units built" in lines[0] and lines[1].startswith("6/6 built instantiations verified: 6 identical")


def test_a_changed_unit_differs(built: Path, tmp_path: Path) -> None:
    ds = _copy(built, tmp_path)
    unit = next(ds.glob("vf_scale-*/units/float/unit.cu"))
    text = unit.read_text(encoding="utf-8")
    assert "return v + v;" in text  # vf_twice, carried by the closure
    unit.write_text(text.replace("return v + v;", "return v * v;"), encoding="utf-8")
    r = run_miner("verify", ds, "--cache-dir", tmp_path / "cache", "--kernels", "vf_scale", timeout=600)
    assert r.returncode == 1
    assert "1 identical, 1 differs" in r.stdout
    assert "vf_scale-" in r.stderr and "/float: differs: " in r.stderr
    f = _fidelity(ds)["vf_scale/float"]
    assert f["status"] == "differs"
    removed = [ln for ln in f["first_diff"] if ln.startswith("-")]
    added = [ln for ln in f["first_diff"] if ln.startswith("+")]
    assert any("add.f32" in ln for ln in removed) and any("mul.f32" in ln for ln in added), f["first_diff"]


def test_an_original_that_does_not_compile(built: Path, tmp_path: Path) -> None:
    ds = _copy(built, tmp_path)
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "verify", src)
    launch = src / "vf_launch.cu"
    launch.write_text(launch.read_text(encoding="utf-8") + "\nint vf_broken = vf_no_such_name;\n", encoding="utf-8")
    r = run_miner("verify", ds, "--source", src, "--cache-dir", tmp_path / "cache", "--kernels", "vf_report",
                  timeout=300)
    assert r.returncode == 1
    f = _fidelity(ds)["vf_report/default"]
    assert f["status"] == "original_unbuildable" and 'identifier "vf_no_such_name" is undefined' in f["error"]
    # Sources found nowhere: one line, nothing recorded.
    r = run_miner("verify", ds, "--source", tmp_path, "--cache-dir", tmp_path / "cache", timeout=300)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "original source not found" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["verify", "no/such/dir"], "no/such/dir: not a dataset directory"),
    (["verify", ".", "--sample", "0"], "--sample must be at least 1"),
    (["verify", ".", "--source", "no/such/dir"], "--source is not a directory"),
])
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    r = run_miner(*args, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == f"kernel-miner: error: {message}" or (
        r.stderr.count("\n") == 1 and message in r.stderr), r.stderr


def test_normalization_keeps_code_and_drops_placement() -> None:
    """Two PTX texts that differ only in file-dependent names, label/depot indices and string numbering
    give one listing; a changed immediate does not."""
    def text(fn_index: int, uniq: str, strno: str, imm: int) -> str:
        name = f"_ZN{len(uniq)}{uniq}6helperEf"
        return f"""
.version 9.0
.global .align 1 .b8 $str{strno}[3] = {{104, 105, 0}};
.func  (.param .b32 func_retval0) {name}(
\t.param .b32 {name}_param_0
)
{{
\tld.param.f32 \t%f1, [{name}_param_0];
\tst.param.f32 \t[func_retval0+0], %f1;
\tret;
}}
.visible .entry _Z1kPf(
\t.param .u64 _Z1kPf_param_0
)
{{
\t.local .align 8 .b8 \t__local_depot{fn_index}[8];
\tmov.u64 \t%rd1, $str{strno};   // a comment
\t.loc 1 2 3
\tcall.uni (retval0), {name}, (param0);
$L__BB{fn_index}_2:
\tmov.u32 \t%r1, {imm};
\tret;
}}
"""
    a = ptx.parse(text(1, "_GLOBAL__N__65b35793_4_a_cu_d589cb60", "", 7))
    b = ptx.parse(text(4, "_GLOBAL__N__0badcafe_7_unit_cu_12345678", "$3", 7))
    c = ptx.parse(text(1, "_GLOBAL__N__65b35793_4_a_cu_d589cb60", "", 8))
    assert a.entries == ["_Z1kPf"]
    la, lb, lc = (ptx.listing(p, "_Z1kPf") for p in (a, b, c))
    assert la == lb
    assert any("helper" in ln for ln in la) and any(ln.startswith(".global") for ln in la)  # callee and data came along
    assert any("__local_depot[8]" in ln for ln in la)
    changed = [ln for ln in ptx.first_difference(la, lc) if ln[:1] in "+-"]
    assert la != lc and changed == ["-mov.u32 %r1, 7;", "+mov.u32 %r1, 8;"]




@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """verify_cases/samples mined with verify_cases as the project, built and verified once."""
    base = tmp_path_factory.mktemp("verify_cases")
    src = base / "src"
    shutil.copytree(FIXTURES / "verify_cases", src)
    ds = base / "ds"
    r = run_miner("extract", src / "samples", "-o", ds, "--project", src, "--build", "-j", "2", "-q", timeout=600)
    assert r.returncode == 0, r.stderr
    r = run_miner("verify", ds, "--cache-dir", base / "cache", "-j", "2", timeout=600)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "11/11 built instantiations verified: 11 identical" in r.stdout
    return src, ds


def test_host_code_written_for_cuda12(cases: tuple[Path, Path]) -> None:
    """An original whose host code calls `cudaMemAdvise(p, n, advice, cudaCpuDeviceId)` (CUDA 12's device
    number, a cudaMemLocation in CUDA 13) still compiles: verify declares the CUDA 12 signatures beside
    the toolkit's, host-only, so the kernel is compared and found identical."""
    assert _fidelity(cases[1])["vc_fill/default"]["status"] == "identical"


def test_include_dir_outside_the_mined_folder(cases: tuple[Path, Path]) -> None:
    """`#include <vc_helpers.h>` found in the project's common/ beside the mined samples/: extract records
    the dir (relative, with ..), verify compiles the original with it."""
    src, ds = cases
    meta = next(m for m in load_dataset(ds) if m["name"] == "vc_squares")
    assert "../common" in meta["parse_context"]["include_dirs"]
    assert (Path(meta["parse_context"]["root"]) / "../common").resolve() == (src / "common").resolve()
    assert _fidelity(ds)["vc_squares/default"]["status"] == "identical"


def test_header_of_a_git_submodule(cases: tuple[Path, Path], tmp_path: Path) -> None:
    """`#include <vcfmt/vcfmt.h>` from a dependency the project keeps as a git submodule (deps/vcfmt, named in
    .gitmodules): the parse finds it and records its include dir, the original compiles with it. With the
    submodule not checked out (`git clone` without --recursive, `git archive`), the original cannot compile,
    and the error says which submodule is missing and how to get it."""
    src, ds = cases
    meta = next(m for m in load_dataset(ds) if m["name"] == "vc_saturate")
    assert "../deps/vcfmt/include" in meta["parse_context"]["include_dirs"]
    assert _fidelity(ds)["vc_saturate/default"]["status"] == "identical"
    bare = tmp_path / "src"
    shutil.copytree(src, bare)
    shutil.rmtree(bare / "deps" / "vcfmt")
    (bare / "deps" / "vcfmt").mkdir()   # what `git clone` leaves for a submodule it did not check out
    ds2 = _copy(ds, tmp_path)
    r = run_miner("verify", ds2, "--source", bare / "samples", "--cache-dir", tmp_path / "cache",
                  "--kernels", "vc_saturate", timeout=600)
    assert r.returncode == 1, r.stderr
    f = _fidelity(ds2)["vc_saturate/default"]
    assert f["status"] == "original_unbuildable", f
    assert "vcfmt/vcfmt.h" in f["error"], f
    assert f["error"].endswith("(git submodules not checked out: ../deps/vcfmt; git submodule update --init "
                               "--recursive)"), f


def test_c_linkage_kernels(cases: tuple[Path, Path]) -> None:
    """`extern "C"` kernels (alone, in an `extern "C" {}` block, in a namespace, or a definition after an
    `extern "C"` declaration) keep their C linkage in the unit: the unit's .entry is the plain name, the
    original's. A C-linkage helper they call out of line keeps it too (its .func name is compared)."""
    src, ds = cases
    fid = _fidelity(ds)
    metas = {m["name"]: m for m in load_dataset(ds)}
    for name in ("vc_c_scale", "vc_c_shift", "vc_c_double", "vc_c_quad"):
        f = fid[f"{name}/default"]
        assert f["status"] == "identical" and f["entry"] == name and "original_entry" not in f, f
        assert metas[name]["linkage"] == "C"
        # Built in a batch or alone, the unit's resources are its kernel's, found by the plain name.
        assert metas[name]["instantiations"][0]["build"]["resources"]["kernel"] == name
    assert "linkage" not in metas["vc_fill"]
    unit = ds / metas["vc_c_quad"]["id"] / metas["vc_c_quad"]["instantiations"][0]["unit"]
    text = unit.read_text(encoding="utf-8")
    assert 'extern "C" { __device__ __noinline__ float vc_c_twice' in text
    assert "// km:c-symbols vc_c_quad vc_c_twice" in text
    out = src / "quad.ptx"
    subprocess.run(["nvcc", "-ptx", "-arch=compute_90", str(unit), "-o", str(out)], check=True, timeout=300)
    assert "call.uni" in out.read_text(encoding="utf-8") and "vc_c_twice," in out.read_text(encoding="utf-8")


def test_units_defining_one_c_symbol_are_batched_apart() -> None:
    """Two units that define the same C-linkage name (a helper both kernels' units carry) never share a
    build batch: its namespace does not make the two definitions different symbols."""
    from miner.builder.scheduler import _apart_by_c_symbols
    from miner.builder.unit_split import Unit

    def unit(i: int, names: list[str]) -> Unit:
        return Unit(f"k{i}", 0, "default", Path("."), "u.cu", f"s{i}", f"k{i}", c_symbols=names)

    units = [unit(0, ["k0", "h"]), unit(1, ["k1", "h"]), unit(2, []), unit(3, ["k3"]), unit(4, ["h"])]
    groups = [[u.kernel_id for u in b] for b in _apart_by_c_symbols(units)]
    assert groups == [["k0", "k2", "k3"], ["k1"], ["k4"]]


def test_enum_argument_in_the_wrapper(cases: tuple[Path, Path]) -> None:
    """A header kernel launched with VC_ADD in the TU verify compiles and with VC_MUL in another file: the
    wrapper appends the unit's own explicit instantiation (`vc_apply<static_cast<vc_op>(2), 4>`), not
    the recorded `2`, which no enum parameter accepts."""
    fid = _fidelity(cases[1])
    assert fid["vc_apply/1_4"]["status"] == "identical" and not fid["vc_apply/1_4"]["explicit_instantiation"]
    assert fid["vc_apply/2_4"]["status"] == "identical" and fid["vc_apply/2_4"]["explicit_instantiation"]


def test_project_flags_on_both_sides(cases: tuple[Path, Path]) -> None:
    """The project's nvcc flags (CMakeLists.txt: --expt-relaxed-constexpr, which the kernel needs to call
    std::numeric_limits<float>::max()) are given to the original's compile and the unit's, as the build
    gives them to the unit: without them one side does not compile."""
    meta = next(m for m in load_dataset(cases[1]) if m["name"] == "vc_clamp_half_max")
    assert meta["build_flags"]["nvcc"] == ["--expt-relaxed-constexpr"]
    # samples/CMakeLists.txt says nothing of flags: the parent folder's build file gives them.
    assert meta["build_flags"]["from"] == ["samples/CMakeLists.txt", "CMakeLists.txt"], meta["build_flags"]
    assert _fidelity(cases[1])["vc_clamp_half_max/default"]["status"] == "identical"


def test_assert_function_name_is_not_compared(tmp_path: Path) -> None:
    """`assert` passes __PRETTY_FUNCTION__ to __assertfail, spelled as the template was instantiated: an
    original instantiated through int16_t says `[with T = signed short]`, a unit's `short`. The string is
    not compared (like the file name and line); the asserted condition is."""
    body = ("#include <cassert>\n#include <cstdint>\n"
            "template <typename T> __global__ void vc_check(T* p) { assert(p[0] > COND); p[0] = 1; }\n")
    listings = []
    for cond, inst in (("0", "int16_t"), ("0", "short"), ("1", "short")):
        src = tmp_path / f"a_{cond}_{inst}.cu"
        src.write_text(body.replace("COND", cond) + f"template __global__ void vc_check<{inst}>({inst}*);\n",
                       encoding="utf-8")
        out = src.with_suffix(".ptx")
        subprocess.run(["nvcc", "-ptx", "-arch=compute_90", str(src), "-o", str(out)], check=True, timeout=300)
        parsed = ptx.parse(out.read_text(encoding="utf-8"))
        listings.append(ptx.listing(parsed, parsed.entries[0]))
    signed_short, short, other_condition = listings
    assert signed_short == short
    assert short != other_condition


def test_tree_sitter_sees_c_linkage() -> None:
    """The fallback frontend records C linkage too: `extern "C"` alone, a block, inside a namespace; not
    `extern "C++"`, not a plain kernel."""
    from miner.frontends import treesitter_frontend as ts

    if not ts.AVAILABLE:
        pytest.skip("tree-sitter-cuda is not installed")
    src = (FIXTURES / "verify_cases" / "samples" / "vc_linkage.cu").read_bytes()
    src += b'\nextern "C++" __global__ void vc_cpp(float* p) { p[0] = 1; }\n__global__ void vc_plain(float* p) {}\n'
    kernels, _ = ts.parse_bytes(src, "vc_linkage.cu")
    got = {k.name: k.c_linkage for k in kernels}
    assert got == {"vc_c_scale": True, "vc_c_shift": True, "vc_c_double": False, "vc_c_quad": True,
                   "vc_cpp": False, "vc_plain": False}


def _ptx_of(tmp_path: Path, sources: dict[str, str]) -> dict[str, ptx.Ptx]:
    """Each source compiled with the real nvcc to PTX and parsed, by name."""
    parsed = {}
    for name, text in sources.items():
        (tmp_path / f"{name}.cu").write_text(text)
        subprocess.run(["nvcc", "-arch=sm_90", "-ptx", "-o", str(tmp_path / f"{name}.ptx"),
                        str(tmp_path / f"{name}.cu")], check=True, capture_output=True, timeout=300)
        parsed[name] = ptx.parse((tmp_path / f"{name}.ptx").read_text())
    return parsed


def test_a_kernel_of_an_anonymous_namespace_is_found_and_compared(tmp_path: Path) -> None:
    """PyTorch ops define their kernels in `namespace ops { namespace { ... } }`; the unit keeps `ops` but not
    the anonymous namespace. The original's entry is found by its demangled name and the two compare
    identical (the entry's `.visible` linkage and the namespace's component in its `__shared__` array's name
    aside); the same kernel with other template arguments is not taken for it."""

    from miner.verify.driver import _find_entry

    body = ("template <typename T> __global__ void scale_kernel(int n, const T* x, T* y) {\n"
            "  __shared__ T tile[32];  // named through the anonymous namespace in the original\n"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x; tile[threadIdx.x] = i < n ? x[i] : T(0);\n"
            "  __syncthreads(); if (i < n) y[i] = tile[31 - threadIdx.x] * T(2); }\n"
            "template <typename T> __global__ void other_kernel(int n, const T* x, T* y) { if (n) y[0] = x[0]; }\n")
    sources = {"original": "namespace ops { namespace {\n" + body + "}\n"
                           "void launch(int n, const float* x, float* y) { scale_kernel<float><<<1, 32>>>(n, x, y);"
                           " other_kernel<float><<<1, 1>>>(n, x, y); }\n}\n",
               "unit": "namespace ops {\n" + body + "template __global__ void scale_kernel<float>(int, const float*, "
                       "float*);\n}\n"}
    parsed = _ptx_of(tmp_path, sources)
    entry = next(e for e in parsed["unit"].entries if "12scale_kernel" in e)
    assert ptx.find_entry(parsed["original"], entry) is None  # the mangled names differ
    found = _find_entry(parsed["original"], entry, "scale_kernel")
    assert found is not None and "_GLOBAL__N_" in found and "12scale_kernel" in found
    # the shared array's name spells the entry's (`_ZZ<entry>E4tile`: namespace component, substitution index):
    # it is compared as the entry's own name is
    assert ptx.listing(parsed["original"], found) == ptx.listing(parsed["unit"], entry)
    assert any("_ZZ<ENTRY>E4tile" in ln for ln in ptx.listing(parsed["unit"], entry))
    assert ptx.listing(parsed["original"], found, True) == ptx.listing(parsed["unit"], entry, True)
    # the same kernel with other template arguments is not taken for it
    assert _find_entry(parsed["original"], entry.replace("IfE", "IdE"), "scale_kernel") is None


def test_a_define_the_build_system_must_pass(cases: tuple[Path, Path]) -> None:
    """vc_config.h stops at `#error` unless the build passes VC_WIDE_ACC; the parse ran without it, so the
    unit has the `#if VC_WIDE_ACC` branch of 0. verify compiles the original with VC_WIDE_ACC=0 (the same
    configuration) and records it."""
    f = _fidelity(cases[1])["vc_sum_pairs/default"]
    assert f["status"] == "identical" and f["assumed_defines"] == ["VC_WIDE_ACC=0"], f
    assert "assumed_defines" not in _fidelity(cases[1])["vc_squares/default"]


def test_a_demanded_define_tested_elsewhere_is_not_assumed(tmp_path: Path) -> None:
    """Only a name that every `#ifdef`/`defined()` of the project tests in such a guard gets 0: where another
    `#ifdef X` exists, X=0 would switch that branch on, which the mined configuration did not."""
    from miner.verify.original import Original, guard_defines

    hdr = tmp_path / "cfg.h"
    tu = tmp_path / "a.cu"
    tu.write_text('#include "cfg.h"\n__global__ void k() {}\n')
    guard = "#pragma once\n#ifndef VC_X\n#error \"pass VC_X\"\n#endif\n"
    log = f"{hdr}:3:2: error: #error \"pass VC_X\"\n"
    orig = Original(root=tmp_path, tu=tu, rel="a.cu", defines=[], include_dirs=[], headers=[hdr])
    hdr.write_text(guard + "#if VC_X\nint wide;\n#endif\n")
    assert guard_defines(log, orig) == ["VC_X=0"]
    hdr.write_text(guard + "#ifdef VC_X\nint wide;\n#endif\n")
    assert guard_defines(log, orig) == []
    hdr.write_text(guard)   # already a mined define: not assumed again
    assert guard_defines(log, Original(root=tmp_path, tu=tu, rel="a.cu", defines=["VC_X=1"], include_dirs=[],
                                       headers=[hdr])) == []
    hdr.write_text("#pragma once\n#ifndef VC_X\n#else\n#error \"no\"\n#endif\n")   # the #else branch: no guard
    assert guard_defines(f"{hdr}:4:2: error: #error \"no\"\n", orig) == []


def test_a_parameter_type_that_is_an_alias_in_the_original(tmp_path: Path) -> None:
    """The original's headers make a parameter type an alias of another class template (torch 2.13's
    `at::GenericPackedTensorAccessor` is `torch::headeronly::detail::GenericPackedTensorAccessor<...>`), the
    unit's shim a class of the same layout: the mangled names differ. The original's entry of the same kernel
    and template arguments with the same PTX parameters is taken; one with other arguments, or whose
    parameters differ, is not. The names of the entry's local statics, which spell its mangled name, are
    compared as the entry's own name is."""
    from miner.verify.driver import _find_entry

    # A function-local __shared__ variable: its symbol (`_ZZ<entry>E4last`) spells the entry's mangled name.
    kernel = ("template <int B> __global__ void vc_rows(at::Acc<float, 2> a, float* out) {\n"
              "  __shared__ float last; if (threadIdx.x == 0) last = a.p[0]; __syncthreads();\n"
              "  out[threadIdx.x] = a.p[threadIdx.x * a.s[1]] * B + last; }\n")
    sources = {
        "original": "namespace lib { template <class I, typename T, int N> struct AccImpl { T* p; long s[N]; }; }\n"
                    "namespace at { template <typename T, int N> using Acc = lib::AccImpl<int, T, N>; }\n" + kernel
                    + "void run(at::Acc<float, 2> a, float* o) { vc_rows<64><<<1, 64>>>(a, o);"
                      " vc_rows<128><<<1, 128>>>(a, o); }\n",
        "unit": "namespace at { template <typename T, int N> struct Acc { T* p; long s[N]; }; }\n" + kernel
                + "template __global__ void vc_rows<128>(at::Acc<float, 2>, float*);\n",
        "wider": "namespace at { template <typename T, int N> struct Acc { T* p; long s[N + 1]; }; }\n" + kernel
                 + "template __global__ void vc_rows<128>(at::Acc<float, 2>, float*);\n",
        "other": "namespace at { template <typename T, int N> struct Acc { T* p; long s[N]; }; }\n" + kernel
                 + "template __global__ void vc_rows<32>(at::Acc<float, 2>, float*);\n",
    }
    parsed = _ptx_of(tmp_path, sources)
    unit, wider = parsed["unit"].entries[0], parsed["wider"].entries[0]
    assert ptx.find_entry(parsed["original"], unit) is None   # the mangled names differ
    found = _find_entry(parsed["original"], unit, "vc_rows", parsed["unit"])
    assert found is not None and "ILi128E" in found and "AccImpl" in found
    assert ptx.listing(parsed["original"], found) == ptx.listing(parsed["unit"], unit)
    assert any("_ZZ<ENTRY>E4last" in ln for ln in ptx.listing(parsed["unit"], unit))
    assert _find_entry(parsed["original"], unit, "vc_rows") is None   # without the unit's PTX: no guess
    assert _find_entry(parsed["original"], wider, "vc_rows", parsed["wider"]) is None   # other parameters
    other = parsed["other"].entries[0]   # template arguments the original does not instantiate
    assert _find_entry(parsed["original"], other, "vc_rows", parsed["other"]) is None


def test_inline_asm_braces_do_not_end_the_function(tmp_path: Path) -> None:
    """cuda_fp16's `__hadd2` is inline PTX `{add.f16x2 ...;\\n}`: its `}` lands in column 0 inside the kernel's
    body. The function runs to its own closing brace, so code after the asm is compared: a changed constant
    there differs."""
    listings = []
    for k in ("3.0f", "5.0f"):
        src = tmp_path / f"h{k[0]}.cu"
        src.write_text("#include <cuda_fp16.h>\n__global__ void vc_h2(__half2* a, float* out) {\n"
                       "  __half2 s = __hadd2(a[0], a[1]);\n"
                       f"  out[threadIdx.x] = __low2float(s) * {k} + out[threadIdx.x + 1]; }}\n")
        out = src.with_suffix(".ptx")
        subprocess.run(["nvcc", "-ptx", "-arch=compute_90", str(src), "-o", str(out)], check=True, timeout=300)
        text = out.read_text(encoding="utf-8")
        assert "\n}\n\t// end inline asm" in text  # the column-0 brace inside the body
        parsed = ptx.parse(text)
        body = parsed.functions[parsed.entries[0]]
        assert body[-1].startswith("}") and any("ret;" in ln for ln in body)
        listings.append(ptx.listing(parsed, parsed.entries[0]))
    assert listings[0] != listings[1]
    changed = [ln for ln in ptx.first_difference(*listings) if ln[:1] in "+-"]
    assert any("0f40400000" in ln for ln in changed) and any("0f40A00000" in ln for ln in changed), changed


def test_identical_in_the_originals_library_header_context(built: Path, tmp_path: Path) -> None:
    """A unit whose code is the original's only after the library headers the original includes (and the unit
    left out, as it leaves out torch's) is `differs` alone and `identical` in that module context: nvcc's
    numbering and scheduling move with declarations that emit no device code (LeetCUDA's flash attention
    kernels came out as the original after `#include <ostream>` alone). Here the unit is edited so that a
    macro of such a header decides its code, which makes the effect certain."""
    ds = _copy(built, tmp_path)
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "verify", src)
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "vf_lib.h").write_text("#pragma once\n#define VF_LIB_H 1\n", encoding="utf-8")
    launch = src / "vf_launch.cu"
    launch.write_text("#include <vf_lib.h>\n" + launch.read_text(encoding="utf-8"), encoding="utf-8")
    unit = next(ds.glob("vf_scale-*/units/float/unit.cu"))
    text = unit.read_text(encoding="utf-8")
    unit.write_text(text.replace("return v + v;", "\n#ifdef VF_LIB_H\nreturn v + v;\n#else\nreturn v * v;\n#endif\n"),
                    encoding="utf-8")
    r = run_miner("verify", ds, "--source", src, "--cache-dir", tmp_path / "cache", "--kernels", "vf_scale",
                  f"-X=-I{lib}", timeout=600)
    assert r.returncode == 1, r.stderr
    assert "1 differs (1 identical in the original's module context)" in r.stdout, r.stdout
    f = _fidelity(ds)["vf_scale/float"]
    assert f["status"] == "differs" and f["context"]["status"] == "identical", f
    assert f["context"]["headers"] >= 1, f["context"]
    assert "after the" in r.stderr and "library header(s) the original includes" in r.stderr, r.stderr
    from miner.verify.original import library_includes, locate
    meta = next(m for m in load_dataset(ds) if m["name"] == "vf_scale")
    found = library_includes(locate(meta, src))
    # the project's own headers are not library headers; the library's and the toolkit's are, in order
    assert found[0] == "#include <vf_lib.h>" and "#include <cuda_runtime.h>" in found, found
    assert not any("vf_helpers" in ln or "vf_kernels" in ln for ln in found), found


def test_a_host_template_instantiation_is_verified_in_the_tu_it_came_from(tmp_path: Path) -> None:
    """A header's launcher (`vo::fill<T>`) instantiated by a benchmark with `float` and by a test program with
    a type only that program defines (`pair_key`): the kernel is parsed with the benchmark (first by path), but
    each instantiation records the TU it came from (`origin_tu`) and verify compiles that one. Compiled in the
    benchmark, the `pair_key` instantiation named a type the benchmark lacks (original_unbuildable)."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "verify_origin", src)
    ds = tmp_path / "ds"
    r = run_miner("extract", src, "-o", ds, "--build", "-j", "2", "-q", timeout=600)
    assert r.returncode == 0, r.stderr
    meta = next(m for m in load_dataset(ds) if m["name"] == "fill_kernel")
    assert meta["parse_context"]["translation_unit"] == "bench/bench_fill.cu"
    tus = {i["args"][0]: i.get("origin_tu") for i in meta["instantiations"]}
    assert tus == {"float": "bench/bench_fill.cu", "pair_key": "tests/fill_pair_test.cu"}
    r = run_miner("verify", ds, "--cache-dir", tmp_path / "cache", "-j", "2", timeout=600)
    assert r.returncode == 0, (r.stdout, r.stderr)
    fid = _fidelity(ds)
    assert fid["fill_kernel/pair_key"]["status"] == "identical"
    assert fid["fill_kernel/pair_key"]["original"] == "tests/fill_pair_test.cu"
    assert fid["fill_kernel/float"]["original"] == "bench/bench_fill.cu"


def test_identical_beside_the_originals_other_callers_of_its_helpers(tmp_path: Path) -> None:
    """nvcc specializes a helper on the arguments all its callers in the module agree on before it inlines
    it: `vm_ceil_div(row + 1, 128)` in `vm_rows`, alone in its unit, is the helper's only caller and comes out
    with other registers and instructions than in the original, where `vm_tiled<32..256>` and `vm_chunks`
    call it with other divisors (llm.c's `softmax_autoregressive_backward_kernel6<BlockSize>` and its
    `ceil_div`). The template's instantiations are explained by their siblings; `vm_rows` is no template, so
    only the original's other kernels that call the same helper, as the original spells them, make its module
    context; `vm_pad` calls the helper too, and `vm_round_up`, which `vm_rows`' unit does not carry: it is left
    out of that context, which it would keep from compiling. A unit changed by hand stays unexplained."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "verify_module", src)
    ds = tmp_path / "ds"
    r = run_miner("extract", src, "-o", ds, "--build", "-j", "2", "-q", timeout=600)
    assert r.returncode == 0, r.stderr
    cache = tmp_path / "cache"
    r = run_miner("verify", ds, "--cache-dir", cache, "-j", "2", timeout=600)
    assert r.returncode == 1, r.stderr
    assert "7/7 built instantiations verified: 2 identical, 5 differs (5 identical in the original's module context)" \
        in r.stdout, r.stdout + r.stderr
    fid = _fidelity(ds)
    assert fid["vm_chunks/default"]["status"] == "identical"   # its divisor is a run-time value either way
    assert fid["vm_pad/default"]["status"] == "identical"
    for n in ("32", "64", "128", "256"):
        f = fid[f"vm_tiled/{n}"]
        assert f["status"] == "differs" and f["context"] == {"instantiations": 3, "status": "identical"}, f
    rows = fid["vm_rows/default"]
    assert rows["status"] == "differs" and rows["first_diff"], rows
    assert rows["context"] == {"instantiations": 0, "kernels": 2, "status": "identical"}, rows
    assert "beside the original's 2 other kernel(s) that call the same device functions" in r.stderr, r.stderr

    unit = next(ds.glob("vm_rows-*/units/default/unit.cu"))
    text = unit.read_text(encoding="utf-8")
    assert "acc += tile[i]" in text
    unit.write_text(text.replace("acc += tile[i]", "acc -= tile[i]"), encoding="utf-8")
    r = run_miner("verify", ds, "--cache-dir", cache, "--kernels", "vm_rows", timeout=600)
    assert r.returncode == 1 and "1 differs, 0 original_unbuildable" in r.stdout, r.stdout
    changed = _fidelity(ds)["vm_rows/default"]
    assert changed["status"] == "differs" and changed["context"]["status"] == "differs", changed
