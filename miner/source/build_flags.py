"""The nvcc flags a project's own build gives its CUDA sources, as far as they change what the code means.

A unit must compile the way its project compiles it: torch-ngp's kernels call `constexpr` host
functions (`std::numeric_limits<float>::max()`) from device code, legal only under
`--expt-relaxed-constexpr`, which every torch extension gets from `torch.utils.cpp_extension`;
gsplat is C++20 (`requires` clauses) because its build says `-std=c++20`.

Where: the build files of the nearest folder above the kernel's translation unit (up to the project
root) that has any: `setup.py` / `*.py` that build a torch extension (`CUDAExtension`,
`cpp_extension.load`, `extra_cuda_cflags`, `'nvcc': [...]`), `CMakeLists.txt` / `*.cmake`
(`CMAKE_CUDA_STANDARD`, `CMAKE_CXX_STANDARD`, `cuda_std_NN` / `cxx_std_NN` compile features, flags
in `CUDA_FLAGS` / `target_compile_options`). A compile_commands.json entry for the file wins for `-std`.

Kept (a white list; nothing else can leak into a unit's command line): `-std=c++NN`,
`--expt-relaxed-constexpr`, `--expt-extended-lambda` (and their spellings), and `-D`/`-U` of the
`__CUDA_NO_HALF*`/`__CUDA_NO_BFLOAT16*` family, which only switch cuda_fp16/bf16 operators, and the `-D`s
written in a Python script's literal nvcc flag lists (`{'nvcc': ['-DWITH_CUDA']}`): what its build defines
for every .cu (they go to the parse and to units alike; one that selects HIP is left out). Other
`-D`s select a configuration, which the parse decides (docs/units.md, "Which configuration is mined");
output, arch, include and optimisation flags say nothing about the code's meaning. The build files are
read as text, not run: a flag counts wherever it is written (a `win32` branch included), and where
several `-std` are written the newest wins (the same code built as C++20 and C++17 is C++20 code).
One exception: a script that builds several extensions (`CUDAExtension(name=..., sources=[...],
extra_compile_args=...)` each) gives a file the flags of the extensions whose sources name it; the
string literals of the others are left out (one extension's `-U__CUDA_NO_HALF_OPERATORS__` changed the
meaning of `Half < Half` in another's kernels). Where no extension names the file, all count.
"""

from __future__ import annotations

import ast
import functools
import io
import os
import re
import tokenize
from typing import Any

from miner import lazy_re
from miner.source import (
    cmake_functions,
    cmake_modules,
    cmake_version,
    make_vars,
    py_build,
    py_command_strings,
    shell_builds,
    torch_flag_removal,
)
from miner.source.build_files import read_build_file
from miner.source.flag_spelling import normal, std_flag, uncommented

# torch.utils.cpp_extension.COMMON_NVCC_FLAGS, which every CUDAExtension / load() build passes first.
TORCH_NVCC_FLAGS = ["-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__", "--expt-relaxed-constexpr"]
NVCC_DEFAULT_STD = 17  # nvcc 12/13's default dialect; CUDA 13's own headers (CCCL) need at least this

_PY_TORCH = lazy_re.compile(r"\bCUDAExtension\b|cpp_extension|\bextra_cuda_cflags\b|['\"]nvcc['\"]\s*:")
_PY_FLAG = lazy_re.compile(r"(?<![\w/])(-{1,2}std[= ](?:c|gnu)\+\+\d\w|-{1,2}expt-relaxed-constexpr"
                      r"|-{1,2}expt-extended-lambda|-{1,2}extended-lambda|-[DU]\s*__CUDA_NO_(?:HALF|BFLOAT16)\w*)")
_CMAKE_STD = lazy_re.compile(r"\b(?:CMAKE_CUDA_STANDARD|CUDA_STANDARD)\s+(\d\d)\b|\bcuda_std_(\d\d)\b")
_CMAKE_CXX_STD = lazy_re.compile(r"\b(?:CMAKE_CXX_STANDARD|CXX_STANDARD)\s+(\d\d)\b|\bcxx_std_(\d\d)\b")
_BUILD_PY = lazy_re.compile(r"^(setup|build|backend|.*_build|build_.*|.*extension.*)\.py$")
_MAX_BYTES = 500_000


def _std_num(value: str) -> int:
    n = int(re.search(r"\d+", value).group(0))  # type: ignore[union-attr]
    return n + 100 if n < 50 else n  # 03/11/14/17/20/23 order after 98


def _read(path: str) -> str:
    return read_build_file(path, _MAX_BYTES)


