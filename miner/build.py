"""The build stage's public names; the parts live in miner/builder/ (one job per module, listed there).

A package named `build` would be taken for build output by .gitignore, ruff and other tools, so the
parts have their own package and this module keeps `from miner.build import ...` stable.
"""

from miner.builder.batch import attribute, batch_source, split_log
from miner.builder.cache import CACHE_FORMAT, Cache, default_cache_dir, unit_key
from miner.builder.compiler import Compiled, Compiler
from miner.builder.diagnostics import Diagnostic, missing_include, missing_symbol, parse_errors
from miner.builder.driver import LIBRARY_NAME, LOG_NAME, BuildReport, build_dataset, build_record
from miner.builder.ptxas import demangle, parse_resources, pick_resources
from miner.builder.scheduler import LOG_LIMIT, Builder, Result
from miner.builder.toolchain import (
    DEFAULT_ARCH,
    DEFAULT_BATCH,
    DEFAULT_TIMEOUT,
    BuildOptions,
    find_nvcc,
    gencode_flags,
    nvcc_release,
    toolchain_id,
)
from miner.builder.unit_split import Unit, collect_units, split_unit

__all__ = [
    "CACHE_FORMAT", "DEFAULT_ARCH", "DEFAULT_BATCH", "DEFAULT_TIMEOUT", "LIBRARY_NAME", "LOG_LIMIT", "LOG_NAME",
    "BuildOptions", "BuildReport", "Builder", "Cache", "Compiled", "Compiler", "Diagnostic", "Result", "Unit",
    "attribute", "batch_source", "build_dataset", "build_record", "collect_units", "default_cache_dir", "demangle",
    "find_nvcc", "gencode_flags", "missing_include", "missing_symbol", "nvcc_release", "parse_errors",
    "parse_resources", "pick_resources", "split_log", "split_unit", "toolchain_id", "unit_key",
]
