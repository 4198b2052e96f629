"""What the extract command takes (`ExtractOptions`) and gives back (`ExtractReport`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FRONTENDS = ("auto", "clang", "treesitter")
LANGUAGES = ("auto", "cuda", "triton")
CUDA_SUFFIXES = {".cu", ".cuh", ".hip"}


@dataclass
class ExtractOptions:
    paths: list[str]
    out_dir: str
    include_dirs: list[str] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)
    compile_commands: str | None = None
    jobs: int = 1
    frontend: str = "auto"
    units: bool = True  # closure, launches, instantiations and rendered units (needs libclang)
    project: str | None = None  # where context files are looked up (default: the inputs' git checkout)
    language: str = "auto"  # auto: .py files are mined for Triton kernels, the rest for CUDA ones
    # The whole-run record (extract/run_record.py): off for an output folder nobody extracts into again
    # (`mine`'s staging folders), whose records would only fill the cache.
    record: bool = True


@dataclass
class ExtractReport:
    kernels: list[dict[str, Any]] = field(default_factory=list)
    files: int = 0
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Notes (in `notes` too) that count what came from the caches: a cold run and a rerun differ in them, so
    # the run record (extract/run_record.py) leaves them out.
    cache_notes: list[str] = field(default_factory=list)
    parse_errors: int = 0  # parses that failed: never cached, tried again by a rerun, so the run is not recorded
