"""What a generated test may use, by allow-list: imports, skips, context managers, tolerances.

The data-flow check (miner.enrich.static_check) asks whether a test compares the kernel's output with
an independent reference; this module asks whether the file stays inside the small language a kernel
test needs, so the data-flow check cannot be talked around. Names are resolved through the file's own
imports and module-level aliases first (`from pytest import skip as s`, `sk = pytest.skip`,
`torch = pytest.importorskip("torch")`), so a rule on `pytest.skip` holds whatever the spelling.

Everything here reads the AST only; the code is never run. The rules (each a problem string):
- imports only from ALLOWED_MODULES; no dynamic import, eval/exec, open, getattr/setattr, dunder
  attributes, file or process APIs (FORBIDDEN_NAMES / FORBIDDEN_METHODS), no pytest hooks;
- skips only where they depend on the machine: `importorskip` of torch or numpy,
  `skipif(<no CUDA GPU>)`, `pytest.skip` directly under `if <no CUDA GPU>:`, `require_gpu()`;
  no skip/xfail marks, no xfail at all;
- no `return`/`yield` in a test, no `global`, no try/except (except an ImportError guard around
  module-level imports), no context manager outside ALLOWED_WITH, `pytest.raises` of a specific error;
- no assignment to, or deletion of, attributes of imported modules (monkeypatching
  `torch.testing.assert_close`), no rebinding of an imported name or of a comparison function's name;
- tolerances must be visible: no `**kwargs` in a comparison, and every number a tolerance can take
  (through names, tuples and dicts of the file) under LOOSE_RTOL / LOOSE_ATOL.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from miner.pyast import dotted_name

ALLOWED_MODULES = {
    "__future__", "pytest", "torch", "numpy", "math", "cmath", "random", "itertools", "functools", "operator",
    "pathlib", "typing", "dataclasses", "collections", "enum", "ctypes", "struct", "fractions", "decimal",
    "statistics", "miner.harness", "miner",
}
IMPORTORSKIP_OK = {"torch", "numpy"}
FORBIDDEN_NAMES = {
    "__import__", "eval", "exec", "compile", "open", "globals", "locals", "vars", "getattr", "setattr", "delattr",
    "breakpoint", "input", "exit", "quit", "__builtins__", "__loader__", "__spec__",
}
# Canonical names (after alias resolution) and their children that a kernel test has no use for:
# loading code or pickles, writing files, raw memory, other processes.
FORBIDDEN_PREFIXES = (
    "torch.utils.cpp_extension", "torch.load", "torch.save", "torch.hub", "torch.ops.load_library",
    "torch.classes", "torch.compile", "torch.jit", "torch.package", "torch.multiprocessing",
    "torch.distributed", "torch.testing.assert_close.", "numpy.load", "numpy.save", "numpy.savez",
    "numpy.fromfile", "numpy.memmap", "numpy.ctypeslib", "numpy.lib", "numpy.loadtxt", "numpy.genfromtxt",
    "numpy.savetxt", "ctypes.CDLL", "ctypes.cdll", "ctypes.PyDLL", "ctypes.pydll", "ctypes.pythonapi",
    "ctypes.memmove", "ctypes.memset", "ctypes.string_at", "ctypes.wstring_at", "ctypes.cast", "ctypes.util",
    "ctypes.WinDLL", "ctypes.windll", "ctypes.CFUNCTYPE", "ctypes.addressof", "pytest.main", "pytest.exit",
    "pytest.register_assert_rewrite", "miner.harness.RECORDS", "pathlib.Path.home", "pathlib.Path.cwd",
)
FORBIDDEN_METHODS = {
    "write_text", "write_bytes", "read_text", "read_bytes", "unlink", "rmdir", "mkdir", "rename", "touch",
    "chmod", "symlink_to", "hardlink_to", "iterdir", "glob", "rglob", "tofile", "applymarker", "add_marker",
    "addfinalizer", "open", "load_library", "load_inline",
}
FORBIDDEN_FIXTURES = {"monkeypatch", "pytester", "testdir", "capsys", "capfd", "recwarn", "pytestconfig"}
SKIPPING = {"pytest.skip", "pytest.skip.Exception", "unittest.SkipTest", "unittest.case.SkipTest"}
NEVER = {"pytest.xfail", "pytest.mark.xfail", "pytest.mark.skip", "unittest.skip", "unittest.skipIf",
         "unittest.skipUnless", "unittest.expectedFailure", "pytest.xfail.Exception"}
GPU_PROBES = {"torch.cuda.is_available", "miner.harness.cuda_available"}
GPU_COUNT = {"torch.cuda.device_count"}
REQUIRE_GPU = {"miner.harness.require_gpu"}
ALLOWED_WITH = {
    "torch.no_grad", "torch.inference_mode", "torch.cuda.device", "torch.cuda.stream", "torch.random.fork_rng",
    "torch.autocast", "torch.cuda.amp.autocast", "torch.enable_grad", "pytest.raises", "pytest.warns",
    "numpy.errstate",
}
BROAD_ERRORS = {"Exception", "BaseException", "AssertionError", "object"}
COMPARE_NAMES = {"assert_close", "assert_allclose", "assert_array_equal", "assert_array_almost_equal",
                 "assert_equal", "assert_almost_equal", "assert_array_max_ulp", "assert_tensor_equal",
                 "allclose", "isclose", "equal", "array_equal", "all_close"}
TOLERANCE_CALLS = {"assert_close": ("rtol", "atol"), "assert_allclose": ("rtol", "atol"),
                   "allclose": ("rtol", "atol"), "isclose": ("rtol", "atol")}
# |a - b| <= atol + rtol * |b|: past these a comparison accepts almost any output of the usual scales.
LOOSE_RTOL = 0.1
LOOSE_ATOL = 1.0
INF = {"math.inf", "numpy.inf", "torch.inf", "math.nan", "numpy.nan", "torch.nan", "numpy.NaN", "numpy.Inf"}


class Resolver:
    """Local names -> canonical dotted names, from the file's imports and module-level aliases."""

    def __init__(self, tree: ast.Module) -> None:
        self.names: dict[str, str] = {}
        self.modules: set[str] = set()  # local names bound to modules or module members
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    local = a.asname or a.name.split(".")[0]
                    self.names[local] = a.name if a.asname else a.name.split(".")[0]
                    self.modules.add(local)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    self.names[a.asname or a.name] = f"{node.module}.{a.name}"
                    self.modules.add(a.asname or a.name)
        for node in tree.body:  # `sk = pytest.skip`, `torch = pytest.importorskip("torch")`
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                target, value = node.targets[0].id, node.value
                if isinstance(value, ast.Call) and self.canonical(value.func) == "pytest.importorskip" \
                        and value.args and isinstance(value.args[0], ast.Constant):
                    self.names[target] = str(value.args[0].value)
                    self.modules.add(target)
                elif isinstance(value, ast.Attribute | ast.Name) and (canon := self.canonical(value)) \
                        and canon.split(".")[0] in {n.split(".")[0] for n in self.names.values()}:
                    self.names[target] = canon
                    self.modules.add(target)

    def canonical(self, node: ast.AST) -> str | None:
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        base = self.names.get(head, head)
        return f"{base}.{rest}" if rest else base


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    out: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            out[id(child)] = node
    return out


