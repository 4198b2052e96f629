"""`extract --build` on tests/fixtures/blind2: patterns found on the second blind set (issue 14,
scripts/corpus_repos_blind2.txt, a development set from session 8), each reproduced by kernels of our own and
judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind2")


def _unit(dataset: dict[str, Any], meta: dict[str, Any], inst: str) -> str:
    return (Path(dataset["out"]) / meta["id"] / "units" / inst / "unit.cu").read_text(encoding="utf-8")


def test_a_kernel_in_a_named_namespace_inside_an_anonymous_one_keeps_that_chain(dataset: dict[str, Any]) -> None:
    """`namespace { namespace dev { __global__ void k(PackedBuffers b) } }`: the unit reopens the anonymous
    namespace around the kernel (else `dev::k` cannot see `(anonymous)::dev::PackedBuffers`); the C-linkage
    launcher stays outside it and names the rest with a using-directive."""
    for name in ("scale_kernel", "fill_kernel"):
        m = only_meta(dataset, name)
        assert m["qualified_name"] == f"dev::{name}" and m["namespaces"] == ["", "dev"], m.get("namespaces")
        assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    m = only_meta(dataset, "add_pair_kernel")
    assert m["namespaces"] == ["outer", "", "inner"] and build_statuses(m) == {"default": "ok"}, build_statuses(m)
    unit = _unit(dataset, m, "default")
    assert "namespace outer {\nnamespace  {\nnamespace inner {\n// the kernel" in unit
    assert "namespace outer {\n// outside the kernel's anonymous namespace" in unit and "using namespace inner;" in unit
    fill = only_meta(dataset, "fill_kernel")
    assert "namespace  {\nnamespace dev {\ntemplate __global__ void fill_kernel<int>(" in _unit(dataset, fill, "int")


def test_a_macro_a_template_names_before_its_define_is_defined_before_that_template(dataset: dict[str, Any]) -> None:
    """`lane_sum` (a helper header included first) names FULL_LANES, which a later header #defines: the unit
    defines the macro before the template, else nvcc stops with `identifier "FULL_LANES" is undefined`."""
    m = only_meta(dataset, "lane_sum_kernel")
    assert build_statuses(m) == {"128_float": "ok"}, build_statuses(m)
    unit = _unit(dataset, m, "128_float")
    assert unit.index("#define FULL_LANES") < unit.index("__inline__ __device__ T lane_sum(T v)")


def test_a_device_lambda_held_in_a_variable_or_written_by_a_macro_becomes_a_functor_struct(
        dataset: dict[str, Any]) -> None:
    """`auto f = [=] __device__ (...) {...}; ApplyDevice(s, n, f);` (the host template takes `FunT &`), and the
    same written inside a project macro's expansion (`APPLY(c, n, name, (int32_t i)->void {...})`, whose lambda
    has no text of its own: the invocation is expanded and its one `__device__` lambda taken)."""
    m = only_meta(dataset, "apply_kernel")
    assert build_statuses(m) == {"km_lambda_scale_ops_4_5": "ok", "km_lambda_scale_ops_8_25": "ok",
                                 "km_lambda_scale_ops_21_9_float": "ok", "km_lambda_scale_ops_38_5_int": "ok"}, \
        build_statuses(m)
    assert {i["origin"] for i in m["instantiations"]} == {"host_template"}
    unit = _unit(dataset, m, "km_lambda_scale_ops_4_5")
    assert "struct km_lambda_scale_ops_4_5 {\n  int32_t * data;\n" in unit
    assert "__device__ auto operator()(int32_t i) const -> void { data[i] += 1; }" in unit
    assert "float factor;" in _unit(dataset, m, "km_lambda_scale_ops_8_25")
    # In a class template's method, the macro's lambda captures a `T *` that libclang does not list as a
    # capture: read from the body, the member is `T * d` of a struct templated over T.
    assert "template <typename T>\nstruct km_lambda_scale_ops_21_9 {\n  T * d;" in \
        _unit(dataset, m, "km_lambda_scale_ops_21_9_float")
    # A method a macro writes, whose lambda another macro writes: the method's parameter `out` and local `src`
    # share the lambda parameter's location (the invocation's); told apart by cursor, they are members.
    assert "  float * out;\n  T * src;\n" in _unit(dataset, m, "km_lambda_scale_ops_38_5_int")


def test_a_kernel_launched_only_from_generated_sources_says_so(dataset: dict[str, Any]) -> None:
    """window_kernel.cu includes window_forward.cu, which gen_launchers.py writes at build time: the kernel is
    named nowhere in the tree, and the reason names the missing file and its writer (not `not_referenced`)."""
    m = only_meta(dataset, "window_sum_kernel")
    assert m["launch_missing"]["reason"] == "generated_source", m["launch_missing"]
    assert "window_forward.cu" in m["launch_missing"]["detail"]
    assert m["launch_missing"]["mentions"] == ["generated_launch/gen_launchers.py"], m["launch_missing"]
    assert m["args_missing"]["reason"] == "generated_launcher", m.get("args_missing")


def test_a_row_of_a_packed_accessor_gives_its_pointer_and_stride(dataset: dict[str, Any]) -> None:
    """`a[i].data()` and `a[i].stride(0)` on a row (`at::TensorAccessor`) of a `PackedTensorAccessor32`: the unit
    shim's accessor has ATen's `data()` and `stride()` (was: class has no member "data")."""
    m = only_meta(dataset, "row_dot_kernel")
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)


def test_verify_reopens_the_anonymous_namespace_around_the_explicit_instantiation() -> None:
    """verify's wrapper includes the original TU and instantiates there: in the same anonymous namespace."""
    from miner.verify.original import explicit_instantiation

    meta = {"qualified_name": "dev::fill_kernel", "namespaces": ["", "dev"], "is_specialization": False}
    inst = {"args": ["int"], "launcher": {"params": [{"type": "PackedBuffers"}, {"type": "int"}]}}
    assert explicit_instantiation(meta, inst) == \
        "namespace  { namespace dev { template __global__ void fill_kernel<int>(PackedBuffers, int); } }"


