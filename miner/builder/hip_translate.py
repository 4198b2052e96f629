"""CUDA unit text to HIP unit text with torch's hipify mapping (torch.utils.hipify, the one ROCm PyTorch
builds its own CUDA sources with), loaded on its own: importing torch would cost seconds and libtorch.

Launches stay `<<<...>>>` (hip-clang compiles them, as torch's hip_clang_launch mode keeps them), so the
extern "C" launcher and its ABI are the CUDA unit's, name for name.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from functools import lru_cache
from pathlib import Path
from types import ModuleType

from miner import lazy_re
from miner.errors import UsageError

_PACKAGE = "km_torch_hipify"
# An include of a library's sub-header: `<cooperative_groups/reduce.h>`, `<cub/warp/warp_reduce.cuh>`.
_SUB_HEADER = lazy_re.compile(r'^([ \t]*#[ \t]*include[ \t]*[<"])(\w+)/([\w./-]+)([>"])', re.M)
INSTALL_HINT = ("the hip toolchain translates units with torch.utils.hipify: "
                "pip install 'kernel-miner[hip]' (torch==2.13.0)")


@lru_cache(maxsize=1)
def _root() -> Path:
    """torch/utils/hipify, found without importing torch; a UsageError when torch is not installed."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        spec = None
    root = Path(spec.origin).parent / "utils" / "hipify" if spec and spec.origin else None
    if root is None or not (root / "hipify_python.py").is_file():
        raise UsageError(f"torch.utils.hipify not found: {INSTALL_HINT}")
    return root


@lru_cache(maxsize=1)
def _hipify() -> ModuleType:
    """torch/utils/hipify/hipify_python.py as a module of its own package, without torch/__init__."""
    root = _root()
    pkg_spec = importlib.util.spec_from_file_location(_PACKAGE, root / "__init__.py",
                                                      submodule_search_locations=[str(root)])
    if pkg_spec is None or pkg_spec.loader is None:
        raise UsageError(f"cannot load {root}: {INSTALL_HINT}")
    pkg = importlib.util.module_from_spec(pkg_spec)
    sys.modules[_PACKAGE] = pkg
    pkg_spec.loader.exec_module(pkg)
    return importlib.import_module(f"{_PACKAGE}.hipify_python")


def available() -> bool:
    try:
        _root()
    except UsageError:
        return False
    return True


@lru_cache(maxsize=1)
def hipify_version() -> str:
    """Part of the HIP cache keys: the mapping's files by content (a new mapping may translate a unit
    differently), read without loading them, so a warm rebuild never imports the mapping."""
    h = hashlib.sha256()
    for name in ("hipify_python.py", "cuda_to_hip_mappings.py"):
        h.update((_root() / name).read_bytes())
    return f"torch-hipify {h.hexdigest()[:16]}"


def mapping() -> dict[str, str]:
    """CUDA name or header -> HIP one, as the mapping has it."""
    return _hipify().PYTORCH_MAP


def is_mapped(name: str) -> bool:
    return name in _hipify().PYTORCH_MAP


def translate(cuda_text: str) -> str:
    """The HIP text of a CUDA unit: identifiers, types and headers renamed by the mapping, device-side
    std:: math as hipify does it for .cu files."""
    h = _hipify()
    # The mapping's regex needs a non-word character on each side of a name, as in a whole file.
    out = h.RE_PYTORCH_PREPROCESSOR.sub(lambda m: h.PYTORCH_MAP[m.group(0)], "\n" + cuda_text + "\n")[1:-1]
    if "/" in out and "include" in out:
        out = _SUB_HEADER.sub(lambda m: _library_header(m, h.PYTORCH_MAP), out)
    return h.replace_math_functions(out)


def _library_header(m: re.Match[str], mapping: dict[str, str]) -> str:
    """A sub-header the mapping does not name becomes its library's HIP header when the mapping names the
    library's umbrella header (`cooperative_groups/reduce.h` -> what `cooperative_groups.h` maps to,
    `cub/warp/warp_reduce.cuh` -> what `cub/cub.cuh` maps to), as the mapping itself does for every
    `cub/...` header it lists (-> `hipcub/hipcub.hpp`). HIP has one header per library: whatever the
    sub-header declared that HIP lacks then fails to compile by name (`no member named 'reduce' in
    namespace 'cooperative_groups'`) instead of every unit stopping at the include, used or not."""
    library, sub = m.group(2), m.group(3)
    if f"{library}/{sub}" in mapping:
        return m.group(0)
    for umbrella in [f"{stem}{ext}" for stem in (library, f"{library}/{library}") for ext in (".h", ".cuh", ".hpp")]:
        target = mapping.get(umbrella)
        if target and target != f"{library}/{sub}":
            return f"{m.group(1)}{target}{m.group(4)}"
    return m.group(0)