def _maximal_names(tree: ast.AST, parents: dict[int, ast.AST]) -> Iterator[ast.AST]:
    """Every Name/Attribute chain once, at its outermost attribute (`pytest.mark.skip`, not `pytest.mark`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name | ast.Attribute):
            parent = parents.get(id(node))
            if not (isinstance(parent, ast.Attribute) and parent.value is node):
                yield node


def gpu_condition(node: ast.AST | None, res: Resolver) -> bool:
    """True for conditions that hold exactly where no CUDA GPU is usable: `not torch.cuda.is_available()`,
    `not cuda_available()`, `torch.cuda.device_count() < 2`, or an `or` of such."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        return all(gpu_condition(v, res) for v in node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and isinstance(node.operand, ast.Call):
        return res.canonical(node.operand.func) in GPU_PROBES
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.left, ast.Call):
        if res.canonical(node.left.func) in GPU_COUNT and isinstance(node.comparators[0], ast.Constant):
            return isinstance(node.ops[0], ast.Lt | ast.Eq | ast.LtE)
    return False


def _test_functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    out: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for node in tree.body:
        body = node.body if isinstance(node, ast.ClassDef) else [node]
        out += [f for f in body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) and f.name.startswith("test")]
    return out


def _own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a function body, not descending into nested functions, lambdas or classes."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            stack.extend(ast.iter_child_nodes(node))