Span = tuple[tuple[int, int], tuple[int, int]]  # (line, column) of a call's start and end


def _python_strings(text: str, skip: list[Span] | None = None) -> str:
    """The string literals of a Python file (comments and code left out), one a line; none from `skip`."""
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return text
    kinds = {tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    return "\n".join(t.string for t in toks if t.type in kinds and not any(a <= t.start < b for a, b in skip or ()))


_EXTENSION_CALLS = {"CUDAExtension", "CppExtension", "load", "load_inline"}


def _names_file(s: str, rel: str) -> bool:
    """A source path written in a build script (`csrc/k.cu`, `k.cu` joined to a folder, an f-string's
    `/csrc/k.cu`) that is the file at `rel` (relative to the script's folder)."""
    s = s.strip().replace("\\", "/").lstrip("./")
    return bool(s) and (rel == s or rel.endswith("/" + s) or s == os.path.basename(rel))


def _other_extensions(text: str, rel: str) -> list[Span]:
    """The spans of the extension calls whose sources do not name `rel`, when at least one does; else
    none (sources gathered by glob or a variable: every extension's flags may be the file's)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    mine: list[Span] = []
    other: list[Span] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or node.end_lineno is None or node.end_col_offset is None:
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name not in _EXTENSION_CALLS:
            continue
        span = ((node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset))
        strings = [c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
        (mine if any(_names_file(s, rel) for s in strings) else other).append(span)
    return other if mine else []


_NVCC_DEFINE = lazy_re.compile(r"^-D([A-Za-z_]\w*)(=[\w.+-]*)?$")
# Defines that select another platform's build: the configuration mined is CUDA's (its HIP variant is
# parsed apart; a CPU-only or other-accelerator branch of a build file is not what nvcc compiles).
_OTHER_PLATFORM = lazy_re.compile(r"HIP|ROCM|^__CUDA_NO_|(?:^|_)(?:CPU_ONLY|NO_CUDA|WITHOUT_CUDA|DISABLE_CUDA|MLU|NPU"
                             r"|MPS|MUSA|XPU|SYCL|METAL|OPENCL)(?:_|$)", re.I)


def tokens(value: str, hip_on_nvcc: bool = False) -> list[str]:
    """The white-listed flags of one string a build passes to nvcc (`"-DA -DB=1"` holds two); a HIP switch
    (`-DENABLE_HIP`) only where the build compiles its HIP code with nvcc."""
    out = [normal(m.group(1)) for m in _PY_FLAG.finditer(value)]
    for tok in value.split():
        m = _NVCC_DEFINE.match(tok)
        other = _OTHER_PLATFORM.search(m.group(1)) if m else None
        if other and hip_on_nvcc and not _OTHER_PLATFORM.search(re.sub("(?i)hip", "", m.group(1))):
            other = None
        if m and not other and tok not in out:
            out.append(tok)
    return out


def _evaluated(flags: list[py_build.Flag], root: str) -> tuple[list[str], dict[str, str]]:
    """White-listed flags of evaluated build strings, and where each -D is written (relative to root)."""
    out: list[str] = []
    where: dict[str, str] = {}
    for value, at in flags:
        for tok in tokens(value):
            out.append(tok)
            if tok.startswith("-D") and not tok.startswith("-D__CUDA_NO_"):
                where.setdefault(tok, os.path.relpath(at, root))
    return out, where


def _from_python(path: str, root: str, rel: str = "") -> tuple[list[str], dict[str, str]] | None:
    """Flags of a Python build script that builds a torch extension (None: not one), for the file at
    `rel` (relative to the script's folder), and where its -D flags are written. The -D are those its
    nvcc sinks pass (`{'nvcc': [...]}`, `args['nvcc'] += [...]`, `extra_cuda_cflags=`), evaluated through
    the project's Python (miner.source.py_build): a method's return value, a base class's list. A `-D`
    in a cxx list, a variable nothing passes to nvcc or an environment default is not one."""
    text = _read(path)
    if not _PY_TORCH.search(text):
        return None
    skip = _other_extensions(text, rel) if rel else []
    code = _python_strings(text, skip)
    removed = torch_flag_removal.removed_torch_flags(text)  # `COMMON_NVCC_FLAGS.remove(...)`: not passed
    flags = [f for f in [*TORCH_NVCC_FLAGS, *(normal(m.group(1)) for m in _PY_FLAG.finditer(code))]
             if f not in removed]
    sunk, where = _evaluated(py_build.script_flags(root, os.path.realpath(path), skip), root)
    # A `-U__CUDA_NO_...` its nvcc sinks pass (from a helper module's flag list) undoes torch's default, as nvcc
    # reads it after COMMON_NVCC_FLAGS; merge() lets it cancel the -D.
    return flags + [f for f in sunk if (f.startswith("-D") and not f.startswith("-D__CUDA_NO_"))
                    or f.startswith("-U__CUDA_NO_")], where


# (arguments with one level of parentheses, `if((A AND B) OR C)`, else up to the first `)`)
_CMAKE_CMD = lazy_re.compile(
    r"\b(if|elseif|else|endif|add_definitions|add_compile_definitions|target_compile_definitions"
                        r"|set|list|string)\s*\((?:((?:[^()]|\([^()]*\))*)\)|([^)]*)\))", re.I)
_CMAKE_NVCC_VAR = lazy_re.compile(r"^\s*(?:APPEND\s+)?(?:CUDA_NVCC_FLAGS|CMAKE_CUDA_FLAGS)\b(.*)$", re.I | re.S)
_CMAKE_KEYWORDS = {"PRIVATE", "PUBLIC", "INTERFACE", "APPEND"}


class _Branches:
    """The `if` blocks a build file's line lies in: a definition counts only in the CUDA branch of
    platform tests (`if(WITH_CUDA)`, the `else()` of `if(USE_ROCM)`); under any other condition (an
    option that defaults off, a compiler, MSVC) it is an option of the build, not what it always passes."""

    def __init__(self, hip_on_nvcc: bool = False) -> None:
        self.stack: list[list[Any]] = []  # [platform of the if, in the else part, this branch is CUDA's]
        # A build that compiles its HIP code with nvcc too (`elseif(HIP_PLATFORM STREQUAL "nvcc")`): its HIP
        # switch (`if(ENABLE_HIP)`) is the GPU build on NVIDIA as well, so its branch is the CUDA build's.
        self.hip_on_nvcc = hip_on_nvcc

    def _side(self, cond: str) -> str | None:
        # A test of the CUDA toolkit's version (`if(${CUDA_VERSION_MAJOR} VERSION_GREATER_EQUAL "11")`) is
        # decided by the toolkit the units are built with: its branch is the CUDA build's, or its else is.
        version = cmake_version.holds(cond)
        if version is not None:
            return "cuda" if version else "off"
        side = py_build.platform_of(cond)
        return "cuda" if side == "hip" and self.hip_on_nvcc else side

    def enter(self, cond: str) -> None:
        side = self._side(cond)
        self.stack.append([side, False, side == "cuda"])

    def other(self, cond: str | None) -> None:
        if self.stack:
            top = self.stack[-1]
            top[1] = True
            top[2] = (self._side(cond) == "cuda") if cond is not None else top[0] in ("hip", "off")

    def enter_side(self, side: str) -> None:
        """An `if` whose platform side the caller decided ("cuda": its branch is the build's; "off": its else)."""
        self.stack.append([side, False, side == "cuda"])

    def other_side(self, side: str) -> None:
        """An `else if` whose side the caller decided."""
        if self.stack:
            top = self.stack[-1]
            top[1] = True
            top[2] = side == "cuda"

    def leave(self) -> None:
        if self.stack:
            self.stack.pop()

    def cuda(self) -> bool:
        return all(f[2] for f in self.stack)


# `set(X "64" CACHE STRING "...")`: the value a configure without -DX=... gives X.
_CMAKE_CACHE_SET = lazy_re.compile(r"\bset\s*\(\s*(\w+)\s+\"?([\w.+-]+)\"?\s+CACHE\b", re.I)
_CMAKE_VAR = lazy_re.compile(r"\$\{(\w+)\}")
_HIP_ON_NVCC = lazy_re.compile(r"\bHIP_PLATFORM\b\W+STREQUAL\W+\"?(?:nvcc|nvidia)\b", re.I)


@functools.cache
def cmake_cache_defaults(root: str) -> dict[str, str]:
    """Cache variables the project's top CMakeLists.txt sets with a default (`set(REAL_SIZE "64" CACHE STRING
    ...)`): a definition written with one (`target_compile_definitions(t PUBLIC REAL_SIZE=${REAL_SIZE})`)
    takes that value, as a default configure does. Without it `#if REAL_SIZE == 32 ... #else #error` hid
    every typedef of the project's scalar types."""
    text = _read(os.path.join(root, "CMakeLists.txt")) if root else ""
    code = uncommented(text)
    return {m.group(1): m.group(2) for m in _CMAKE_CACHE_SET.finditer(code)}


def _cmake_defines(code: str, variables: dict[str, str] | None = None, directory_only: bool = False,
                   any_target_only: bool = False) -> list[str]:
    """-D flags a CMake build gives its CUDA sources in every CUDA build: `add_definitions(-DX)`,
    `add_compile_definitions(X)`, `target_compile_definitions(t PRIVATE X=1)`, and `-DX` in
    `CUDA_NVCC_FLAGS` / `CMAKE_CUDA_FLAGS`, outside conditions other than the platform (_Branches).
    A value naming a variable is known when `variables` (cmake_cache_defaults) has it; a generator
    expression (`$<...>`) never. `any_target_only` (a module's functions): only definitions given to a target
    passed in (`target_compile_definitions(${target} ...)`), not those of a target it names (a vendored
    library's own `STB_IMAGE_IMPLEMENTATION`)."""
    variables = variables or {}
    code = cmake_functions.expanded(code)  # a call of the file's own function that gives definitions
    raw: list[str] = []
    hip_on_nvcc = bool(_HIP_ON_NVCC.search(code))
    branches = _Branches(hip_on_nvcc)
    for m in _CMAKE_CMD.finditer(code):
        kind, args = m.group(1).lower(), m.group(2) if m.group(2) is not None else m.group(3)
        if kind == "if":
            branches.enter(args)
        elif kind in ("elseif", "else"):
            branches.other(args if kind == "elseif" else None)
        elif kind == "endif":
            branches.leave()
        elif not branches.cuda():
            continue
        elif directory_only and kind not in ("add_definitions", "add_compile_definitions"):
            continue
        elif kind in ("set", "list", "string"):
            v = _CMAKE_NVCC_VAR.match(args)
            raw += v.group(1).replace('"', " ").split() if v else []
        else:
            # `X="${Y}"` is one word, whose value names a variable
            words = args.replace('"', "").split()
            if kind == "target_compile_definitions":
                if any_target_only and not (words and words[0].startswith("${")):
                    continue
                words = words[1:]
            raw += [w if kind == "add_definitions" else "-D" + w.removeprefix("-D")
                    for w in words if w.upper() not in _CMAKE_KEYWORDS]
    raw = [_CMAKE_VAR.sub(lambda v: variables.get(v.group(1), v.group(0)), w) for w in raw]
    return [t for w in raw if "$" not in w for t in tokens(w, hip_on_nvcc)
            if t.startswith("-D") and not t.startswith("-D__CUDA_NO_")]


def _from_cmake(text: str, variables: dict[str, str] | None = None) -> list[str]:
    code = uncommented(text)
    out: list[str] = []
    cuda = [int(a or b) for a, b in _CMAKE_STD.findall(code)]
    # CMake builds CUDA at CUDA_STANDARD; without one, projects that set only the C++ standard
    # write their device code in that dialect too.
    cxx = [int(a or b) for a, b in _CMAKE_CXX_STD.findall(code)]
    if cuda or cxx:
        out.append(std_flag(max(cuda or cxx)))
    out += [normal(m.group(1)) for m in _PY_FLAG.finditer(code) if not m.group(1).lstrip("-").startswith("std")]
    return out + _cmake_defines(code, variables)


_MAKE_NVCC_LINE = lazy_re.compile(r"^\s*(?:export\s+)?\w*(?:NVCC|CUDA|NV|CU)\w*FLAGS\s*[:+?]?=(.*)$"
                             r"|^\s+.*\b(?:nvcc|NVCC)\b(.*)$")
_MAKE_COND = lazy_re.compile(r"^\s*(ifeq|ifneq|ifdef|ifndef|else|endif)\b(.*)$")


_MAKE_FLAGS_VAR = lazy_re.compile(r"^\w*(?:NVCC|CUDA|NV|CU)\w*FLAGS$")

# A Makefile's test of the machine it runs on: `ifeq ($(OS),Windows_NT)` (the variable Windows sets),
# `ifeq ($(shell uname -s),Darwin)`, `UNAME_S := $(shell uname -s)` / `ifeq ($(UNAME_S),Linux)`.
_MAKE_HOST_PROBE = lazy_re.compile(r"\$[({]OS[)}]|\buname\b")
_MAKE_HOST_NAME = lazy_re.compile(r"\b(Linux|Windows_NT|Darwin|MINGW\w*|MSYS\w*|CYGWIN\w*|FreeBSD)\b")


def _make_host_test(cond: str, variables: dict[str, str]) -> bool | None:
    """Whether a Makefile condition comparing the build machine's system with a name holds on Linux, where the
    units are built (True for `ifeq ($(OS),Windows_NT)`'s `else`, ...); None when it tests no system name.
    Such a test is no option of the build but the platform it runs on: a CUDA build that sets its nvcc flags
    in both branches of `ifeq ($(OS),Windows_NT)` passes the `else` branch's on Linux (before, neither branch
    counted, and a `-DX` the whole CUDA configuration hangs on was lost)."""
    text = cond
    for m in re.finditer(r"\$[({]([A-Za-z_][\w.-]*)[)}]", cond):
        if "uname" in variables.get(m.group(1), ""):
            text += " $(shell uname)"  # `UNAME_S := $(shell uname -s)` then `ifeq ($(UNAME_S),Linux)`
    names = _MAKE_HOST_NAME.findall(text)
    if not names or not _MAKE_HOST_PROBE.search(text):
        return None
    return "Linux" in names


def _from_make(path: str) -> list[str]:
    """Flags of a Makefile's nvcc variables (`NVCCFLAGS += -DX`, `CUDA_FLAGS := ...`) and nvcc recipe lines,
    outside conditions other than the platform (`ifeq ($(USE_CUDNN), 1)` adds an option). The variables are
    expanded as make would (miner.source.make_vars): a flags variable that appends another (`GPUFLAGS +=
    $(DFLAGS)`), filled by a makefile included through a variable's default (`include
    builds/make.type.$(TYPE)`, `TYPE ?= hydro`), gives that one's `-D`s; a variable a recipe passes to nvcc
    (`$(GPUCXX) $(GPUFLAGS) -c $<` with `GPUCXX ?= nvcc`) is a flags variable whatever its name."""
    out: list[str] = []
    branches = _Branches()
    variables: dict[str, str] = {}
    flag_vars: dict[str, None] = {}
    recipes = make_vars.Recipes()
    for line in make_vars.lines(path, _read, variables):
        recipe = recipes.is_recipe(line)
        c = _MAKE_COND.match(line)
        if c:
            kind, rest = c.group(1), c.group(2)
            if kind.startswith("if"):
                host = _make_host_test(rest, variables)
                if host is not None:
                    branches.enter_side("cuda" if host == (kind != "ifneq") else "off")
                else:
                    branches.enter(("not " if kind in ("ifneq", "ifndef") else "") + rest)
            elif kind == "else":
                host = _make_host_test(rest.split(None, 1)[1] if rest.split()[:1] in (["ifeq"], ["ifneq"]) else "",
                                       variables)
                if host is not None:
                    branches.other_side("cuda" if host == (rest.split()[0] != "ifneq") else "off")
                else:
                    branches.other(rest.strip() or None)
            else:
                branches.leave()
            continue
        if not branches.cuda():
            continue  # an option's assignment is not what the build always passes, nor is its recipe
        name = make_vars.assign(line if recipe else line.lstrip(), variables)
        if name and _MAKE_FLAGS_VAR.match(name):
            flag_vars[name] = None
        flag_vars.update(dict.fromkeys(make_vars.recipe_flag_variables(line, variables)))
        m = _MAKE_NVCC_LINE.match(line)
        if m:
            out += [t for w in (m.group(1) or m.group(2) or "").split() if "$" not in w for t in tokens(w)]
    for name in flag_vars:
        value = make_vars.expand(variables.get(name, ""), variables)
        # (a flag the line itself wrote stays where it was: merge moves a repeated -D to its last place)
        out += [t for w in value.split() if "$" not in w for t in tokens(w) if t not in out]
    return out


_MAKEFILES = ("Makefile", "makefile", "GNUmakefile")


def _is_build_file(name: str) -> bool:
    return (name == "CMakeLists.txt" or name.endswith((".cmake", ".mk", ".sh")) or name in _MAKEFILES
            or _BUILD_PY.match(name) is not None)


def _python_names(text: str, rel: str) -> bool:
    """Whether an extension call of a Python build script's text names the source at `rel`."""
    return bool(_other_extensions(text, rel)) or (_PY_TORCH.search(text) is not None
                                                  and any(_names_file(s, rel) for s in _call_strings(text)))


def _call_strings(text: str) -> list[str]:
    """The string literals of a Python script's extension calls."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in _EXTENSION_CALLS:
                out += [c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
    return out


@functools.cache
def _build_files(folder: str) -> tuple[str, ...] | None:
    """The names in `folder` `_folder_flags` reads, sorted; None when it cannot be listed. Listed once per
    folder: every source below it asks (MMCV: 419 sources, 43,000 names joined and matched per run)."""
    try:
        return tuple(n for n in sorted(os.listdir(folder)) if _is_build_file(n))
    except OSError:
        return None


def _folder_flags(folder: str, root: str, rel: str = "") -> tuple[tuple[str, ...], tuple[str, ...],
                                                                   tuple[tuple[str, str], ...], tuple[str, ...]] | None:
    """(flags, build files read, where each -D is written, Python build scripts a shell script's nvcc line
    overrules) of one folder for the source at `rel` below it, None when it holds no build file."""
    names = _build_files(folder)
    if not names:
        return None
    if not any(_BUILD_PY.match(n) or n.endswith(".sh") for n in names):
        rel = ""  # only the Python build code and shell scripts read which source asks: one answer for the folder
    return _folder_flags_of(folder, root, rel, names)


@functools.cache
def _folder_flags_of(folder: str, root: str, rel: str, names: tuple[str, ...]
                     ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, str], ...], tuple[str, ...]] | None:
    flags: list[str] = []
    used: list[str] = []
    where: dict[str, str] = {}
    source = os.path.join(folder, rel) if rel else ""
    # A shell script's nvcc line that names the source is a build description of it (shell_builds); beside one, a
    # Python build script counts only where an importable extension of it names the source too.
    commands = {n: shell_builds.names(os.path.join(folder, n), source) for n in names if n.endswith(".sh") and source}
    by_shell = any(commands.values())
    dropped: list[str] = []
    for name in names:
        path = os.path.join(folder, name)
        got: list[str] | None
        if name.endswith(".sh"):
            if not commands.get(name):
                continue  # a script that runs no nvcc on this source says nothing about it
            got = [t for cmd in commands[name] for t in tokens(cmd)]
        elif by_shell and _BUILD_PY.match(name) and (
                not _python_names(_read(path), rel) or shell_builds.unloadable_extension(path, source)):
            dropped.append(os.path.relpath(path, root))
            continue
        elif name == "CMakeLists.txt" or name.endswith(".cmake"):
            got = _from_cmake(_read(path), cmake_cache_defaults(root))
        elif name in _MAKEFILES or name.endswith(".mk"):
            got = _from_make(path) or None  # a Makefile that gives nvcc nothing is no CUDA build file
        elif _BUILD_PY.match(name):
            py = _from_python(path, root, rel)
            got = py[0] if py else None
            for k, v in (py[1] if py else {}).items():
                where.setdefault(k, v)
        else:
            continue
        if got is None:
            continue
        used.append(name)
        flags += got
        for f in got:
            if f.startswith("-D") and not f.startswith("-D__CUDA_NO_"):
                where.setdefault(f, os.path.relpath(path, root))
    return (tuple(flags), tuple(used), tuple(where.items()), tuple(dropped)) if used else None


def _inherited_cmake_defines(folder: str, stop: str) -> list[tuple[str, str]]:
    """(-D, where) that the CMakeLists.txt of the folders above `folder` (up to `stop`) give their directory
    with `add_definitions`/`add_compile_definitions`: CMake's directory definitions are inherited by every
    subdirectory (`if(K2_WITH_CUDA) add_definitions(-DK2_WITH_CUDA) endif()` in the root reaches
    `k2/csrc`, whose own CMakeLists.txt gives flags of its own), and so are the white-listed nvcc flags its
    variables set (`--extended-lambda` in CMAKE_CUDA_FLAGS). Target definitions are not inherited."""
    out: list[tuple[str, str]] = []
    d = folder
    while d != stop and (d + os.sep).startswith(stop + os.sep):
        d = os.path.dirname(d)
        path = os.path.join(d, "CMakeLists.txt")
        if os.path.isfile(path):
            found = _directory_flags(_read(path), tuple(cmake_cache_defaults(stop).items()))
            out += [(f, os.path.relpath(path, stop)) for f in found]
    return out


@functools.lru_cache(maxsize=1024)
def _directory_flags(text: str, variables: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """What one CMakeLists.txt's text gives every subdirectory (`_inherited_cmake_defines`), by its text: each
    source file of a tree asked it of the same files above it (283 sources of a backend folder, 552 parses of the
    same few CMakeLists.txt, most of a run's configure step)."""
    code = uncommented(text)
    # CMAKE_CUDA_FLAGS is a variable: a subdirectory inherits it too (`--expt-extended-lambda`).
    flags = [normal(m.group(1)) for m in _PY_FLAG.finditer(code) if not m.group(1).lstrip("-").startswith("std")]
    defines = _cmake_defines(code, dict(variables), directory_only=True)
    return (*flags, *defines)


_SET_STD = lazy_re.compile(r"\bset\s*\(\s*CMAKE_(CUDA|CXX)_STANDARD\s+\"?(\d\d)\b")


def _inherited_std(folder: str, stop: str) -> tuple[str, str] | None:
    """(-std, where) from `set(CMAKE_CUDA_STANDARD NN)`, else `set(CMAKE_CXX_STANDARD NN)`, in the nearest
    CMakeLists.txt above `folder` (up to `stop`) that sets one: a CMake variable reaches every subdirectory, so
    a backend folder whose own CMakeLists.txt only adds sources and options builds at the root's dialect (C++20
    headers, `bool operator==(const T&) const = default;`, compiled at nvcc's C++17 failed)."""
    d = folder
    while d != stop and (d + os.sep).startswith(stop + os.sep):
        d = os.path.dirname(d)
        path = os.path.join(d, "CMakeLists.txt")
        if os.path.isfile(path):
            std = _standard_set(_read(path))
            if std is not None:
                return std, os.path.relpath(path, stop)
    return None


@functools.lru_cache(maxsize=1024)
def _standard_set(text: str) -> str | None:
    """The `-std` a CMakeLists.txt's text sets for its subdirectories (`_inherited_std`), by its text: asked per
    source file of the same files above them."""
    found = {lang: int(num) for lang, num in _SET_STD.findall(uncommented(text))}
    return std_flag(found.get("CUDA", found.get("CXX", 0))) if found else None


def merge(flags: list[str]) -> list[str]:
    """One `-std` (the newest), each other flag once, a `-U` cancelling an earlier `-D` of that name
    (torch-ngp undoes torch's `__CUDA_NO_HALF_OPERATORS__`) as nvcc would."""
    std = max((f for f in flags if f.startswith("-std=")), key=_std_num, default=None)
    out: dict[str, None] = {}
    for f in flags:
        if f.startswith("-std="):
            continue
        if f.startswith(("-D", "-U")):
            name = f[2:].split("=", 1)[0]
            for other in [o for o in out if o.startswith(("-D", "-U")) and o[2:].split("=", 1)[0] == name]:
                del out[other]
        out[f] = None
    return ([std] if std else []) + list(out)


def find(path: str, stop: str) -> dict[str, Any] | None:
    """`{"nvcc": [...], "from": [build files relative to stop], "defines": {-D: where written}}` for the
    sources at `path` (no "defines" when there are none): the build files of the nearest folder above it
    that has any, then what the project's Python build code gives it wherever that code lies
    (miner.source.py_build: a builder class or an extension call that names the file). None when nothing
    says anything."""
    real = os.path.realpath(path)
    stop = os.path.realpath(stop)
    flags: list[str] = []
    used: list[str] = []
    where: dict[str, str] = {}
    dropped: set[str] = set()
    d = os.path.dirname(real)
    while True:
        got = _folder_flags(d, stop, os.path.relpath(real, d).replace(os.sep, "/"))
        if got is not None:
            flags += got[0]
            used += [os.path.relpath(os.path.join(d, u), stop) for u in got[1]]
            where.update(got[2])
            dropped.update(got[3])
            # A CMakeLists.txt that only lists the sources (`add_library(x ${SOURCES})`, with
            # `target_compile_options(x PRIVATE ${CUDA_NVCC_FLAGS})`) takes its flags from the parent
            # folder's, which set the variable: the walk goes on up to a build file that gives some.
            if got[0]:
                if "CMakeLists.txt" in got[1]:
                    more = _inherited_cmake_defines(d, stop)
                    if not any(f.startswith("-std=") for f in got[0]) and (std := _inherited_std(d, stop)):
                        more.append(std)
                    flags += [f for f, _ in more]
                    for f, w in more:
                        if f.startswith("-D"):
                            where.setdefault(f, w)
                        used += [w] if w not in used else []
                break
        parent = os.path.dirname(d)
        if d == stop or parent == d or not (d + os.sep).startswith(stop + os.sep):
            break
        d = parent
    if os.path.isfile(os.path.join(stop, "CMakeLists.txt")):
        # modules the root includes (`include(cmake/Utils.cmake)`): a folder of their own, never walked above
        more_flags, modules = cmake_modules.module_flags(stop)
        if more_flags:
            flags += list(more_flags)
            used += [m for m in modules if m not in used]
        # and the definitions their functions give every target, under the same condition rule
        # (`if (BUILD_CUDA_MODULE) target_compile_definitions(${target} PRIVATE BUILD_CUDA_MODULE)`)
        for rel in cmake_modules.project_modules(stop):
            defines = _cmake_defines(uncommented(_read(os.path.join(stop, rel))), cmake_cache_defaults(stop),
                                     any_target_only=True)
            flags += defines
            for f in defines:
                where.setdefault(f, rel)
            used += [rel] if defines and rel not in used else []
    if real.startswith(stop + os.sep):
        evaluated, scopes = py_build.source_flags(stop, real)
        if dropped and all(re.split(r" \(|:\d+$", sc)[0] in dropped for sc in scopes):
            evaluated, scopes = [], []  # only extensions a shell script's nvcc line overrules name the file
        more, at = _evaluated(evaluated, stop)
        if scopes and not flags:
            # a builder class or extension call: a torch extension build, less what its script removes
            scripts = {os.path.join(stop, re.split(r" \(|:\d+$", sc)[0]) for sc in scopes}
            removed = {f for p in scripts for f in torch_flag_removal.removed_torch_flags(_read(p))}
            flags = [f for f in TORCH_NVCC_FLAGS if f not in removed]
        flags += more
        # a scope in a build file already read above is not listed again (its flags were counted there)
        used += [s for s in scopes if s not in used and re.split(r" \(|:\d+$", s)[0] not in used]
        for k, v in at.items():
            where.setdefault(k, v)
    if real.startswith(stop + os.sep) and real.endswith(".cu"):
        # nvcc command strings of the project's Python build code that compile a placeholder's file
        # (`f'{nvcc_cmd} -DFEATURE=1 -c "{cu_path}"'`): their common -Ds are every CUDA source's.
        more, at = _evaluated(list(py_command_strings.command_defines(stop)), stop)
        flags += more
        for k, v in at.items():
            where.setdefault(k, v)
            file = v.rsplit(":", 1)[0]
            used += [file] if file not in used else []
    if not used:
        return None
    out: dict[str, Any] = {"nvcc": merge(flags), "from": used}
    kept = {k: v for k, v in where.items() if k in out["nvcc"]}
    if kept:
        out["defines"] = kept
    return out


# C++20 in the code itself. Each pattern is searched only in a text holding one of its words: the leading
# alternatives cost a look at every position of the tree's files (the project's context files too) on every run's
# configure step, and almost no file holds any of them.
_CXX20_CODE = lazy_re.compile(r"(?:>|\))\s*requires\s*[(\w:]|\bconcept\s+\w+\s*=|\bconsteval\b|\bconstinit\b|<=>")
_CXX20_CODE_WORDS = ("requires", "concept", "consteval", "constinit", "<=>")
_CXX20_HEADERS = ("concepts", "ranges", "span", "bit", "compare", "numbers")
_CXX20_INCLUDE = lazy_re.compile(r"#\s*include\s*<(?:" + "|".join(_CXX20_HEADERS) + r")>")


def source_std(text: str) -> str | None:
    """`-std=c++20` when the code itself is C++20 (a requires clause, a concept, consteval, <=>, a
    C++20-only header), for sources whose build files name no dialect."""
    if ((any(w in text for w in _CXX20_CODE_WORDS) and _CXX20_CODE.search(text))
            or (any(f"<{h}>" in text for h in _CXX20_HEADERS) and _CXX20_INCLUDE.search(text))):
        return std_flag(20)
    return None


def parse_args(flags: list[str]) -> list[str]:
    """What libclang parses with: the build's dialect, never older than nvcc's default; and where the
    build undoes some of torch's half defines (-U), the ones it keeps, with KM_BUILD_HALF_FLAGS telling
    the torch parse shim not to define all four itself."""
    std = next((f for f in flags if f.startswith("-std=")), None)
    out = [std if std and _std_num(std) >= 100 + NVCC_DEFAULT_STD else std_flag(NVCC_DEFAULT_STD)]
    if any(f.startswith("-U__CUDA_NO_") for f in flags):
        out += ["-DKM_BUILD_HALF_FLAGS", *(f for f in flags if f.startswith("-D__CUDA_NO_"))]
    # The build's own configuration defines (its nvcc lists' -D), so the parse sees what nvcc compiles.
    out += [f for f in flags if f.startswith("-D") and not f.startswith("-D__CUDA_NO_")]
    return out


def applied(flags: list[str]) -> list[str]:
    """What a unit's nvcc command gets: a dialect older than nvcc's default is left out (the toolkit's
    own headers need C++17, and C++14 code is C++17 code but for removed oddities)."""
    return [f for f in flags if not (f.startswith("-std=") and _std_num(f) < 100 + NVCC_DEFAULT_STD)]
