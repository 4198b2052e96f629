"""A kernel's rendered units, read and split along the renderer's km: markers into the includes a
batch hoists, the body it wraps in a namespace and the macros it restores after that body."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miner import lazy_re
from miner.source import build_flags

_INCLUDE = lazy_re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
_DEFINE = lazy_re.compile(r"^\s*#\s*(?:define|undef)\s+([A-Za-z_]\w*)", re.M)
_MARKS = {f"// km:{name}": name for name in ("includes-begin", "includes-end", "body-begin", "body-end")}


@dataclass
class Unit:
    """One instantiation's unit file, split along the renderer's km: markers."""

    kernel_id: str
    index: int          # position in metadata instantiations
    inst_id: str
    kernel_dir: Path
    rel: str            # unit path relative to the kernel folder
    symbol: str
    kernel_name: str
    text: str = ""
    includes: list[str] = field(default_factory=list)
    body: str = ""
    body_line: int = 1
    macros: list[str] = field(default_factory=list)
    batchable: bool = False
    c_symbols: list[str] = field(default_factory=list)  # `// km:c-symbols`: names it defines with C linkage
    local_headers: list[Path] = field(default_factory=list)
    key: str = ""
    # Set by the toolchain's prepare(): flags this unit's compile needs besides the build's (`-isystem` of a
    # CUDA library wheel's include dir), the headers found that way, and a header found nowhere.
    compile_flags: list[str] = field(default_factory=list)
    external: list[dict[str, str | None]] = field(default_factory=list)
    missing_header: str | None = None
    # The project's build flags for this kernel (metadata build_flags.nvcc, as applied): part of the
    # cache key and of the batch key, since one nvcc command line serves a whole batch.
    flags: list[str] = field(default_factory=list)
    # Headers of vendored libraries the unit includes (metadata closure.vendored); their copy in the
    # dataset is on compile_flags' include path, so no toolkit/wheel lookup is due.
    vendored: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return self.kernel_dir / self.rel

    @property
    def tag(self) -> str:
        return f"{self.kernel_id}/{self.rel}"


def split_unit(unit: Unit) -> None:
    """Fill includes/body/macros from the markers; units without them are compiled alone."""
    lines = unit.text.splitlines()
    marks: dict[str, int] = {}
    macros: list[str] = []
    for i, line in enumerate(lines):
        if "// km:" not in line:  # most lines: no marker to look for (a unit has hundreds of lines)
            continue
        s = line.strip()
        if s in _MARKS and _MARKS[s] not in marks:
            marks[_MARKS[s]] = i
        if s.startswith("// km:macros"):
            macros += s[len("// km:macros"):].split()
        elif s.startswith("// km:c-symbols"):
            unit.c_symbols += s[len("// km:c-symbols"):].split()
        elif s.startswith("// km:nvcc-flags"):
            # flags the unit itself needs (render: `-rdc=true -lcudadevrt` for a kernel that launches kernels)
            unit.flags += [f for f in s[len("// km:nvcc-flags"):].split() if f not in unit.flags]
    unit.local_headers = _local_headers(unit.path.parent, unit.text)
    if len(marks) != 4 or not (marks["includes-begin"] < marks["includes-end"] < marks["body-begin"]
                               < marks["body-end"]):
        return
    batchable = True
    includes: list[str] = []
    for line in lines[marks["includes-begin"] + 1:marks["includes-end"]]:
        s = line.strip()
        if not s or s.startswith("//"):
            continue
        m = _INCLUDE.match(s)
        if not m:
            if _DEFINE.match(s):
                includes.append(s)  # part of the batch key: only units with the same prelude share a batch
                continue
            batchable = False
            continue
        if m.group(1) == '"':
            local = (unit.path.parent / m.group(2)).resolve()
            if not local.is_file():
                batchable = False
                continue
            s = f'#include "{local}"'
        includes.append(s)
    body_lines = lines[marks["body-begin"] + 1:marks["body-end"]]
    for j, line in enumerate(body_lines):
        m = _INCLUDE.match(line)
        if m and m.group(1) == "<":
            # System headers inside a namespace break; their guards make hoisting them harmless.
            includes.append(line.strip())
            body_lines[j] = ""
        elif m:
            batchable = False
    unit.includes = includes
    unit.body = "\n".join(body_lines)
    unit.body_line = marks["body-begin"] + 2
    unit.macros = list(dict.fromkeys(macros + _DEFINE.findall(unit.body)))
    unit.batchable = batchable


def _local_headers(folder: Path, text: str, seen: set[Path] | None = None) -> list[Path]:
    """Quoted includes that resolve next to the unit, transitively: they are part of its content."""
    seen = set() if seen is None else seen
    out: list[Path] = []
    for line in text.splitlines():
        m = _INCLUDE.match(line)
        if not m or m.group(1) != '"':
            continue
        p = (folder / m.group(2)).resolve()
        if p in seen or not p.is_file():
            continue
        seen.add(p)
        out.append(p)
        try:
            out += _local_headers(p.parent, p.read_text(encoding="utf-8", errors="replace"), seen)
        except OSError:
            pass
    return out


def vendored_flags(kernel_dir: Path, meta: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(-isystem flags, headers) of the vendored libraries a kernel's units include (closure.vendored):
    the dataset's copy of each, found relative to the kernel's folder. A wheel's library (`wheel`: CUTLASS) has
    no copy: its headers are looked up as a CUDA library's are (miner.cuda_libs), and missing, say so."""
    flags: list[str] = []
    headers: list[str] = []
    for v in (meta.get("closure") or {}).get("vendored") or []:
        if v.get("wheel"):
            continue  # a wheel's header library (CUTLASS): found like a CUDA library's headers (Nvcc.prepare)
        d = str((kernel_dir / v["include_dir"]).resolve())
        if d not in flags:
            flags += ["-isystem", d]
        headers += v.get("headers") or []
    return flags, headers


def collect_units(kernel_dir: Path, meta: dict[str, Any]) -> tuple[list[Unit], dict[int, str]]:
    """Units to build, and {instantiation index: reason} for those that cannot be."""
    units: list[Unit] = []
    skipped: dict[int, str] = {}
    flags = build_flags.applied(list((meta.get("build_flags") or {}).get("nvcc") or []))
    vflags, vheaders = vendored_flags(kernel_dir, meta)
    for i, inst in enumerate(meta.get("instantiations") or []):
        rel = inst.get("unit")
        symbol = (inst.get("launcher") or {}).get("symbol") or ""
        if not rel:
            skipped[i] = "no unit was rendered for this instantiation"
            continue
        u = Unit(meta["id"], i, str(inst.get("id", i)), kernel_dir, rel, symbol, meta.get("name", ""),
                 flags=list(flags), compile_flags=list(vflags), vendored=list(vheaders))
        try:
            u.text = u.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            skipped[i] = f"cannot read {rel}: {getattr(exc, 'strerror', None) or exc}"
            continue
        split_unit(u)
        units.append(u)
    return units, skipped