class _Numbers:
    """Every number an expression can take through the file's names, tuples and dicts (an over-approximation)."""

    def __init__(self, tree: ast.Module, res: Resolver) -> None:
        self.res = res
        self.bindings: dict[str, list[ast.AST]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            self.bindings.setdefault(n.id, []).append(node.value)
            elif isinstance(node, ast.arguments):
                for a, d in zip(node.args[len(node.args) - len(node.defaults):], node.defaults, strict=False):
                    self.bindings.setdefault(a.arg, []).append(d)
                for a, kd in zip(node.kwonlyargs, node.kw_defaults, strict=False):
                    if kd is not None:
                        self.bindings.setdefault(a.arg, []).append(kd)

    def of(self, node: ast.AST, seen: set[str] | None = None) -> list[float]:
        seen = set() if seen is None else seen
        out: list[float] = []
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, int | float) and not isinstance(sub.value, bool):
                out.append(float(sub.value))
            elif isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value.strip().lower() in (
                    "inf", "+inf", "infinity", "nan"):
                out.append(float("inf"))
            elif isinstance(sub, ast.Attribute | ast.Name) and self.res.canonical(sub) in INF:
                out.append(float("inf"))
            elif isinstance(sub, ast.Name) and sub.id not in seen:
                seen.add(sub.id)
                for value in self.bindings.get(sub.id, []):
                    out += self.of(value, seen)
        return out


def _tolerance_problems(tree: ast.Module, res: Resolver) -> list[str]:
    numbers = _Numbers(tree, res)
    problems: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        canon = res.canonical(node.func) or ""
        short = canon.split(".")[-1] if canon else getattr(node.func, "attr", "")
        if short not in COMPARE_NAMES:
            continue
        if any(k.arg is None for k in node.keywords):
            problems.append(f"`{ast.unparse(node)[:60]}` passes keywords through **: its tolerances cannot be checked")
        given = {k.arg: k.value for k in node.keywords if k.arg in ("rtol", "atol")}
        for key, arg in zip(TOLERANCE_CALLS.get(short, ()), node.args[2:], strict=False):
            given.setdefault(key, arg)
        for key, expr in given.items():
            limit = LOOSE_RTOL if key == "rtol" else LOOSE_ATOL
            values = numbers.of(expr)
            worst = max(values, default=0.0)
            if worst != worst or worst >= limit:
                problems.append(f"{key}={ast.unparse(expr)[:40]} can be {worst:g}: accepts almost any output "
                                f"(must stay under {limit:g})")
    for node in ast.walk(tree):  # `assert (out - ref).abs().max() < 999`, `... < TOL`
        if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1):
            continue
        test, op = node.test, node.test.ops[0]
        if isinstance(op, ast.Lt | ast.LtE):
            small, bound = test.left, test.comparators[0]
        elif isinstance(op, ast.Gt | ast.GtE):
            small, bound = test.comparators[0], test.left
        else:
            continue
        is_error = any(isinstance(s, ast.BinOp) and isinstance(s.op, ast.Sub) for s in ast.walk(small))
        # Only a bound that is a plain number or name: `1e-3 * ref.abs().max()` scales with the data.
        if is_error and isinstance(bound, ast.Constant | ast.Name | ast.Attribute | ast.UnaryOp):
            values = numbers.of(bound)
            if values and (max(values) != max(values) or max(values) >= LOOSE_ATOL):
                problems.append(f"`assert {ast.unparse(test)[:60]}` bounds an error by {max(values):g}: "
                                "accepts almost any output")
    return problems


