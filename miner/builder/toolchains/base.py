"""What the build stage asks of a compiler: where it is, what it is (part of every cache key), which flags
an --arch list means, where its results go in metadata, and how its resource report reads.

One subclass per compiler (nvcc.py, hipcc.py); the scheduler, cache and driver only see this interface.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any

from miner.dataset.folder import LIBRARY

if TYPE_CHECKING:
    from miner.builder.toolchain import BuildOptions
    from miner.builder.unit_split import Unit


class Toolchain(ABC):
    """One compiler family. `name` is what --toolchain takes; `key` the metadata block it fills."""

    name: str = ""
    compiler: str = ""          # executable name, used in messages
    key: str = "build"          # per-instantiation and per-kernel metadata block
    library_name: str = LIBRARY
    log_name: str = "build.log"
    source_suffix: str = ".cu"     # how a batch file is named, so the compiler takes its language
    default_arch: str = ""

    def __init__(self, path: str) -> None:
        self.path = path

    @classmethod
    @abstractmethod
    def find(cls, explicit: str | None = None) -> str:
        """Absolute path of the compiler, or a UsageError (exit 2) in one line."""

    def locate(self, explicit: str | None = None, home: str | None = None) -> None:
        """Set self.path: `explicit` (--nvcc/--hipcc), else what find() finds. `home` is a toolkit prefix
        (--hip-path) for a toolchain that takes one; this one does not."""
        self.path = self.find(explicit)

    @classmethod
    @abstractmethod
    def owns_arch(cls, item: str) -> bool:
        """Whether an --arch item (sm_90, gfx90a) names a target of this compiler."""

    @abstractmethod
    def version_id(self) -> str:
        """Everything about the compiler that changes its output: part of every cache key."""

    @staticmethod
    @abstractmethod
    def release(tool_id: str) -> str:
        """The short version recorded in the kernel-level summary."""

    @abstractmethod
    def flags(self, opts: BuildOptions) -> list[str]:
        """Compiler flags for a shared library of opts.arch (validates it: UsageError when bad)."""

    def invocation(self) -> list[str]:
        """Arguments that belong to the compiler rather than to a build (where its own headers are): given
        before the flags, and not part of the cache keys, which carry version_id() instead."""
        return []

    def env(self) -> dict[str, str]:
        """Environment the compiler needs besides the caller's."""
        return {}

    @abstractmethod
    def parse_resources(self, log: str) -> dict[str, dict[str, Any]]:
        """{"<mangled kernel>@<arch>": usage} from the compiler's resource report in its log."""

    def check(self, opts: BuildOptions, tool_id: str, cache_root: Path) -> None:
        """A UsageError when the compiler cannot build for opts.arch at all (checked once, before any unit)."""
        return None

    def wants(self, meta: dict[str, Any]) -> bool:
        """Whether this compiler builds a kernel: a HIP variant (metadata `variant.toolchain`) is HIP code."""
        want = (meta.get("variant") or {}).get("toolchain")
        return want is None or want == self.name

    def unit_flags(self, flags: list[str]) -> list[str]:
        """The project's own flags (metadata `build_flags.nvcc`, already white-listed) this compiler takes."""
        return flags

    def prepare(self, units: list[Unit], cache_root: Path | None = None) -> list[Unit]:
        """The units this compiler builds, made from the rendered CUDA units (identity for nvcc)."""
        return units

    def record_extra(self, u: Unit, rec: dict[str, Any], log: str) -> dict[str, Any]:
        """Fields this toolchain adds to an instantiation's build record."""
        return {}

    def summary_extra(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """Fields this toolchain adds to the kernel-level summary."""
        return {}
