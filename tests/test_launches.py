"""Launch sites, kernel references and host-template chains, end to end through `kernel-miner extract`.

The sources below are our own: each reproduces in a few lines a pattern real repositories use to reach
a kernel (a `(void*)` table chosen by a host function template, a function pointer, a launch macro, a
template chain several calls deep).
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import load_dataset, run_miner

pytest.importorskip("clang.cindex")

SOURCES = {
    # A host function template returns one of many instantiations through a (void*) field; the launch
    # only sees `spec.kernel`.
    "table.cu": r"""
#include <cuda_runtime.h>
struct tile_params { const float* x; float* y; int n; };
struct tile_spec { void* kernel; int tile; };

template <class T, int TILE, int LOOP>
__global__ void tile_kernel(tile_params p) {
  __shared__ float buf[TILE];
  const int i = blockIdx.x * TILE + threadIdx.x;
  for (int l = 0; l < LOOP; ++l) buf[threadIdx.x % TILE] = i < p.n ? p.x[i] : 0.f;
  __syncthreads();
  if (i < p.n) p.y[i] = (T)buf[threadIdx.x % TILE];
}

template <class T>
__global__ void tile_kernel_large(tile_params p) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) p.y[i] = (T)p.x[i];
}

template <class T>
tile_spec choose_tile_kernel(const tile_params& p) {
  tile_spec spec = {(void*)tile_kernel_large<T>, -1};
  if (p.n <= 64) spec = {(void*)tile_kernel<T, 64, 1>, 64};
  if (p.n <= 32) spec = {(void*)tile_kernel<T, 32, 2>, 32};
  return spec;
}
template tile_spec choose_tile_kernel<float>(const tile_params&);
template tile_spec choose_tile_kernel<double>(const tile_params&);

cudaError_t run_tile(tile_params p, bool wide, cudaStream_t stream) {
  tile_spec spec = wide ? choose_tile_kernel<double>(p) : choose_tile_kernel<float>(p);
  void* args[] = {&p};
  return cudaLaunchKernel(spec.kernel, dim3((p.n + 255) / 256), dim3(256), args, 0, stream);
}
""",
    # Kernels named with template arguments outside a launch: a file-scope pointer, a (void*) table,
    # a local pointer launched with <<<>>>, and cudaLaunchKernel on a cast instantiation.
    "pointers.cu": r"""
#include <cuda_runtime.h>
#include <cuda_fp16.h>
template <typename T, int N>
__global__ void fill_n_kernel(T* out, T v) {
  const int i = blockIdx.x * N + threadIdx.x;
  out[i] = v;
}
auto fill_f256 = fill_n_kernel<float, 256>;
static void* const kFillTable[] = {(void*)fill_n_kernel<double, 128>};

void run_fill(int* out, __half* hout, cudaStream_t stream) {
  auto f = fill_n_kernel<int, 64>;
  f<<<1, 64, 0, stream>>>(out, 1);
  __half one = __float2half(1.f);
  void* args[] = {&hout, &one};
  cudaLaunchKernel((const void*)fill_n_kernel<__half, 4>, dim3(1), dim3(4), args, 0, stream);
}
""",
    # Template arguments fixed three calls up: top_chain<T> -> mid_chain<T> -> launch_chain<T, N>.
    "chain.cu": r"""
#include <cuda_runtime.h>
template <typename T, int N>
__global__ void chain_kernel(T* x, int n) {
  const int i = blockIdx.x * N + threadIdx.x;
  if (i < n) x[i] = x[i] * (T)2;
}
template <typename T, int N>
__global__ void chain_ref_kernel(T* x) { x[threadIdx.x % N] = (T)0; }
template <typename T, int N>
void launch_chain(T* x, int n, cudaStream_t s) {
  chain_kernel<T, N><<<(n + N - 1) / N, N, 0, s>>>(x, n);
  void* keep = (void*)chain_ref_kernel<T, N / 2>;
  (void)keep;
}
template <typename T>
void mid_chain(T* x, int n, cudaStream_t s) {
  launch_chain<T, 128>(x, n, s);
  launch_chain<T, 2 * 128>(x, n, s);
}
template <typename T>
void top_chain(T* x, int n, cudaStream_t s) {
  mid_chain<T>(x, n, s);
}
void run_chain(float* xf, double* xd, int n, cudaStream_t s) {
  top_chain<float>(xf, n, s);
  top_chain(xd, n, s);
}
""",
    # Host templates nobody instantiates: their parameters take the documented defaults.
    "orphans.cu": r"""