def policy_problems(tree: ast.Module) -> list[str]:
    """Every way `tree` steps outside what a generated kernel test may do (empty when it stays inside)."""
    res = Resolver(tree)
    parents = _parents(tree)
    problems: list[str] = []
    imported: set[str] = set()
    # A name the file binds itself (`input = torch.rand(n)`, a parameter called `input`) is not the builtin.
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del)}
    bound |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
              for a in [*n.posonlyargs, *n.args, *n.kwonlyargs, n.vararg, n.kwarg] if a is not None}
    bound -= {"__builtins__", "__import__"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name not in ALLOWED_MODULES and a.name.split(".")[0] not in ALLOWED_MODULES - {"miner"}:
                    problems.append(f"imports {a.name} (a generated test may import only "
                                    f"{', '.join(sorted(ALLOWED_MODULES - {'__future__', 'miner'}))})")
                imported.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            ok = not node.level and (mod in ALLOWED_MODULES and mod != "miner" or (
                mod.split(".")[0] in ALLOWED_MODULES - {"miner"}) or (
                mod == "miner" and all(a.name == "harness" for a in node.names)))
            if not ok:
                problems.append(f"imports from {'.' * node.level}{mod} (not allowed in a generated test)")
            imported.update(a.asname or a.name for a in node.names)
            for a in node.names:
                canon = f"{mod}.{a.name}"
                if a.name == "*":
                    problems.append(f"`from {mod} import *` hides where names come from")
                elif canon.startswith(FORBIDDEN_PREFIXES) or canon in NEVER:
                    problems.append(f"imports {canon}")
        elif isinstance(node, ast.Global | ast.Nonlocal):
            problems.append("uses `global`/`nonlocal`")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name.startswith("pytest_"):
                problems.append(f"defines the pytest hook {node.name}")
            if node.name in COMPARE_NAMES or node.name in imported:
                problems.append(f"defines a function named {node.name}, shadowing a comparison or an import")
            for a in node.args.args + node.args.kwonlyargs:
                if a.arg in FORBIDDEN_FIXTURES:
                    problems.append(f"{node.name}: uses the `{a.arg}` fixture")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__") and node.attr.endswith("__"):
            problems.append(f"reaches the dunder attribute {node.attr}")
        elif isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_METHODS:
            problems.append(f"calls .{node.attr} (files, markers and libraries are off limits)")
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES and node.id not in bound:
            problems.append(f"uses {node.id}")
        elif isinstance(node, ast.Try | ast.TryStar) and node.handlers:
            guard = node in tree.body and all(isinstance(s, ast.Import | ast.ImportFrom) for s in node.body) and all(
                h.type is not None and res.canonical(h.type) in ("ImportError", "ModuleNotFoundError")
                for h in node.handlers)
            if not guard:
                problems.append(f"try/except at line {node.lineno}: a test must let every failure through")
        elif isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                problems += _with_problem(item.context_expr, res)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = (node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target])
            for t in targets:
                problems += _target_problem(t, res, imported, node in tree.body)
    for node in _maximal_names(tree, parents):
        canon = res.canonical(node) or ""
        if canon.startswith(FORBIDDEN_PREFIXES) or canon in FORBIDDEN_PREFIXES:
            problems.append(f"uses {canon}")
        elif canon in NEVER or canon.startswith(("pytest.mark.xfail.", "pytest.mark.skip.")):
            problems.append(f"uses {canon}: a mark or call that hides failures whatever the machine")
        elif canon in SKIPPING:
            if not _under_gpu_guard(node, parents, res):
                problems.append(f"line {getattr(node, 'lineno', '?')}: {canon} outside "
                                "`if not torch.cuda.is_available():`")
        elif canon == "pytest.importorskip":
            call = parents.get(id(node))
            arg = call.args[0] if isinstance(call, ast.Call) and call.args else None
            if not (isinstance(arg, ast.Constant) and arg.value in IMPORTORSKIP_OK):
                problems.append(f"line {getattr(node, 'lineno', '?')}: importorskip of "
                                f"{ast.unparse(arg) if arg else '?'} can skip everything (only torch, numpy)")
        elif canon in ("pytest.mark.skipif", "unittest.skipIf"):
            call = parents.get(id(node))
            cond = None
            if isinstance(call, ast.Call):
                cond = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "condition"),
                                                           None)
            if not gpu_condition(cond, res):
                problems.append(f"line {getattr(node, 'lineno', '?')}: skipif("
                                f"{ast.unparse(cond) if cond is not None else ''}) is not a 'no CUDA GPU' condition")
    for fn in _test_functions(tree):
        for node in _own_nodes(fn):
            if isinstance(node, ast.Return | ast.Yield | ast.YieldFrom):
                problems.append(f"{fn.name}: `{ast.unparse(node)[:40]}` ends the test before it checks everything")
                break
    problems += _tolerance_problems(tree, res)
    return list(dict.fromkeys(problems))


