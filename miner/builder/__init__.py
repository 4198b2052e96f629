"""Build stage: compile every standalone unit with nvcc into a ctypes-loadable shared library.

One nvcc call costs ~1-2 s of fixed overhead (host preprocessing of the CUDA headers, cudafe++,
host compile, link) and only a fraction of that per extra kernel, so units are compiled in
batches: K units concatenated into one translation unit (includes hoisted and de-duplicated, each
body in its own `namespace km_b<i>_`, its macros restored after it), one .so for the whole batch.
A failing batch is split: errors are attributed to units by `#line` tags and namespace names,
the attributed units are compiled alone (their standalone result is the one recorded, so batching
can never make a unit fail), the rest are rebuilt together; unattributable failures are bisected.

Results are cached by content (unit text + local headers + flags + nvcc and host compiler
versions), so an unchanged tree rebuilds in well under a second per hundred units.

The stage's public names are imported from `miner.builder` (below); the parts, in the order a build
uses them:
  toolchain   which nvcc, its version id, --arch to -gencode flags, BuildOptions
  unit_split  a kernel's units read and split along the km: markers (includes, body, macros)
  cache       content keys and the content-addressed result/object store
  batch       batch source assembly; a batch log traced back to its members (#line tags, namespaces)
  compiler    nvcc in its own process group, killed whole on a timeout
  diagnostics error lines and the missing names they report
  ptxas       per-kernel resource usage from ptxas -v
  scheduler   batches planned, run in parallel, failed batches split or bisected
  driver      the dataset-level stage: select kernels, build, place libraries, record metadata
  single      one unit on demand (validate, the harness), same flags and cache as the stage
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from miner.builder.batch import attribute, batch_source, split_log
    from miner.builder.cache import CACHE_FORMAT, Cache, default_cache_dir, unit_key
    from miner.builder.compiler import Compiled, Compiler
    from miner.builder.diagnostics import Diagnostic, missing_include, missing_symbol, parse_errors
    from miner.builder.driver import LIBRARY_NAME, LOG_NAME, BuildReport, build_dataset, build_record
    from miner.builder.ptxas import demangle, parse_resources, pick_resources
    from miner.builder.scheduler import LOG_LIMIT, Builder, Result
    from miner.builder.single import build_unit
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

# The public names are loaded with their module at first use (PEP 562): `from miner.builder.diagnostics import
# ...` in the extract stage loaded the whole build stage with this package (~40 ms of each start-up).
_HOME = {
    **dict.fromkeys(("attribute", "batch_source", "split_log"), "batch"),
    **dict.fromkeys(("CACHE_FORMAT", "Cache", "default_cache_dir", "unit_key"), "cache"),
    **dict.fromkeys(("Compiled", "Compiler"), "compiler"),
    **dict.fromkeys(("Diagnostic", "missing_include", "missing_symbol", "parse_errors"), "diagnostics"),
    **dict.fromkeys(("LIBRARY_NAME", "LOG_NAME", "BuildReport", "build_dataset", "build_record"), "driver"),
    **dict.fromkeys(("demangle", "parse_resources", "pick_resources"), "ptxas"),
    **dict.fromkeys(("LOG_LIMIT", "Builder", "Result"), "scheduler"),
    **dict.fromkeys(("build_unit",), "single"),
    **dict.fromkeys(("DEFAULT_ARCH", "DEFAULT_BATCH", "DEFAULT_TIMEOUT", "BuildOptions", "find_nvcc", "gencode_flags",
                     "nvcc_release", "toolchain_id"), "toolchain"),
    **dict.fromkeys(("Unit", "collect_units", "split_unit"), "unit_split"),
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"miner.builder.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "CACHE_FORMAT", "DEFAULT_ARCH", "DEFAULT_BATCH", "DEFAULT_TIMEOUT", "LIBRARY_NAME", "LOG_LIMIT", "LOG_NAME",
    "BuildOptions", "BuildReport", "Builder", "Cache", "Compiled", "Compiler", "Diagnostic", "Result", "Unit",
    "attribute", "batch_source", "build_dataset", "build_record", "build_unit", "collect_units", "default_cache_dir",
    "demangle",
    "find_nvcc", "gencode_flags", "missing_include", "missing_symbol", "nvcc_release", "parse_errors",
    "parse_resources", "pick_resources", "split_log", "split_unit", "toolchain_id", "unit_key",
]
