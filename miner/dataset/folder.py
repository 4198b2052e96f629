"""One kernel folder's layout: which file holds what. Every stage names these paths through here, so
the layout docs/ARCHITECTURE.md states ("Dataset layout") is spelled out once."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

METADATA = "metadata.json"
KERNEL_TEXT = "kernel.cu"
UNITS = "units"
UNIT_SOURCE = "unit.cu"
LIBRARY = "libunit.so"
TESTS = "tests"
ENRICH = "enrich"


def unit_rel(inst: dict[str, Any]) -> str:
    """An instantiation's unit relative to its kernel folder: as recorded, else where render puts it."""
    return inst.get("unit", f"{UNITS}/{inst.get('id')}/{UNIT_SOURCE}")


@dataclass(frozen=True)
class KernelFolder:
    path: Path

    @property
    def id(self) -> str:
        return self.path.name

    @property
    def metadata_path(self) -> Path:
        return self.path / METADATA

    @property
    def kernel_text(self) -> Path:
        return self.path / KERNEL_TEXT

    @property
    def tests_dir(self) -> Path:
        return self.path / TESTS

    @property
    def enrich_dir(self) -> Path:
        return self.path / ENRICH

    def metadata(self) -> dict[str, Any]:
        """The parsed metadata.json; OSError or ValueError (JSON, encoding) when unreadable."""
        return json.loads(self.metadata_path.read_text(encoding="utf-8"))

    def unit_path(self, inst: dict[str, Any]) -> Path:
        return self.path / unit_rel(inst)

    def library_beside(self, inst: dict[str, Any]) -> Path:
        """Where a unit built on demand (not by the build stage) leaves its library."""
        return self.unit_path(inst).with_name(LIBRARY)

    def unit_sources(self) -> list[Path]:
        """Every rendered CUDA unit, whether or not the metadata still names it."""
        return sorted(self.path.glob(f"{UNITS}/*/{UNIT_SOURCE}"))

    def test_files(self) -> list[Path]:
        return sorted(self.tests_dir.glob("test_*.py"))