def test_a_type_argument_written_inside_a_namespace_is_qualified_for_a_global_kernel(dataset: dict[str, Any]) -> None:
    """`add_uniform_kernel<T, OpAdd<T>>` launched inside `namespace proj`, the kernel at global scope: the unit
    instantiates `proj::OpAdd<float>` (was: identifier "OpAdd" is undefined)."""
    m = only_meta(dataset, "add_uniform_kernel")
    assert build_statuses(m) == {"float_OpAdd_float": "ok"}, build_statuses(m)
    assert "template __global__ void add_uniform_kernel<float, proj::OpAdd<float>>(" in \
        _unit(dataset, m, "float_OpAdd_float")


def test_the_host_branch_of_a_class_members_cuda_arch_test_brings_its_names(dataset: dict[str, Any]) -> None:
    """`~FatalLogger()` is `__host__ __device__`; its `#else` of `#if defined(__CUDA_ARCH__)` (compiled by
    nvcc's host pass, skipped by the parse) calls `StackTraceText()`, only declared in the header, and
    `AbortOnFatal()`: both come with the class (was: identifier "StackTraceText" is undefined)."""
    m = only_meta(dataset, "clamp_kernel")
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)
    assert {"StackTraceText", "AbortOnFatal"} <= set(m["closure"]["functions"]), m["closure"]["functions"]


def test_a_launcher_named_only_by_its_forwarding_overload_is_not_instantiated(dataset: dict[str, Any]) -> None:
    """`FillWith(CtxT c, ...)` only calls `FillWith(cudaStream_t, ...)`, which launches; nothing else names
    either: the stated reason is `launcher_not_instantiated` (was: weak arguments without a reason)."""
    m = only_meta(dataset, "fill_with_kernel")
    assert (m.get("args_missing") or {}).get("reason") == "launcher_not_instantiated", m.get("args_missing")


def test_a_qualified_call_inside_a_same_name_member_is_a_real_use() -> None:
    """A dispatcher's own `run` calling `Kernel::run(...)` (pytorch3d-style functor dispatch) enters the
    launcher: that mention counts; only the heads of namespace-scope definitions and unqualified calls in
    their bodies (forwarding overloads) do not."""
    from miner.units.mentions import Mentions

    text = (b"template <class K> struct D { static void run(int x) { K::run(x); } };\n"
            b"struct F { template <class T> static void run(T x) { k<T><<<1, 1>>>(x); } };\n"
            b"template <class T> void fwd(T x);\n"
            b"template <class T> void fwd(T *p) { fwd(*p); }\n")
    m = Mentions([("/x.cu", text)])
    # line 2: the head of a member `run` (a functor's), which a dispatcher in a header the include reach may
    # not count calls: it stays a use, so no reason is claimed
    assert [m.in_definition_of("run", "/x.cu", line) for line in (1, 2)] == [False, False]
    assert m.in_definition_of("fwd", "/x.cu", 4) is True
