"""nvcc as a Toolchain: CUDA units (unit.cu) to libunit.so, resources from `ptxas -v`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from miner.builder import toolchain as nvcc_tool
from miner.builder.ptxas import parse_resources
from miner.builder.toolchains.base import Toolchain
from miner.dataset.folder import LIBRARY

if TYPE_CHECKING:
    from miner.builder.toolchain import BuildOptions


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