#include <cuda_runtime.h>
template <typename T, int B>
__global__ void orphan_kernel(T* x) { x[threadIdx.x % B] = (T)0; }
template <typename T, int B>
__global__ void lonely_kernel(T* x) { x[threadIdx.x % B] = (T)1; }
template <typename T, int B>
__global__ void member_kernel(T* x) { x[threadIdx.x % B] = (T)2; }

template <typename T>
void* pick_orphan(int b) {
  return b > 1 ? (void*)orphan_kernel<T, 8> : (void*)orphan_kernel<T, 4>;
}
template <typename T>
void never_called(T* x) { lonely_kernel<T, 32><<<1, 32>>>(x); }

// A class template's parameter is not a host function template's: no concrete arguments here.
template <typename T>
struct Runner {
  void run(T* x) { member_kernel<T, 16><<<1, 16>>>(x); }
};
""",
    # A table written with a macro, values from an enum and expressions (filtered_lrelu's pattern).
    "modes.cu": r"""
#include <cuda_runtime.h>
enum { kModeA = 0, kModeB = 3 };
struct mode_spec { void* setup; void* exec; };
__global__ void mode_setup_kernel(float* f) { f[threadIdx.x] = 0.f; }
template <class T, int TW, int TH, int MODE, bool WIDE>
__global__ void mode_kernel(T* x) { if (WIDE) x[threadIdx.x % TW] += (T)(TH + MODE); }

#define KM_MODE_CASE(W, H, MODE)                                  \
  if (w <= W && h <= H) {                                          \
    s.setup = (void*)mode_setup_kernel;                            \
    s.exec = (void*)mode_kernel<T, W, H * 2, MODE, !!(W > 8)>;     \
    return s;                                                      \
  }

template <class T>
mode_spec choose_mode(int w, int h) {
  mode_spec s = {0, 0};
  KM_MODE_CASE(8, 4, kModeA)
  KM_MODE_CASE(16, 8, kModeB)
  return s;
}

cudaError_t run_mode(float* x, double* y, int w, int h, cudaStream_t stream) {
  mode_spec spec = choose_mode<float>(w, h);
  void* args[] = {&x};
  cudaLaunchKernel(spec.setup, dim3(1), dim3(32), args, 0, stream);
  cudaLaunchKernel(spec.exec, dim3(1), dim3(128), args, 0, stream);
  mode_spec spec2 = choose_mode<double>(w, h);
  void* args2[] = {&y};
  return cudaLaunchKernel(spec2.exec, dim3(1), dim3(128), args2, 0, stream);
}
""",
    # No `<...>` at the launch: the kernel's arguments are deduced from the host template's parameters.
    "deduced.cu": r"""
#include <cuda_runtime.h>
#include <cuda_bf16.h>
typedef __nv_bfloat16 floatX;
template <typename Tp, typename Tg>
__global__ void step_kernel(Tp* params, const Tg* grads, float lr, int n) {
  const int i = threadIdx.x;
  if (i < n) params[i] = (Tp)((float)params[i] - lr * (float)grads[i]);
}
template <typename Tp, typename Tg>
void step_update(Tp* params, Tg* grads, float lr, int n, cudaStream_t s) {
  step_kernel<<<1, 256, 0, s>>>(params, grads, lr, n);
}
void step_all(float* p, floatX* g, floatX* q, int n) {
  step_update(p, g, 0.1f, n, 0);
  step_update(q, g, 0.1f, n, 0);
}
""",
    # `if constexpr` inside an AT_DISPATCH lambda: the discarded branch is never instantiated.
    "constexpr_dispatch.cu": r"""
