"""nvcc as a Toolchain: CUDA units (unit.cu) to libunit.so, resources from `ptxas -v`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from miner import cuda_libs, lazy_re
from miner.builder import toolchain as nvcc_tool
from miner.builder.ptxas import parse_resources
from miner.builder.toolchains.base import Toolchain
from miner.dataset.folder import LIBRARY
from miner.units.headers import STD_HEADERS, SYSTEM_HEADERS, TOOLKIT_HEADER

if TYPE_CHECKING:
    from miner.builder.toolchain import BuildOptions
    from miner.builder.unit_split import Unit

def _in_system(header: str) -> bool:
    """Whether the host compiler's include folders hold `header`."""
    from miner.source.missing_headers import system_include_dirs

    return any((Path(d) / header).is_file() for d in system_include_dirs())


_ANGLE_INCLUDE = lazy_re.compile(r"^[ \t]*#[ \t]*include[ \t]*<([^>\n]+)>", re.M)
_HAS_INCLUDE = lazy_re.compile(r"__has_include\s*\(\s*<([^>\n]+)>")


class Nvcc(Toolchain):
    name = "cuda"
    compiler = "nvcc"
    key = "build"
    library_name = LIBRARY
    log_name = "build.log"
    default_arch = nvcc_tool.DEFAULT_ARCH

    @classmethod
    def find(cls, explicit: str | None = None) -> str:
        return nvcc_tool.find_nvcc(explicit)

    @classmethod
    def owns_arch(cls, item: str) -> bool:
        return bool(re.fullmatch(r"(sm|compute)_\d+[a-z]?", item))

    def version_id(self) -> str:
        return nvcc_tool.toolchain_id(self.path)

    @staticmethod
    def release(tool_id: str) -> str:
        return nvcc_tool.nvcc_release(tool_id)

    def flags(self, opts: BuildOptions) -> list[str]:
        return opts.nvcc_flags()

    def parse_resources(self, log: str) -> dict[str, dict[str, Any]]:
        return parse_resources(log)

    def prepare(self, units: list[Unit], cache_root: Path | None = None) -> list[Unit]:
        """Find every header a unit includes that is neither standard C/C++, the host system's (`<execinfo.h>`)
        nor the compiler toolkit's own (cuda_runtime.h, cub/: nvcc finds those or says so itself): in the
        toolkit nothing is needed; in a CUDA library wheel (cuRAND's headers, which a CUDA 13 toolkit may lack)
        its include dir joins that unit's flags; nowhere, the unit is not compiled and says which header is
        missing (missing_toolkit_header). Units that include no such header cost no lookup."""
        for u in units:
            guarded = set(_HAS_INCLUDE.findall(u.text))  # `#if __has_include(<cuda_bf16.h>)`: optional
            for header in dict.fromkeys(h.strip() for h in _ANGLE_INCLUDE.findall(u.text)):
                if header in STD_HEADERS or header in SYSTEM_HEADERS or TOOLKIT_HEADER.match(header) \
                        or header in u.vendored:
                    continue
                found = cuda_libs.locate(header, self.path)
                if found.where == "missing" and _in_system(header):
                    continue  # the C library's or the compiler's (`<execinfo.h>`, `<cxxabi.h>`): nvcc finds it
                if found.where == "wheel" and found.include_dir:
                    if found.include_dir not in u.compile_flags:
                        u.compile_flags += ["-isystem", found.include_dir]
                    u.external.append({"header": header, "include_dir": found.include_dir,
                                       "package": found.package})
                elif found.where == "missing" and header not in guarded and u.missing_header is None:
                    u.missing_header = header
        return units

    def record_extra(self, u: Unit, rec: dict[str, Any], log: str) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if u.external:
            extra["external_includes"] = u.external
        if u.missing_header and rec["status"] == "failed":
            extra["error_class"] = "missing_toolkit_header"
        return extra
