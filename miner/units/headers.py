"""Which `#include <...>` a unit keeps: standard C/C++ headers, CUDA toolkit headers and the device headers of
CUDA libraries (cuRAND); framework headers (torch, pybind11) never. Without libclang, so the build can
tell a unit's standard headers (the host compiler's) from those it must find in the toolkit or a wheel."""

from __future__ import annotations

import functools
import os

from miner import lazy_re

# Toolkit and standard headers a unit may keep; torch/framework headers never enter a unit.
STD_HEADERS = frozenset("""
    algorithm any array atomic bit bitset cassert cctype cerrno cfenv cfloat charconv chrono cinttypes climits
    cmath complex concepts csignal cstdarg cstddef cstdint cstdio cstdlib cstring ctime cwchar deque exception
    functional initializer_list iomanip ios iosfwd iostream istream iterator limits list map memory mutex new numeric
    optional ostream queue random ratio set span sstream stack stdexcept string string_view system_error thread
    tuple type_traits typeinfo unordered_map unordered_set utility valarray variant vector
    fstream streambuf filesystem regex condition_variable future shared_mutex typeindex forward_list locale
    clocale csetjmp cwctype compare numbers
    assert.h ctype.h errno.h float.h inttypes.h limits.h math.h signal.h stdarg.h stdbool.h stddef.h stdint.h
    stdio.h stdlib.h string.h time.h
""".split())
# C, POSIX and Linux headers beyond those (every Linux toolchain has them): a unit keeps one only where its text
# names what it declares (closure.text.HEADER_OF: `__be32` -> linux/types.h), and the build looks for none.
SYSTEM_HEADERS = frozenset("""
    stdarg.h signal.h setjmp.h locale.h wchar.h wctype.h complex.h fenv.h iso646.h tgmath.h uchar.h stdalign.h
    stdatomic.h stdnoreturn.h threads.h unistd.h pthread.h fcntl.h dirent.h sys/types.h sys/stat.h sys/time.h
    sys/mman.h malloc.h alloca.h memory.h strings.h linux/types.h asm/types.h
""".split())
# Headers that ship with the CUDA toolkit's compiler and runtime (not cuBLAS, cuDNN, cuRAND, NCCL, ...).
TOOLKIT_HEADER = lazy_re.compile(
    r"^(cuda\.h|cuda_\w+\.h|device_(functions|launch_parameters|types|atomic_functions)\.h"
    r"|vector_(types|functions)\.h|math_constants\.h|mma\.h|sm_\d+_intrinsics\.h|driver_types\.h|cuComplex\.h"
    r"|cooperative_groups(/.*)?(\.h)?|cub/.*|cuda/.*|thrust/.*|nv/.*)$")
# The toolkit's own `cuda_*.h` headers (CUDA 11-13): a project header sharing the prefix (`<cuda_helper.h>`)
# is the project's, inlined by the closure, never kept as an include the toolkit would have to find.
_TOOLKIT_CUDA_PREFIXED = lazy_re.compile(
    r"^cuda_(runtime|runtime_api|device_runtime_api|fp16|bf16|fp8|fp6|fp4|profiler_api|occupancy|stdint"
    r"|texture_types|surface_types|gl_interop|egl_interop|vdpau_interop|d3d\d+_interop|awbarrier\w*|pipeline\w*)"
    r"\.h(pp)?$")


def is_toolkit_header(name: str) -> bool:
    """Whether `#include <name>` names a header of the CUDA toolkit's compiler and runtime."""
    return bool(TOOLKIT_HEADER.match(name)) and (not name.startswith("cuda_")
                                                 or bool(_TOOLKIT_CUDA_PREFIXED.match(name)))


# The toolkit's header folders (CCCL, cooperative groups): a name under one is the toolkit's only if the toolkit has it.
_TOOLKIT_FOLDER = lazy_re.compile(r"^(cuda|cub|thrust|nv|cooperative_groups)/")


def toolkit_lacks(name: str) -> bool:
    """Whether `#include <name>` is spelled under a toolkit folder (`cuda/`, `cub/`, ...) that the installed
    toolkit has no such file in: a project's own header (a C++ wrapper library's `<cuda/api.hpp>`, found by the
    -I its build passes). Read as the toolkit's, it was never looked up in the project, the parse lost every
    declaration it brings, and the unit kept an include nvcc cannot find. False without nvcc (nothing to ask)."""
    if not _TOOLKIT_FOLDER.match(name):
        return False
    dirs = toolkit_dirs()
    return bool(dirs) and not any(os.path.isfile(os.path.join(d, name)) for d in dirs)


@functools.cache
def toolkit_dirs() -> tuple[str, ...]:
    """The installed nvcc's include folders (none without nvcc)."""
    from miner.builder.toolchain import find_nvcc  # lazy: asks nvcc once per process, only when a name needs it
    from miner.cuda_libs import toolkit_include_dirs
    from miner.errors import MinerError

    try:
        return toolkit_include_dirs(find_nvcc())
    except (MinerError, OSError):
        return ()


# Headers of CUDA libraries that kernels call into (cuRAND's generators) or name types of (cuFFT's complex
# types and callback pointers): a unit includes one when
# its closure names a declaration of our parse shim of it (curandState_t); the build finds it in the toolkit
# or in an installed nvidia-* wheel (miner.cuda_libs).
UNIT_LIBRARY_HEADER = lazy_re.compile(r"^(curand(_\w+)?|cufft(Xt)?)\.h$")
FRAMEWORK = lazy_re.compile(r"^(ATen|c10|torch|THC|pybind11|parrots|caffe2|Python)\b|^Python\.h$")
