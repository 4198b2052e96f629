"""One unit built on demand (validate's missing libraries, the harness's `load_unit`): the build
stage's flags, compiler and content-addressed cache for a single unit, with no dataset pass and no
metadata written. A unit the build stage compiled before is a cache hit here, and the reverse."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from miner.builder.cache import Cache, default_cache_dir, unit_key
from miner.builder.driver import LIBRARY_NAME
from miner.builder.scheduler import Builder
from miner.builder.toolchain import DEFAULT_ARCH, DEFAULT_TIMEOUT, BuildOptions, find_nvcc
from miner.builder.toolchains.nvcc import Nvcc
from miner.builder.unit_split import Unit, split_unit
from miner.errors import BuildError, UsageError

ARCH_ENV = "KM_CUDA_ARCH"


def unit_arch() -> str:
    """The targets a unit built on demand is compiled for: KM_CUDA_ARCH, else the build stage's default."""
    return os.environ.get(ARCH_ENV) or DEFAULT_ARCH


def nvcc_command(unit_cu: str | Path, library: str | Path, arch: str | None = None, nvcc: str = "nvcc") -> list[str]:
    """The command the build stage runs for one unit, for a person to run (triage's repro.sh)."""
    return [nvcc, *BuildOptions(arch=arch or unit_arch()).nvcc_flags(), str(unit_cu), "-o", str(library)]


def _cache(cache_dir: Path | None) -> tuple[Cache, Path | None]:
    """The shared cache, or a throw-away one where it cannot be written (a sandboxed test process sees
    the home folder read-only); the second value is the folder to remove afterwards."""
    root = cache_dir or default_cache_dir()
    try:
        cache = Cache(root)
        if os.access(cache.root / "tmp", os.W_OK):
            return cache, None
    except OSError:
        pass
    scratch = Path(tempfile.mkdtemp(prefix="km-build-"))
    return Cache(scratch), scratch


def build_unit(unit_cu: str | Path, *, arch: str | None = None, timeout: float = DEFAULT_TIMEOUT,
               nvcc: str | None = None, cache_dir: Path | None = None) -> Path:
    """Compile `unit_cu` into `libunit.so` beside it (or take it from the cache); return the library's path.

    Raises BuildError with the compiler's first error line."""
    unit_cu = Path(unit_cu)
    if not unit_cu.is_file():
        raise BuildError(f"{unit_cu}: no such unit")
    try:
        tc = Nvcc(find_nvcc(nvcc))
        tool_id = tc.version_id()
    except UsageError as exc:
        raise BuildError(str(exc)) from None
    opts = BuildOptions(arch=arch or unit_arch(), jobs=1, timeout=timeout, batch_size=1)
    unit = Unit(unit_cu.parent.name, 0, unit_cu.parent.name, unit_cu.parent, unit_cu.name, "", "")
    try:
        unit.text = unit_cu.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BuildError(f"cannot read {unit_cu}: {getattr(exc, 'strerror', None) or exc}") from None
    split_unit(unit)
    cache, scratch = _cache(cache_dir)
    try:
        unit.key = unit_key(unit, tc.flags(opts), tool_id)
        result = Builder(tc, opts, cache).run([unit])[unit.key]
        if result.status != "ok" or not result.object:
            raise BuildError(result.error or f"{tc.compiler} {result.status}")
        library = unit_cu.with_name(LIBRARY_NAME)
        # A copy, not the build stage's hard link: the harness trusts a library newer than its unit.cu,
        # and a link would carry the cached object's older time. Renamed into place so a concurrent
        # loader never dlopens half a library.
        fd, tmp = tempfile.mkstemp(prefix=".libunit.", suffix=".so", dir=unit_cu.parent)
        os.close(fd)
        try:
            shutil.copyfile(cache.root / result.object, tmp)
            os.replace(tmp, library)
        finally:
            Path(tmp).unlink(missing_ok=True)
        return library
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