def _under_gpu_guard(node: ast.AST, parents: dict[int, ast.AST], res: Resolver) -> bool:
    """A skip call (or `raise pytest.skip.Exception`) that is a statement directly in `if <no GPU>:`."""
    call = parents.get(id(node))
    stmt = parents.get(id(call)) if isinstance(call, ast.Call) else call
    if isinstance(stmt, ast.Raise):
        pass
    elif not isinstance(stmt, ast.Expr):
        return False
    block = parents.get(id(stmt))
    return isinstance(block, ast.If) and stmt in block.body and gpu_condition(block.test, res)


def _with_problem(expr: ast.AST, res: Resolver) -> list[str]:
    call = expr if isinstance(expr, ast.Call) else None
    canon = res.canonical(call.func if call else expr) or ast.unparse(expr)[:40]
    if canon not in ALLOWED_WITH:
        return [f"`with {canon}`: not a context manager a kernel test needs"]
    if canon == "pytest.raises" and call is not None and call.args:
        caught = call.args[0].elts if isinstance(call.args[0], ast.Tuple) else [call.args[0]]
        broad = [res.canonical(c) for c in caught if (res.canonical(c) or "").split(".")[-1] in BROAD_ERRORS]
        if broad:
            return [f"pytest.raises({', '.join(map(str, broad))}) swallows failing assertions"]
    return []


def _target_problem(target: ast.AST, res: Resolver, imported: set[str], module_level: bool) -> list[str]:
    if isinstance(target, ast.Tuple | ast.List):
        return [p for e in target.elts for p in _target_problem(e, res, imported, module_level)]
    if isinstance(target, ast.Starred):
        return _target_problem(target.value, res, imported, module_level)
    if isinstance(target, ast.Name):
        if target.id in COMPARE_NAMES or (target.id in imported and target.id in res.modules
                                          and not _is_import_binding(target, res)):
            return [f"rebinds {target.id}, which names an import or a comparison"]
        return []
    root = target
    while isinstance(root, ast.Attribute | ast.Subscript):
        root = root.value
    if isinstance(root, ast.Name) and root.id in res.modules:
        canon = res.canonical(target) if isinstance(target, ast.Attribute) else res.canonical(root)
        if canon and canon.startswith("torch.backends."):
            return []
        return [f"assigns to {canon or ast.unparse(target)}: a test must not change a library"]
    return []


def _is_import_binding(target: ast.Name, res: Resolver) -> bool:
    # `torch = pytest.importorskip("torch")` binds the module it names; that is how tests import torch.
    return res.names.get(target.id) in IMPORTORSKIP_OK
