"""Parse configuration: include dirs, defines and per-file flags, shared by both frontends."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from miner import lazy_re
from miner.targets import CUDA_ARCH_MACRO

DEFAULT_CUDA_ARCH = CUDA_ARCH_MACRO


@dataclass
class ParseConfig:
    include_dirs: list[str] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)  # "NAME" or "NAME=VALUE"
    per_file_args: dict[str, list[str]] = field(default_factory=dict)  # from compile_commands.json
    context: frozenset[str] = frozenset()  # project files outside the inputs: closure scope, never mined
    cuda_arch: int = DEFAULT_CUDA_ARCH
    # The parse stub and torch shim precompiled once per run, for the translation units that include
    # torch headers: the shim's standard library is most of their parse time.
    torch_pch: str | None = None
    torch_tus: frozenset[str] = frozenset()
    # The parse stub and the standard headers a translation unit without torch surely includes, precompiled
    # (frontends.prelude): per parse root, the prelude it takes.
    prelude_of: dict[str, str] = field(default_factory=dict)
    # What the project's build files say of a file (miner.source.build_flags.parse_args): its dialect
    # ("-std=c++20"; files not listed are parsed as nvcc's default, C++17) and the torch half defines
    # where the build undoes some.
    args_of: dict[str, list[str]] = field(default_factory=dict)
    # Feature switches the build must define for a translation unit (miner.source.feature_guards: an
    # explicit instantiation written only under `#ifdef X`, X defined by no source): per parse root.
    defines_of: dict[str, list[str]] = field(default_factory=dict)
    # Stand-ins for framework headers the shims lack (framework_overlay): searched after the shims.
    overlay_dir: str | None = None
    # Include dirs of installed wheels that ship a header-only library a translation unit includes and the tree
    # lacks (CUTLASS: miner.source.header_wheels), per parse root: `-isystem`, after every project dir.
    system_dirs_of: dict[str, list[str]] = field(default_factory=dict)
    # Per parse root, the include dirs its own files need before the shared ones (include_graph.include_dirs_of:
    # a monorepo whose projects each have an `include/types.h`).
    include_dirs_of: dict[str, list[str]] = field(default_factory=dict)

    def include_dirs_for(self, path: str | None) -> list[str]:
        """The include dirs of the translation unit `path`, in the order its parse passes them."""
        own = self.include_dirs_of.get(path or "", [])
        return [*own, *(d for d in self.include_dirs if d not in own)]


@functools.cache
def stub_dir() -> Path:
    return Path(str(resources.files("miner.frontends") / "include"))


@functools.cache
def compiler_include_dir() -> str | None:
    """GCC's own include dir gives float.h/stddef.h: libclang's wheel ships no resource headers."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        return None
    try:
        out = subprocess.run([gcc, "-print-file-name=include"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    path = out.stdout.strip()
    return path if path and Path(path, "float.h").exists() else None


def clang_args(config: ParseConfig, path: str, prefix: bool = True) -> list[str]:
    """Host-only parse that sees the device side: `__CUDA_ARCH__` is defined as the target arch.
    `prefix=False` leaves the stub out: for building the precompiled prefix itself."""
    inc = stub_dir()
    args = [
        "-x", "cuda", "--cuda-host-only", f"-D__CUDA_ARCH__={config.cuda_arch}", "-D__NVCC__",
        *config.args_of.get(path, ["-std=c++17"]),
        "-nocudainc", "-nocudalib", "-ferror-limit=0", "-Wno-unknown-cuda-version",
    ]
    pch = _prefix_of(config, path) if prefix else None
    if pch:
        args += ["-include-pch", pch]
    elif prefix:
        args += ["-include", str(inc / "km_cuda_parse.h")]
    gcc_inc = compiler_include_dir()
    if gcc_inc:
        args += ["-isystem", gcc_inc]
    args += [f"-D{n}={v}" for n, v in toolkit_versions()]
    driver = toolkit_driver_header()
    if driver:
        args.append(f'-DKM_TOOLKIT_CUDA_H="{driver}"')
    constants = toolkit_math_constants_header()
    if constants:
        args.append(f'-DKM_TOOLKIT_MATH_CONSTANTS_H="{constants}"')
    args += config.per_file_args.get(path, [])
    args += [f"-D{d}" for d in config.defines]
    args += [f"-D{d}" for d in config.defines_of.get(path, [])]
    args += [f"-I{d}" for d in config.include_dirs_for(path)]
    args += [f"-I{inc / 'shims'}"]
    if config.overlay_dir:
        args += [f"-I{config.overlay_dir}"]
    if config.system_dirs_of.get(path):
        from miner.cuda_libs import header_library_cache_tag

        for d in config.system_dirs_of[path]:
            args += ["-isystem", d, f"-D{header_library_cache_tag(d)}"]
    return args


def _prefix_of(config: ParseConfig, path: str) -> str | None:
    """The precompiled prefix the parse of `path` takes: the torch one, else its prelude, else none."""
    pch = config.torch_pch if config.torch_pch and path in config.torch_tus else config.prelude_of.get(path)
    if (pch and path not in config.per_file_args
            and path not in config.defines_of  # a -D the prefix was built without: clang refuses it
            and config.args_of.get(path, ["-std=c++17"]) == config.args_of.get(pch, ["-std=c++17"])):
        return pch
    return None


# libcu++'s standard headers (`<cuda/std/type_traits>`): the parse has no toolkit include dir, and without
# `::cuda::std::enable_if` a project template constrained by it (`template <class T, typename
# ::cuda::std::enable_if<...>::type = 0> void copy(...)`) is dropped from the AST with every call to it.
_LIBCUXX_INCLUDE = lazy_re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"](cuda/std/([a-z_]+))[>"]', re.M)
_LIBCUXX_STD = frozenset("""
    algorithm array atomic bit cassert cfloat chrono climits cmath complex concepts cstddef cstdint cstdlib cstring
    functional initializer_list iterator limits numeric optional ratio span tuple type_traits utility variant
""".split())


def overlay_root() -> Path:
    """The folder framework_overlay writes its stand-ins into (shared across runs)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kernel-miner" / "framework-shims"


def libcuxx_stand_in(path: str) -> str | None:
    """`cuda/std/array` where `path` is framework_overlay's stand-in for libcu++'s `<cuda/std/array>`, else None."""
    root = os.path.realpath(overlay_root()) + os.sep
    real = os.path.realpath(path)
    rel = real[len(root):] if real.startswith(root) else ""
    head, _, name = rel.rpartition("/")
    return rel if head == "cuda/std" and name in _LIBCUXX_STD else None


def framework_overlay(texts: list[bytes]) -> str | None:
    """A folder of stand-ins for the framework headers (torch's `ATen/Dispatch_v2.h`, TensorFlow's
    `tensorflow/core/util/gpu_kernel_helper.h`, ...) the sources include and the shims lack, each including its
    framework's parse shim (frontends.frameworks), and for libcu++'s `<cuda/std/X>`. clang stops a
    translation unit at an include it cannot find, so one missing framework header used to lose every kernel
    and launch after it. The folder is shared across runs (same content for the same name), so parse-cache
    keys stay stable."""
    from miner.frontends.frameworks import FRAMEWORKS  # (it reads stub_dir from here)

    shims = stub_dir() / "shims"
    wanted = {m.group(1).decode(): fw.stand_in() for fw in FRAMEWORKS for t in texts for m in fw.include.finditer(t)
              if not (shims / m.group(1).decode()).is_file()}
    # CCCL headers are not parsed (the real ones cost seconds per file) but the unit includes them. A stand-in
    # that declares their namespaces keeps `namespace my_cub = cub;` a valid alias the closure can carry;
    # unfound, the alias was dropped and every `my_cub::BlockLoad<...>` in the unit undefined.
    cccl = _CCCL_STAND_IN + "".join(f"#ifndef {n}\n#define {n} {v}\n#endif\n" for n, v in _cccl_versions())
    wanted.update({(m.group(1) or m.group(2)).decode(): cccl for t in texts for m in _CCCL_INCLUDE.finditer(t)
                   if not (shims / (m.group(1) or m.group(2)).decode()).is_file()})
    # libcu++'s mirror of a standard header: that header, its names seen through `cuda::std` (units keep the
    # real `<cuda/std/...>` include: it is a toolkit header).
    wanted.update({m.group(1).decode(): cccl + f"#include <{m.group(2).decode()}>\n"
                   "namespace cuda { namespace std { using namespace ::std; } }\n"
                   for t in texts for m in _LIBCUXX_INCLUDE.finditer(t)
                   if m.group(2).decode() in _LIBCUXX_STD and not (shims / m.group(1).decode()).is_file()})
    if not wanted:
        return None
    root = overlay_root()
    try:
        for rel, body in sorted(wanted.items()):
            if ".." in Path(rel).parts:
                continue
            dst = root / rel
            if dst.is_file() and dst.read_text(encoding="utf-8", errors="replace") == body:
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
            tmp.write_text(body, encoding="utf-8")
            os.replace(tmp, dst)
    except OSError:
        return None
    return str(root)


# (TensorFlow's build spells CUB `"gpu/cub/..."`, a third_party alias of the toolkit's; units include `<cub/...>`.)
_CCCL_INCLUDE = lazy_re.compile(
    rb'^[ \t]*#[ \t]*include[ \t]*(?:<((?:cub|thrust|cuda)/[\w./-]+)>|[<"](gpu/cub/[\w./-]+)[>"])', re.M)
_CCCL_VERSION_FILES = {"CCCL_VERSION": "cuda/std/__cccl/version.h", "CUB_VERSION": "cub/version.cuh",
                       "THRUST_VERSION": "thrust/version.h"}


@functools.cache
def _cccl_versions() -> tuple[tuple[str, str], ...]:
    """The installed toolkit's CCCL version macros (`CCCL_VERSION 3000001`): code picks its reduction functors
    by them (`#if CCCL_VERSION >= 2008002` cuda::maximum<>, else cub::Max, which CCCL 3 removed), so the parse
    must see the toolkit's values, not none. Empty without nvcc."""
    return tuple(_toolkit_defines(_CCCL_VERSION_FILES).items())


def _toolkit_defines(files: dict[str, str]) -> dict[str, str]:
    """The numeric `#define NAME N` of each name in the toolkit header `files` names for it (the first include
    directory of the installed nvcc that has it). Empty without nvcc."""
    return {name: v for name, rel in files.items()
            if (v := numeric_define(name, [str(f) for f in _toolkit_files(rel)])) is not None}


def numeric_define(name: str, paths: Iterable[str]) -> str | None:
    """The number of `#define NAME N` in the first of `paths` that defines it (unreadable files skipped)."""
    pattern = re.compile(rf"^[ \t]*#[ \t]*define[ \t]+{re.escape(name)}[ \t]+(\d+)", re.M)
    for path in paths:
        try:
            m = pattern.search(Path(path).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if m:
            return m.group(1)
    return None


def _toolkit_files(rel: str) -> list[Path]:
    """The files `rel` names in the installed nvcc's include directories, first first (none without nvcc)."""
    from miner import cuda_libs  # lazy: asks nvcc once per process, only for runs that need the values

    nvcc = shutil.which("nvcc")
    return [f for d in (cuda_libs.toolkit_include_dirs(nvcc) if nvcc else ()) if (f := Path(d) / rel).is_file()]


_VERSION_FILES = {"CUDA_VERSION": "cuda.h", "CUDART_VERSION": "cuda_runtime_api.h"}


@functools.cache
def toolkit_versions() -> tuple[tuple[str, str], ...]:
    """The installed toolkit's version macros (`CUDA_VERSION 13000`, `CUDART_VERSION`, `__CUDACC_VER_MAJOR__`,
    `__CUDACC_VER_MINOR__`) for the parse, which includes no toolkit header: code gates kernels on them
    (`#define HAS_FP4 (CUDA_VERSION >= 12080)`, `#if HAS_FP4`), and the units are built by this toolkit, so the
    parse must take the branches its nvcc takes (the stub's fixed 12.4 hid every kernel gated on a later one).
    Empty without nvcc: the stub's defaults stand."""
    out = _toolkit_defines(_VERSION_FILES)
    if "CUDA_VERSION" in out:
        v = int(out["CUDA_VERSION"])
        out.setdefault("CUDART_VERSION", out["CUDA_VERSION"])
        out |= {"__CUDA_API_VERSION": out["CUDA_VERSION"], "__CUDACC_VER_MAJOR__": str(v // 1000),
                "__CUDACC_VER_MINOR__": str(v % 1000 // 10)}
    return tuple(out.items())


@functools.cache
def toolkit_driver_header() -> str | None:
    """The installed toolkit's `cuda.h`, which the parse shim of `<cuda.h>` includes whole (None without nvcc:
    the stub's few driver types stand). A library built on the driver API (`CUevent`, `CUmemAccessDesc`,
    `CU_STREAM_CAPTURE_MODE_*`, thousands of names) parsed without it fell apart: clang's recovery from the
    unknown types lost a closing brace, left `namespace cuda { namespace memory {` open to the end of the
    translation unit, and put the main file's kernels in it, so units wrapped a global kernel in that
    namespace (another mangled name than the original's). Only a translation unit that includes `<cuda.h>`
    pays for its million bytes, as with nvcc."""
    return next((str(f) for f in _toolkit_files("cuda.h") if '"' not in str(f)), None)


@functools.cache
def toolkit_math_constants_header() -> str | None:
    """The installed toolkit's `math_constants.h`, which the parse shim of `<math_constants.h>` includes whole
    (None without nvcc: the stub's few `CUDART_*` stand). A plain header of macros; the stub defined eight of its
    ~90 names, so a kernel using another (`1.0f / CUDART_SQRT_2PI`) was an undeclared identifier in the parse,
    and its closure, built from a body clang had given up on, took the wrong declarations."""
    return next((str(f) for f in _toolkit_files("math_constants.h") if '"' not in str(f)), None)


# thrust's vocabulary types, declared once whichever stand-in comes first: a project type written with
# `thrust::pair<Key, Element>` (a hash table's default allocator argument) was invalid in the parse, and with it
# the whole class template, which no closure could then take. Likewise the types a container library builds
# its interface on (`is_base_of<thrust::execution_policy<T>, T>`, `decltype(thrust::device)`,
# `thrust::pointer<T, thrust::device_system_tag>`, `thrust::counting_iterator<I>`, thrust's functional
# objects) and the algorithms that return nothing: without them its execution policies, pointers and every
# overload declared with them were invalid, and libclang cut the extents of the valid overloads beside them.
# A build that wraps thrust and CUB in a namespace of its own (`-DTHRUST_CUB_WRAPPED_NAMESPACE=proj`, or the two
# macros apart) has them as `proj::thrust`, `proj::cub`, as CCCL's config declares them: the vocabulary is declared
# there, else every `proj::thrust::device_vector<T>` member, and the class around it, was invalid in the parse.
_THRUST_VOCABULARY = """#ifndef KM_THRUST_VOCABULARY
#define KM_THRUST_VOCABULARY
#if defined(THRUST_WRAPPED_NAMESPACE)
#define KM_THRUST_OPEN namespace THRUST_WRAPPED_NAMESPACE { namespace thrust {
#define KM_THRUST_CLOSE } }
#elif defined(THRUST_CUB_WRAPPED_NAMESPACE)
#define KM_THRUST_OPEN namespace THRUST_CUB_WRAPPED_NAMESPACE { namespace thrust {
#define KM_THRUST_CLOSE } }
#else
#define KM_THRUST_OPEN namespace thrust {
#define KM_THRUST_CLOSE }
#endif
#if defined(CUB_WRAPPED_NAMESPACE)
namespace CUB_WRAPPED_NAMESPACE { namespace cub {} }
#elif defined(THRUST_CUB_WRAPPED_NAMESPACE)
namespace THRUST_CUB_WRAPPED_NAMESPACE { namespace cub {} }
#endif
KM_THRUST_OPEN
template <class T1, class T2> struct pair {
  typedef T1 first_type; typedef T2 second_type; T1 first; T2 second;
  __host__ __device__ pair(); __host__ __device__ pair(const T1 &, const T2 &);
  template <class U1, class U2> __host__ __device__ pair(const pair<U1, U2> &);
};
template <class T1, class T2> __host__ __device__ pair<T1, T2> make_pair(T1, T2);
template <class... Ts> struct tuple { __host__ __device__ tuple(); __host__ __device__ tuple(const Ts &...); };
template <class... Ts> __host__ __device__ tuple<Ts...> make_tuple(Ts...);
template <class Derived> struct execution_policy {};
namespace detail {
struct device_t : execution_policy<device_t> {};
struct host_t : execution_policy<host_t> {};
}  // namespace detail
static const detail::device_t device;
static const detail::host_t host;
struct any_system_tag {};
struct device_system_tag {};
struct host_system_tag {};
template <class T> struct device_reference;
template <class Element, class Tag, class Reference = void, class Derived = void> class pointer {
 public:
  typedef Element element_type; typedef Element value_type; typedef Element *raw_pointer;
  __host__ __device__ pointer(); __host__ __device__ explicit pointer(Element *);
  __host__ __device__ Element *get() const;
  __host__ __device__ Element &operator*() const; __host__ __device__ Element &operator[](long) const;
  __host__ __device__ pointer operator+(long) const; __host__ __device__ long operator-(const pointer &) const;
};
template <class T> class device_ptr : public pointer<T, device_system_tag> {
 public:
  __host__ __device__ device_ptr(); __host__ __device__ explicit device_ptr(T *);
};
template <class T> __host__ __device__ device_ptr<T> device_pointer_cast(T *);
template <class T> __host__ __device__ T *raw_pointer_cast(T *);
template <class E, class Tag, class R, class D> __host__ __device__ E *raw_pointer_cast(const pointer<E, Tag, R, D> &);
template <class T> __host__ __device__ T *raw_pointer_cast(const device_ptr<T> &);
template <class Incrementable, class System = any_system_tag, class Traversal = any_system_tag,
          class Difference = long> class counting_iterator {
 public:
  __host__ __device__ counting_iterator(); __host__ __device__ explicit counting_iterator(Incrementable);
  __host__ __device__ Incrementable operator*() const; __host__ __device__ Incrementable operator[](long) const;
  __host__ __device__ counting_iterator operator+(long) const;
};
template <class T> __host__ __device__ counting_iterator<T> make_counting_iterator(T);
class iterator_core_access {};
template <class T = void> struct plus { __host__ __device__ T operator()(const T &, const T &) const; };
template <class T = void> struct minus { __host__ __device__ T operator()(const T &, const T &) const; };
template <class T = void> struct multiplies { __host__ __device__ T operator()(const T &, const T &) const; };
template <class T = void> struct maximum { __host__ __device__ T operator()(const T &, const T &) const; };
template <class T = void> struct minimum { __host__ __device__ T operator()(const T &, const T &) const; };
template <class T = void> struct logical_and { __host__ __device__ bool operator()(const T &, const T &) const; };
template <class T = void> struct logical_or { __host__ __device__ bool operator()(const T &, const T &) const; };
template <class T = void> struct equal_to { __host__ __device__ bool operator()(const T &, const T &) const; };
template <class T = void> struct less { __host__ __device__ bool operator()(const T &, const T &) const; };
template <class T = void> struct greater { __host__ __device__ bool operator()(const T &, const T &) const; };
template <class T = void> struct identity { __host__ __device__ const T &operator()(const T &) const; };
// The containers, by the interface examples and benchmarks hand to kernels and launchers (`d.data().get()`,
// `thrust::raw_pointer_cast(d.data())`, `d.size()`): without them every local initialized from one was dependent
// and a member template called with such locals deduced nothing (its kernel took guessed `float`s).
template <class T> class device_allocator {};
template <class T> class host_allocator {};
template <class T, class Alloc = device_allocator<T>> class device_vector {
 public:
  typedef T value_type; typedef unsigned long size_type; typedef device_ptr<T> pointer; typedef device_ptr<T> iterator;
  device_vector(); explicit device_vector(size_type); device_vector(size_type, const T &);
  template <class V> device_vector(const V &); template <class It> device_vector(It, It);
  template <class V> device_vector &operator=(const V &);
  device_ptr<T> data(); device_ptr<const T> data() const; device_ptr<T> begin(); device_ptr<T> end();
  size_type size() const; bool empty() const; void resize(size_type); void resize(size_type, const T &);
  void clear(); T &operator[](size_type);
};
template <class T, class Alloc = host_allocator<T>> class host_vector {
 public:
  typedef T value_type; typedef unsigned long size_type; typedef T *pointer; typedef T *iterator;
  host_vector(); explicit host_vector(size_type); host_vector(size_type, const T &);
  template <class V> host_vector(const V &); template <class It> host_vector(It, It);
  template <class V> host_vector &operator=(const V &);
  T *data(); const T *data() const; T *begin(); T *end(); size_type size() const; bool empty() const;
  void resize(size_type); void resize(size_type, const T &); void clear(); void push_back(const T &);
  T &operator[](size_type); const T &operator[](size_type) const;
};
template <class... A> void for_each(A &&...);
template <class... A> void for_each_n(A &&...);
template <class... A> void fill(A &&...);
template <class... A> void fill_n(A &&...);
template <class... A> void sequence(A &&...);
template <class... A> void sort(A &&...);
template <class... A> void sort_by_key(A &&...);
template <class... A> void stable_sort(A &&...);
template <class... A> void stable_sort_by_key(A &&...);
KM_THRUST_CLOSE
#endif
"""
_CCCL_STAND_IN = "/* kernel-miner parse stand-in: a CUDA core library header (CCCL), not parsed; units include " \
                 "the real one. */\n#pragma once\nnamespace cub {}\nnamespace thrust {}\nnamespace cuda { " \
                 "namespace std {} }\n" + _THRUST_VOCABULARY
