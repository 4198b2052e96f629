"""The original translation unit of a kernel, compiled the way its project compiles it.

Which file: for an instantiation of a host template, the TU that instantiated it (`origin_tu`, a test
program that includes the library's header); else `parse_context.translation_unit` (the `.cu` the kernel
was parsed with), else the file that defines the kernel. Where the sources are: `--source DIR`, else
`parse_context.root` (recorded by extract). Flags: the mined `-D` set (less `__CUDA_ARCH__`/`__NVCC__`,
which nvcc sets itself), the mined include dirs (as -I, or -iquote and -idirafter for another platform's stand-in, see
compile_flags), and:

- when the TU's includes reach torch (`torch/`, `ATen/`, `c10/`, `THC/`): torch's include dirs
  (`torch.utils.cpp_extension.include_paths()`), Python's, stand-ins for the two headers a CUDA build
  of torch installs and the CPU wheel lacks (torch_cuda_include/), and the nvcc flags every torch
  extension is built with (`COMMON_NVCC_FLAGS`: `__CUDA_NO_HALF_OPERATORS__` ...);
- the headers of CUDA libraries installed as wheels (`nvidia/*/include`: cuBLAS ...), which the
  toolkit here does not ship.

A template kernel that the TU never instantiates with the unit's arguments has no `.entry` in its
PTX; then a wrapper TU `#include`s the original file and adds the unit's explicit instantiation
(`template __global__ void ns::k<float>(float*, int);`), which is what a launch in another file does.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miner import cuda_libs, lazy_re
from miner.source import build_flags
from miner.targets import COMPUTE_FLAG

_INCLUDE = lazy_re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
_TORCH = lazy_re.compile(r"^(torch|ATen|c10|THC)/")
MAX_HEADERS = 2000
# Headers a CUDA build of torch installs and the CPU wheel lacks (THC/THCAtomics.cuh, the generated
# c10/cuda/impl/cuda_cmake_macros.h): each file says what the real one holds.
TORCH_CUDA_STANDINS = Path(__file__).resolve().parent / "torch_cuda_include"
# CUDA 12 host-API signatures that CUDA 13 replaced, declared (never defined) for original TUs written
# for CUDA 12: their host code compiles again, their device code cannot change (see the header).
TOOLKIT_COMPAT = Path(__file__).resolve().parent / "toolkit_compat" / "km_cuda12_host_api.h"


@dataclass
class Original:
    root: Path
    tu: Path                    # the file compiled (absolute)
    rel: str                    # the same, as the dataset names it
    defines: list[str]
    include_dirs: list[Path]
    headers: list[Path] = field(default_factory=list)   # project headers it reaches (its content)
    torch: bool = False
    project_flags: list[str] = field(default_factory=list)   # the project's nvcc flags (metadata build_flags)
    assumed_defines: list[str] = field(default_factory=list)  # `X=0` for guards that only demand X (guard_defines)
    # The project's other files whose definitions the unit took (metadata `closure.cross_file`: a separately
    # compiled project): compiled with the TU as one relocatable (`-rdc=true`) translation unit, see `wrapper_source`.
    also: list[Path] = field(default_factory=list)

    def group_key(self) -> tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        return (str(self.tu), tuple(self.defines), tuple(map(str, self.include_dirs)), tuple(self.project_flags),
                tuple(map(str, self.also)))


def locate(meta: dict[str, Any], source_root: Path | None, origin_tu: str | None = None) -> Original:
    """The original TU of a kernel; ValueError (one line) when it cannot be found. `origin_tu` (an
    instantiation's, metadata `instantiations[].origin_tu`): the TU that instantiated the host template the
    launch sits in, compiled instead of the kernel's own parse TU, which may never instantiate it."""
    pc = meta.get("parse_context") or {}
    root_text = str(source_root) if source_root else pc.get("root")
    if not root_text:
        raise ValueError("the dataset does not record where its sources are (pass --source DIR)")
    root = Path(root_text)
    rel = origin_tu or pc.get("translation_unit") or meta["source"]["path"]
    tu = (root / rel).resolve()
    if not tu.is_file():
        raise ValueError(f"{tu}: original source not found")
    defines = [d for d in pc.get("defines", []) if d.split("=", 1)[0] not in ("__CUDA_ARCH__", "__NVCC__")]
    dirs = [(root / d).resolve() for d in pc.get("include_dirs", [])]
    orig = Original(root=root, tu=tu, rel=rel, defines=defines, include_dirs=[d for d in dirs if d.is_dir()],
                    project_flags=project_flags(meta))
    orig.headers, orig.torch = scan_includes(tu, orig.include_dirs)
    orig.also = defining_files(meta, root, tu)
    for path in orig.also:
        more, torch = scan_includes(path, orig.include_dirs)
        orig.headers = list(dict.fromkeys([*orig.headers, path, *more]))
        orig.torch = orig.torch or torch
    return orig


def defining_files(meta: dict[str, Any], root: Path, tu: Path) -> list[Path]:
    """The files of the project whose device definitions the unit holds (`closure.cross_file`), the TU aside."""
    found: dict[Path, None] = {}
    for c in (meta.get("closure") or {}).get("cross_file") or []:
        path = (root / c["from"].rpartition(":")[0]).resolve()
        if path != tu and path.is_file():
            found.setdefault(path, None)
    return list(found)


def project_flags(meta: dict[str, Any]) -> list[str]:
    """The project's nvcc flags for the kernel's file (`build_flags.nvcc`: `-D__CUDA_NO_HALF_OPERATORS__`,
    torch-ngp's `-U` of them, `--use_fast_math` ...) as the unit's build applies them. Both sides get them:
    they decide which Half operators exist and how floating point is compiled."""
    return build_flags.applied(list((meta.get("build_flags") or {}).get("nvcc") or []))


def _includes(path: Path, include_dirs: list[Path]) -> Iterator[tuple[str, Path | None]]:
    """Each `#include` of the file at `path`: the name written and the project file it resolves to (None: a
    library's or the toolkit's header, or none at all)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    for m in _INCLUDE.finditer(text):
        name = m.group(2).strip()
        search = ([path.parent] if m.group(1) == '"' else []) + include_dirs
        yield name, next((c for d in search if (c := (d / name).resolve()).is_file()), None)


def scan_includes(tu: Path, include_dirs: list[Path]) -> tuple[list[Path], bool]:
    """Project headers the TU reaches (transitively) and whether it reaches torch's headers."""
    seen: dict[Path, None] = {}
    torch = False
    todo = [tu]
    while todo and len(seen) < MAX_HEADERS:
        for name, cand in _includes(todo.pop(), include_dirs):
            if _TORCH.match(name):
                torch = True
            elif cand is not None and cand not in seen and cand != tu:
                seen[cand] = None
                todo.append(cand)
    return list(seen), torch


def library_includes(orig: Original) -> list[str]:
    """The `#include` lines of the original's TU and of the project headers it reaches that name no project
    file (`<vector>`, `<torch/extension.h>`, `<cub/cub.cuh>`), in order of first appearance: the declarations
    the original's module holds beside the kernel and the unit need not (see driver._context_check)."""
    out: dict[str, None] = {}
    for path in (orig.tu, *orig.headers):
        for name, cand in _includes(path, orig.include_dirs):
            if _TORCH.match(name) or cand is None:
                out.setdefault(f"#include <{name}>", None)
    return list(out)


@functools.lru_cache(maxsize=1)
def torch_setup() -> tuple[list[str], list[str], str]:
    """(include dirs, nvcc flags, version) of the installed torch; empty where torch is absent."""
    if importlib.util.find_spec("torch") is None:
        return [], [], ""
    import torch
    from torch.utils import cpp_extension  # imported only when a TU needs it: ~2 s
    dirs = [*cpp_extension.include_paths(), sysconfig.get_paths()["include"]]
    # After torch's own dirs, so a CUDA wheel's real headers win over these stand-ins.
    dirs.append(str(TORCH_CUDA_STANDINS))
    return dirs, list(cpp_extension.COMMON_NVCC_FLAGS), str(torch.__version__)


def library_include_dirs() -> list[str]:
    """`include` folders of CUDA library wheels (nvidia-cublas ...): the lookup `build` uses too."""
    return list(cuda_libs.wheel_include_dirs())


def library_versions() -> str:
    """The CUDA library wheels installed: part of a compile's cache key (miner.cuda_libs)."""
    return cuda_libs.wheel_versions()


def compile_flags(orig: Original, arch_flag: str) -> list[str]:
    flags = ["-ptx", arch_flag, "-include", str(TOOLKIT_COMPAT)]
    if orig.torch:
        dirs, nvcc_flags, _ = torch_setup()
        flags += nvcc_flags
    flags += [f"-D{d}" for d in orig.defines + orig.assumed_defines]
    # After torch's: a torch extension's own nvcc flags follow COMMON_NVCC_FLAGS (and may -U them).
    flags += orig.project_flags
    # Mined dirs as the project's build passes them, `-I`, before the system's folders: a project header named
    # like a system one (`include/error.h`, included as <error.h>, with the project's error codes) is the
    # project's, as in the parse. A dir whose system-named header is another platform's stand-in (a Windows
    # `unistd.h` that includes <direct.h>) is searched before the system's for "quoted" includes only and after it
    # for <angle> ones: the project's build here does not pass it.
    for d in orig.include_dirs:
        flags += ["-Xcompiler", f"-iquote,{d},-idirafter,{d}"] if _holds_platform_standin(d) else [f"-I{d}"]
    if orig.torch:
        flags += [f"-I{d}" for d in dirs]
    flags += [f"-I{d}" for d in library_include_dirs()]
    if orig.also:
        # The TU and the files defining what it only declares, as one TU: relocatable device code, as the project
        # builds them (whole-program mode refuses `extern __device__ int n;` beside `__device__ int n = 0;`).
        flags.append("-rdc=true")
    return flags


_CONDITIONAL = lazy_re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif|define)\b[ \t]*(\w*)")