#include <ATen/ATen.h>
template <class T, int N>
__global__ void narrow_kernel(T* x) { x[threadIdx.x] = (T)N; }
void run_narrow(at::Tensor x) {
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "run_narrow", [&] {
    if constexpr (sizeof(scalar_t) <= 4) {
      narrow_kernel<scalar_t, 1><<<1, 32>>>(x.data_ptr<scalar_t>());
    } else {
      narrow_kernel<scalar_t, 2><<<1, 32>>>(x.data_ptr<scalar_t>());
    }
  });
}
""",
    # Methods of class templates: a partial specialization instantiated explicitly (through a macro that
    # writes two instantiations at once), launches in a generic lambda dispatched over a list of tile
    # sizes, a member alias picked by the class's type, and a primary template used with concrete args.
    "classes.cu": r"""
#include <cuda_runtime.h>
#include <type_traits>
template <class... Ts> struct type_list {};
template <class T, T... I> using value_list = type_list<std::integral_constant<T, I>...>;
template <class F, class... Ts> void visit_each(type_list<Ts...>, F&& f) { (f(Ts{}), ...); }
template <class L, class F> void for_each_value(F&& f) { visit_each(L{}, f); }

template <typename T, typename I, int N>
__global__ void part_kernel(T* x, const I* idx) { x[idx[threadIdx.x] % N] = (T)0; }
template <typename T, int A, int B>
__global__ void tile_loop_kernel(T* x) { x[threadIdx.x % A] = (T)B; }
template <typename T, int A, typename V>
__global__ void vec_kernel(T* x) { x[threadIdx.x % A] = (T)sizeof(V); }
template <typename T, int A>
__global__ void fixed_tile_kernel(T* x) { x[threadIdx.x % A] = (T)1; }
template <typename T, unsigned D>
__global__ void grid_kernel(T* x) { x[threadIdx.x % D] = (T)3; }
template <typename T>
__global__ void used_kernel(T* x) { x[threadIdx.x] = (T)4; }

struct OnGpu {};
struct OnCpu {};
template <class Dev, typename T, typename I, int N> struct Worker;
template <typename T, typename I, int N>
struct Worker<OnGpu, T, I, N> {
  using tiles_t = value_list<int, 64, 32>;
  using vec_t = std::conditional_t<std::is_same<T, double>::value, int4, int2>;
  void operator()(T* x, const I* idx) {
    part_kernel<T, I, N><<<1, 32>>>(x, idx);
    for_each_value<tiles_t>([=](auto Tile) {
      constexpr int Half = Tile / 2;
      tile_loop_kernel<T, int(Tile), Half><<<1, int(Tile)>>>(x);
      vec_kernel<T, Tile, vec_t><<<1, int(Tile)>>>(x);
    });
    constexpr int kTile = 16;
    fixed_tile_kernel<T, kTile><<<1, kTile>>>(x);
  }
};
template <typename I, int N>
struct Worker<OnCpu, float, I, N> {
  void operator()(float* x, const I*) { x[0] = N; }
};
#define WORKER_INSTANCES(T, N) template struct Worker<OnGpu, T, int, N>;
WORKER_INSTANCES(float, 2)
WORKER_INSTANCES(double, 3)
template struct Worker<OnCpu, float, int, 5>;

template <typename T, unsigned D>
struct Grid {
  void fill(T* x) { grid_kernel<T, D><<<1, 32>>>(x); }
};
template <typename T, unsigned D>
struct Shape {
  void fill(T* x) { fixed_tile_kernel<T, D * 2><<<1, 32>>>(x); }
};
#define GRID_INSTANCES(T, D) template struct Grid<T, D>; template struct Shape<T, D>;
#define GRID_ALL(T) GRID_INSTANCES(T, 1) GRID_INSTANCES(T, 2)
GRID_ALL(int)

