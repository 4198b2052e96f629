"""What the checks look for: harness modules, assertion and comparison functions, forbidden calls and
imports, skip forms, loose tolerances; and the CheckResult they produce."""

from __future__ import annotations

from dataclasses import dataclass, field

from miner.enrich.test_policy import LOOSE_ATOL as _POLICY_ATOL
from miner.enrich.test_policy import LOOSE_RTOL as _POLICY_RTOL

HARNESS_MODULES = ("miner.harness",)


# Methods that return (a view or copy of) the same data: following them cannot create a reference.
VIEW_METHODS = {
    "clone", "detach", "cpu", "cuda", "to", "contiguous", "float", "double", "half", "bfloat16", "int",
    "long", "numpy", "tolist", "item", "view", "reshape", "flatten", "squeeze", "unsqueeze", "view_as",
    "reshape_as", "type", "copy", "requires_grad_", "T", "data", "as_strided", "expand", "expand_as",
}


ASSERT_FUNCS = {"assert_close", "assert_allclose", "assert_array_equal", "assert_array_almost_equal",
                "assert_equal", "assert_almost_equal", "assert_array_max_ulp", "assert_tensor_equal"}


BOOL_COMPARE_FUNCS = {"allclose", "isclose", "equal", "array_equal", "all_close"}


FORBIDDEN_CALLS = {("os", "system"), ("os", "_exit"), ("sys", "exit"), ("shutil", "rmtree"),
                   ("os", "kill"), ("os", "remove"), ("os", "unlink")}


FORBIDDEN_IMPORTS = {"subprocess", "socket", "requests", "urllib", "http", "multiprocessing"}


# Methods that return a view sharing the tensor's storage (or, for `to`/`float`..., may do so).
ALIAS_METHODS = {
    "view", "reshape", "flatten", "squeeze", "unsqueeze", "view_as", "reshape_as", "T", "data", "as_strided",
    "expand", "expand_as", "detach", "contiguous", "to", "cuda", "float", "double", "half", "bfloat16", "int",
    "long", "type", "requires_grad_", "permute", "transpose", "narrow", "select", "unflatten", "mT",
}


COPY_FUNCS = {"torch.clone", "copy.deepcopy", "np.array", "numpy.array", "np.asarray", "torch.as_tensor"}


SWALLOWED = {"Exception", "BaseException", "AssertionError"}


SKIP_CALLS = {"pytest.skip", "pytest.xfail", "pytest.exit", "sys.exit", "os._exit"}


SKIP_EXCEPTIONS = {"pytest.skip.Exception", "pytest.xfail.Exception", "unittest.SkipTest", "SkipTest",
                   "Skipped", "pytest.exit.Exception"}


INF_NAMES = {"math.inf", "np.inf", "numpy.inf", "torch.inf", "float.inf", "math.nan", "np.nan", "numpy.nan",
             "torch.nan"}


# Tolerances at or past these accept almost any output (|a - b| <= atol + rtol * |b|): the allow-list's.
LOOSE_RTOL = _POLICY_RTOL
LOOSE_ATOL = _POLICY_ATOL
# Attributes and calls that read a tensor's metadata, not its values: `out.shape == x.shape` checks nothing.
METADATA = {"shape", "dtype", "device", "ndim", "size", "numel", "dim", "stride", "is_contiguous", "layout",
            "nbytes", "element_size", "itemsize", "data_ptr", "is_cuda", "storage_offset", "names"}
METADATA_FUNCS = {"len", "type", "isinstance", "id"}
# In-place methods that copy their arguments into the receiver without a trailing underscore.
COPY_METHODS = {"copyto", "put", "index_put", "scatter", "masked_scatter", "set"}


NON_NEGATIVE = {"abs", "fabs", "absolute", "norm", "vector_norm", "matrix_norm", "square", "numel", "len"}


# allclose(a, b, rtol, atol) and numpy's assert_allclose(actual, desired, rtol, atol) take them positionally.
POSITIONAL_TOLERANCES = {"allclose": ("rtol", "atol"), "isclose": ("rtol", "atol"),
                         "assert_allclose": ("rtol", "atol")}


@dataclass
class CheckResult:
    ok: bool
    problems: list[str] = field(default_factory=list)
    cases: int = 0
    tests: list[str] = field(default_factory=list)

    def message(self) -> str:
        return "; ".join(self.problems) if self.problems else "ok"