def _unconditional_includes(text: str) -> list[str]:
    """The `<angle>` includes of a header outside every `#if`, its include guard (`#ifndef X` then `#define X`)
    aside."""
    out: list[str] = []
    depth, guard, pending = 0, 0, None   # guard: depth of the include guard's #ifndef, 0 when none
    for line in text.splitlines():
        m = _CONDITIONAL.match(line)
        if m:
            kind, word = m.groups()
            if kind in ("if", "ifdef", "ifndef"):
                depth += 1
                pending = word if kind == "ifndef" and depth == 1 and not guard else None
            elif kind == "endif":
                guard = 0 if depth == guard else guard
                depth -= 1
            elif kind == "define" and pending is not None:
                guard = depth if word == pending else guard
                pending = None
            continue
        if line.strip() and not line.lstrip().startswith("//"):
            pending = None
        inc = _INCLUDE.match(line)
        if inc and inc.group(1) == "<" and depth == (1 if guard else 0):
            out.append(inc.group(2).strip())
    return out


@functools.lru_cache(maxsize=256)
def _holds_platform_standin(folder: Path) -> bool:
    """Whether the mined dir `folder` holds a header named like one of the system's (`unistd.h`) that includes,
    unconditionally, a header found neither there nor in the system's, the toolkit's or a CUDA library wheel's
    folders (`<direct.h>`, `<winsock2.h>`): another platform's stand-in, which a build here does not reach."""
    from miner.builder.toolchain import find_nvcc
    from miner.errors import MinerError
    from miner.source.missing_headers import system_include_dirs

    system = system_include_dirs()
    try:
        toolkit = cuda_libs.toolkit_include_dirs(find_nvcc())
    except (MinerError, OSError):
        toolkit = ()
    here = [*system, *toolkit, *library_include_dirs()]
    try:
        names = [e.name for e in os.scandir(folder) if e.is_file()]
    except OSError:
        return False
    for name in names:
        if not any(os.path.isfile(os.path.join(d, name)) for d in system):
            continue
        try:
            text = (folder / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if any(not any(os.path.isfile(os.path.join(d, inc)) for d in [str(folder), *here])
               for inc in _unconditional_includes(text)):
            return True
    return False


_ERROR_AT = lazy_re.compile(r"^(.+?)(?::(\d+):\d+:|\((\d+)\):)\s*(?:fatal\s+)?error:?\s*#error", re.M)
_GUARD = lazy_re.compile(
    r"^[ \t]*#[ \t]*(?:ifndef[ \t]+([A-Za-z_]\w*)|if[ \t]+!\s*defined\s*\(?\s*([A-Za-z_]\w*)\s*\)?)"
                    r"[ \t]*(?://.*|/\*.*)?$")
_COND = lazy_re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b")


def _enclosing_guard(path: Path, line_no: int) -> str | None:
    """X when the `#error` at line `line_no` sits directly in the first branch of `#ifndef X` (or
    `#if !defined(X)`)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    stack: list[tuple[str | None, bool]] = []   # (guarded name, still in the first branch)
    for line in lines[:line_no - 1]:
        m = _COND.match(line)
        if not m:
            continue
        kind = m.group(1)
        if kind in ("if", "ifdef", "ifndef"):
            g = _GUARD.match(line)
            stack.append(((g.group(1) or g.group(2)) if g else None, True))
        elif kind in ("elif", "else") and stack:
            stack[-1] = (stack[-1][0], False)
        elif kind == "endif" and stack:
            stack.pop()
    return stack[-1][0] if stack and stack[-1][1] else None


def _only_demanded(name: str, files: list[Path]) -> bool:
    """Whether every preprocessor test of `name` in these files is a guard whose branch is an `#error`: then
    `-Dname=0` compiles what the mined configuration (name undefined) parsed, `#if name` being 0 both ways."""
    test = re.compile(rf"#\s*ifn?def\s+{name}\b|defined\s*\(?\s*{name}\b")
    for f in files:
        try:
            lines = f.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for i, line in enumerate(lines):
            if not test.search(line):
                continue
            nxt = next((ln.strip() for ln in lines[i + 1:] if ln.strip()), "")
            if not (_GUARD.match(line) and re.match(r"#\s*error\b", nxt)):
                return False
    return True


def guard_defines(log: str, orig: Original) -> list[str]:
    """`X=0` for each `#error` the compile stopped at that sits under `#ifndef X` ("the build system must
    define X"), where X is no mined define and the project tests X nowhere else with `defined`/`#ifdef`.
    The parse ran with X undefined, where `#if X` is 0 as it is with X=0: the unit was mined in that
    configuration, and the original compiled with X=0 is the same configuration, without the `#error`."""
    defined = {d.split("=", 1)[0] for d in orig.defines + orig.assumed_defines}
    out: list[str] = []
    for m in _ERROR_AT.finditer(log):
        path = Path(m.group(1).strip())
        path = path if path.is_absolute() else orig.tu.parent / path
        name = _enclosing_guard(path, int(m.group(2) or m.group(3)))
        if name and name not in defined and f"{name}=0" not in out and _only_demanded(name, [orig.tu, *orig.headers]):
            out.append(f"{name}=0")
    return out


def explicit_instantiation(meta: dict[str, Any], inst: dict[str, Any], unit_text: str = "") -> str | None:
    """The unit's explicit instantiation, for a wrapper around the original TU; None for a non-template.

    Taken from the unit's text where it has one: the unit writes the arguments as the kernel's template
    parameters need them (an enum parameter recorded as 10 becomes `static_cast<ggml_type>(10)`), and the
    same line then gives the same mangled name by construction. Else built from the recorded arguments."""
    args = inst.get("args") or []
    if not args or meta.get("is_specialization"):
        return None
    parts = meta["qualified_name"].split("::")
    own = re.search(rf"^template __global__ void {re.escape(parts[-1])}<.*\);$", unit_text, re.M)
    types = ", ".join(p["type"] for p in (inst.get("launcher") or {}).get("params", []))
    text = own.group(0) if own else f"template __global__ void {parts[-1]}<{', '.join(args)}>({types});"
    # An anonymous namespace ("" in metadata `namespaces`) is reopened: the wrapper includes the same file.
    for ns in reversed(meta.get("namespaces") or parts[:-1]):
        text = f"namespace {ns} {{ {text} }}"
    return text


def wrapper_source(orig: Original, instantiations: list[str]) -> str:
    """The original TU, the files defining what it only declares (`Original.also`), then the explicit
    instantiations."""
    body = "\n".join(dict.fromkeys(instantiations))
    also = "".join(f'#include "{p}"\n' for p in orig.also)
    return (f"// kernel-miner verify: the original TU with the units' explicit instantiations\n"
            f'#include "{orig.tu}"\n{also}{body}\n')


_MISSING_HEADER = lazy_re.compile(r"fatal error: .*: No such file or directory|cannot open source file")
_SUBMODULE_PATH = lazy_re.compile(r"^\s*path\s*=\s*(.+?)\s*$", re.M)


@functools.lru_cache(maxsize=64)
def empty_submodules(root: Path) -> tuple[str, ...]:
    """The git submodules of the checkout holding `root` that are not checked out (their folder empty or
    absent), as `.gitmodules` names them: a `git clone` without `--recursive` or a `git archive` leaves them
    empty, and an original that includes their headers (`fmt/format.h` from `dependencies/fmt/include`) does
    not compile. The parse never saw those headers either; the fix is the checkout's, not a flag."""
    for d in (root, *root.parents):
        gm = d / ".gitmodules"
        if gm.is_file():
            try:
                text = gm.read_text(encoding="utf-8", errors="replace")
            except OSError:
                return ()
            out = []
            for rel in _SUBMODULE_PATH.findall(text):
                sub = d / rel
                if not sub.is_dir() or not any(sub.iterdir()):
                    out.append(relative(sub, root))
            return tuple(out)
        if (d / ".git").exists():
            return ()
    return ()


def missing_header_hint(log: str, root: Path) -> str:
    """For a compile that stopped on a missing header: which submodules of the project are not checked out."""
    if not _MISSING_HEADER.search(log):
        return ""
    subs = empty_submodules(root)
    if not subs:
        return ""
    return f" (git submodules not checked out: {', '.join(subs)}; git submodule update --init --recursive)"


def content_key(parts: list[str], files: list[Path]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(b"\0")
    for f in files:
        h.update(str(f).encode("utf-8"))
        try:
            h.update(f.read_bytes())
        except OSError:
            h.update(b"<missing>")
        h.update(b"\0")
    return h.hexdigest()


def arch_flag(arch_list: str | None) -> str:
    """`-arch=compute_NN` for the first target the units were built for (sm_90,compute_90 -> compute_90)."""
    for item in (arch_list or "").split(","):
        m = re.fullmatch(r"\s*(?:sm|compute)_(\d+[a-z]?)\s*", item)
        if m:
            return f"-arch=compute_{m.group(1)}"
    return COMPUTE_FLAG


def relative(path: Path, root: Path) -> str:
    try:
        return os.path.relpath(path, root)
    except ValueError:
        return str(path)