template <typename T>
struct Holder {
  void go(T* x) { used_kernel<T><<<1, 32>>>(x); }
};
void run_holder(short* x) {
  Holder<short> h;
  h.go(x);
}
""",
}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    src = tmp_path_factory.mktemp("refs") / "repo"
    src.mkdir()
    for name, text in SOURCES.items():
        (src / name).write_text(text, encoding="utf-8")
    out = src.parent / "out"
    proc = run_miner("extract", src, "-o", out, "--frontend", "clang")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    metas = load_dataset(out)
    by_name = {m["name"]: m for m in metas}
    assert len(by_name) == len(metas)
    return by_name


def insts(meta: dict[str, Any]) -> dict[str, str]:
    return {i["id"]: i["origin"] for i in meta["instantiations"]}


def real_launches(meta: dict[str, Any]) -> list[dict[str, Any]]:
    return [lc for lc in meta["launches"] if lc["kind"] != "reference"]


def test_sources_parse_cleanly(dataset) -> None:
    bad = {n: m["diagnostics"]["messages"] for n, m in dataset.items() if m["diagnostics"]["errors"]}
    assert not bad


def test_void_table_in_host_template_gets_each_instantiation(dataset) -> None:
    # tile_kernel<T, 64, 1> and <T, 32, 2> under choose_tile_kernel<float|double> (explicit instantiations).
    assert insts(dataset["tile_kernel"]) == {
        "float_64_1": "reference", "float_32_2": "reference", "double_64_1": "reference",
        "double_32_2": "reference"}
    assert insts(dataset["tile_kernel_large"]) == {"float": "reference", "double": "reference"}


def test_launch_through_a_returned_struct_field(dataset) -> None:
    # cudaLaunchKernel(spec.kernel, ...) reaches both kernels choose_tile_kernel can return.
    for name in ("tile_kernel", "tile_kernel_large"):
        (launch,) = real_launches(dataset[name])
        assert launch["kind"] == "cudaLaunchKernel"
        assert launch["launcher"] == "run_tile"
        assert launch["config"]["grid"] == "dim3((p.n + 255) / 256)"
        assert launch["config"]["block"] == "dim3(256)"


def test_pointers_and_tables_outside_launches(dataset) -> None:
    assert insts(dataset["fill_n_kernel"]) == {
        "float_256": "reference", "double_128": "reference", "int_64": "call_site", "half_4": "call_site"}
    kinds = sorted((lc["kind"], lc["launcher"]) for lc in real_launches(dataset["fill_n_kernel"]))
    assert kinds == [("<<<>>>", "run_fill"), ("cudaLaunchKernel", "run_fill")]


def test_host_template_chain_three_levels(dataset) -> None:
    # `2 * 128` is folded: the unit's explicit instantiation names 256.
    assert insts(dataset["chain_kernel"]) == {
        "float_128": "host_template", "float_256": "host_template",
        "double_128": "host_template", "double_256": "host_template"}
    # A reference three calls down gets the same instantiations, its `N / 2` folded.
    assert insts(dataset["chain_ref_kernel"]) == {
        "float_64": "reference", "float_128": "reference", "double_64": "reference", "double_128": "reference"}
    (launch,) = real_launches(dataset["chain_kernel"])
    assert launch["launcher"] == "launch_chain"
    assert launch["config"]["block"] == "N"


def test_unknown_host_instantiations_take_defaults(dataset) -> None:
    assert insts(dataset["orphan_kernel"]) == {"float_8": "reference", "float_4": "reference"}
    # A launch in a host template nobody calls: its literal 32 stays, T takes the default.
    assert insts(dataset["lonely_kernel"]) == {"float_32": "inferred"}


def test_class_template_parameters_are_not_call_site_arguments(dataset) -> None:
    # `member_kernel<T, 16>` inside a class template nobody instantiates: T takes its default (never a
    # symbolic `T_16`), the written 16 stays.
    assert insts(dataset["member_kernel"]) == {"float_16": "inferred"}


def test_explicit_instantiations_of_a_partial_specialization(dataset) -> None:
    # `template struct Worker<OnGpu, float, int, 2>;` reaches Worker<OnGpu, T, I, N>::operator();
    # Worker<OnCpu, float, int, 5> matches the other partial specialization and adds nothing here.
    assert insts(dataset["part_kernel"]) == {"float_int_2": "host_template", "double_int_3": "host_template"}


def test_generic_lambda_over_a_value_list(dataset) -> None:
    # `auto Tile` takes 64 and 32 (`int(Tile)` and a local `Tile / 2` folded), per class instantiation.
    assert insts(dataset["tile_loop_kernel"]) == {
        "float_64_32": "host_template", "float_32_16": "host_template",
        "double_64_32": "host_template", "double_32_16": "host_template"}
    # A member alias chosen by the class's type parameter is folded once T is known.
    assert insts(dataset["vec_kernel"]) == {
        "float_64_int2": "host_template", "float_32_int2": "host_template",
        "double_64_int4": "host_template", "double_32_int4": "host_template"}


def test_instantiations_written_by_one_macro_invocation(dataset) -> None:
    # GRID_ALL(int) writes four explicit instantiations; each class gets both of its own.
    assert insts(dataset["grid_kernel"]) == {"int_1": "host_template", "int_2": "host_template"}
    assert insts(dataset["fixed_tile_kernel"]) == {
        "float_16": "host_template", "double_16": "host_template", "int_2": "host_template",
        "int_4": "host_template"}


def test_class_template_used_with_concrete_arguments(dataset) -> None:
    assert insts(dataset["used_kernel"]) == {"short": "host_template"}


def test_macro_table_values_folded(dataset) -> None:
    got = insts(dataset["mode_kernel"])
    assert got == {"float_8_8_0_false": "reference", "float_16_16_3_true": "reference",
                   "double_8_8_0_false": "reference", "double_16_16_3_true": "reference"}
    # spec.exec and spec.setup are told apart by the field each kernel is stored into.
    exec_launches = real_launches(dataset["mode_kernel"])
    assert {lc["config"]["block"] for lc in exec_launches} == {"dim3(128)"}
    (setup,) = real_launches(dataset["mode_setup_kernel"])
    assert setup["config"]["block"] == "dim3(32)"


def test_arguments_deduced_from_host_template_parameters(dataset) -> None:
    assert insts(dataset["step_kernel"]) == {"float_bf16": "host_template", "bf16_bf16": "host_template"}


def test_if_constexpr_keeps_the_instantiated_branch(dataset) -> None:
    assert insts(dataset["narrow_kernel"]) == {"float_1": "dispatch", "double_2": "dispatch", "half_1": "dispatch"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, corpus_copy) -> dict[str, dict[str, Any]]:
    out = tmp_path_factory.mktemp("corpus-launches") / "out"
    proc = run_miner("extract", corpus_copy, "-o", out)
    assert proc.returncode == 0, proc.stderr
    return {(m["name"], m["source"]["path"]): m for m in load_dataset(out)}


def test_launch_macros_give_their_configuration(corpus) -> None:
    (axpy,) = corpus[("axpy_kernel", "ops/launch_table.cu")]["launches"]
    assert axpy["config"] == {"grid": "((n) + 255) / 256", "block": "256", "shared_mem": "0", "stream": "(stream)"}
    assert [a["expr"] for a in axpy["args"]] == ["a", "x", "y", "n"]
    (saxpy,) = corpus[("saxpy_hip_kernel", "hip/saxpy.hip")]["launches"]
    assert saxpy["kind"] == "hipLaunchKernelGGL"
    assert saxpy["config"]["grid"] == "dim3(blocks)" and saxpy["values"]["shared_mem"] == 0
    assert [a["expr"] for a in saxpy["args"]] == ["a", "x", "y", "n"]


def test_function_pointer_launch_is_found(corpus) -> None:
    (relu,) = corpus[("relu_kernel", "ops/launch_table.cu")]["launches"]
    assert relu["kind"] == "<<<>>>" and relu["launcher"] == "launch_unary"
    assert relu["values"]["block"] == 256


def test_one_level_host_template(corpus) -> None:
    meta = corpus[("scale_shift_kernel", "ops/scale_shift.cu")]
    assert {i["id"]: i["origin"] for i in meta["instantiations"]} == {"float": "host_template",
                                                                      "double": "host_template"}


def test_reference_records_follow_the_launches(dataset) -> None:
    """Real launches come first: consumers that take `launches[0]` as the configuration get one."""
    for meta in dataset.values():
        kinds = [lc["kind"] for lc in meta["launches"]]
        if "reference" in kinds and len(set(kinds)) > 1:
            first_ref = kinds.index("reference")
            assert "reference" not in kinds[:first_ref] and all(k == "reference" for k in kinds[first_ref:]), kinds

