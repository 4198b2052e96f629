"""Read kernel folders and keep the enrichment record of each kernel (enrich/record.json + metadata)."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miner import dataset
from miner.dataset.atomic import write_json

MAX_CODE_CHARS = 24_000


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class KernelInput:
    """What the prompts may see of one kernel: its code and the metadata recorded by earlier stages."""

    kid: str
    path: Path
    metadata: dict[str, Any]
    code: str
    code_source: str
    instantiations: list[dict[str, Any]] = field(default_factory=list)
    launches: list[Any] = field(default_factory=list)

    @property
    def enrich_dir(self) -> Path:
        return dataset.KernelFolder(self.path).enrich_dir

    def prompt_kernel(self) -> dict[str, Any]:
        md = self.metadata
        out = {"name": md.get("name", self.kid), "signature": md.get("signature", ""),
               "params": md.get("params", []), "template_params": md.get("template_params", [])}
        if md.get("language") == "triton":
            out["launcher"] = ((md.get("instantiations") or [{}])[0]).get("python_launcher")
        return out


def _pick_unit(folder: dataset.KernelFolder, insts: list[dict[str, Any]]) -> tuple[str, str] | None:
    # Prefer a unit that built: its code is known to be complete and compilable.
    ordered = sorted(insts, key=lambda i: (i.get("build") or {}).get("status") != "ok")
    for inst in ordered:
        unit = inst.get("unit")
        if unit and (folder.path / unit).is_file():
            return (folder.path / unit).read_text(encoding="utf-8", errors="replace"), unit
    for unit_cu in folder.unit_sources():
        return unit_cu.read_text(encoding="utf-8", errors="replace"), str(unit_cu.relative_to(folder.path))
    return None


def load_kernel(path: Path) -> KernelInput:
    """Raises ValueError with a one-line reason when the folder is not a usable kernel folder."""
    folder = dataset.KernelFolder(path)
    try:
        metadata = folder.metadata()
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"unreadable metadata.json: {exc}") from exc
    if not isinstance(metadata, dict):
        raise ValueError("metadata.json is not an object")
    insts = [i for i in metadata.get("instantiations") or [] if isinstance(i, dict)]
    picked = _pick_unit(folder, insts)
    if picked is None:
        if not folder.kernel_text.is_file():
            raise ValueError("neither a unit nor kernel.cu")
        picked = (folder.kernel_text.read_text(encoding="utf-8", errors="replace"), dataset.KERNEL_TEXT)
    code, source = picked
    if len(code) > MAX_CODE_CHARS and folder.kernel_text.is_file():
        # The kernel itself matters most; a huge closure would crowd it out of the context window.
        kernel_text = folder.kernel_text.read_text(encoding="utf-8", errors="replace")
        code = kernel_text[:MAX_CODE_CHARS]
        source = "kernel.cu (unit too long)"
    summary = [{"id": i.get("id", "default"), "template_args": i.get("template_args", []),
                "params": [{k: p.get(k) for k in ("name", "type", "ctype")}
                           for p in (i.get("launcher") or {}).get("params", [])],
                "symbol": (i.get("launcher") or {}).get("symbol")} for i in insts]
    return KernelInput(kid=path.name, path=path, metadata=metadata, code=code, code_source=source,
                       instantiations=summary, launches=list(metadata.get("launches")
                                                      or (metadata.get("triton") or {}).get("launches") or [])[:8])


class Record:
    """enrich/record.json: the status of each stage, saved after every change so a kill loses nothing."""

    def __init__(self, kernel_dir: Path) -> None:
        self.path = dataset.KernelFolder(kernel_dir).enrich_dir / "record.json"
        self.kernel_dir = kernel_dir
        try:
            self.data: dict[str, Any] = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            self.data = {}
        self.data.setdefault("kernel", kernel_dir.name)
        self.data.setdefault("stages", {})

    def stage(self, name: str) -> dict[str, Any]:
        return self.data["stages"].get(name, {})

    def done(self, name: str) -> bool:
        return self.stage(name).get("status") in ("ok", "unverified")

    def set_stage(self, name: str, status: str, **info: Any) -> None:
        self.data["stages"][name] = {"status": status, **info, "updated": now()}
        self.save()

    def save(self) -> None:
        write_json(self.path, self.data)
        self._update_metadata()

    def _update_metadata(self) -> None:
        summary = {name: {k: v for k, v in st.items() if k in ("status", "error", "prompt_version", "model",
                                                                "outcome", "blame", "attempts", "files",
                                                                "mutation")}
                   for name, st in self.data["stages"].items()}
        # The index line is refreshed by the pipeline now and then, not on every stage change.
        with contextlib.suppress(OSError, ValueError):
            dataset.update_many(self.kernel_dir.parent, {self.kernel_dir.name: {
                "enrichment": {"record": "enrich/record.json", "stages": summary}}}, index=False)
