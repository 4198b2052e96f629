"""TritonBench's and GEAK's record formats, in and out.

In: a `train_crawl.json`-style list (one object per crawled file, its Python source in `code`), or GEAK
JSONL (the code in `label`), mined as a source like files on disk: each record becomes a virtual file
`<list file>#<index>` whose kernels get folders, metadata and units as usual.

Out, per Triton kernel of a dataset:
- TritonBench record: `code` (the standalone unit: closure + kernel + launcher), `kernel_wrapper` (the
  launcher's source), `unitest_code` (the kernel's test, kept only if its output depends on the kernel),
  plus provenance and results;
- GEAK JSONL line: `instruction`, `label` (the unit), `file`, `target_kernel_name`, `test_code`,
  `pass_call`, `pass_exe`, `pass_perf`, `speedup`, `ms`, `efficiency`.
Both are checked against metadata/tritonbench.schema.json and metadata/geak.schema.json.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import Any

from miner import dataset, lazy_re
from miner.dataset import atomic, schema
from miner.errors import UsageError
from miner.source.provenance import Origin
from miner.triton import extract as triton_extract
from miner.triton.test_check import check_test_source

FORMATS = ("tritonbench", "geak")
_HEX = lazy_re.compile(r"^[0-9a-f]{40,64}$")


def read_records(path: str, fmt: str = "auto") -> tuple[str, list[dict[str, Any]]]:
    """(format, records) of a TritonBench JSON list or a GEAK JSONL file; one-line UsageError otherwise."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if fmt == "auto":
        fmt = "tritonbench" if text.lstrip().startswith("[") else "geak"
    if fmt == "tritonbench":
        try:
            records = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}: not JSON: line {exc.lineno}: {exc.msg}") from None
        if not isinstance(records, list):
            raise UsageError(f"{path}: a TritonBench file is a JSON list of records")
    elif fmt == "geak":
        records = []
        for i, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise UsageError(f"{path}:{i}: not a JSON line: {exc.msg}") from None
    else:
        raise UsageError(f"unknown format {fmt!r}: choose one of auto, {', '.join(FORMATS)}")
    key = "code" if fmt == "tritonbench" else "label"
    for i, r in enumerate(records):
        if not isinstance(r, dict) or not isinstance(r.get(key), str):
            raise UsageError(f"{path}: record {i} has no string `{key}`")
    return fmt, records


def import_records(path: str, out_dir: Path, fmt: str = "auto", units: bool = True) -> triton_extract.TritonReport:
    """Mine every record's code as a virtual file `<name>#<index>`; provenance from the record's fields."""
    fmt, records = read_records(path, fmt)
    real = os.path.realpath(path)
    key = "code" if fmt == "tritonbench" else "label"
    files, origins = [], {}
    for i, r in enumerate(records):
        vpath = f"{real}#{i}"
        files.append((vpath, r[key].encode("utf-8")))
        commit = r.get("commit") if isinstance(r.get("commit"), str) and _HEX.match(r.get("commit")) else None
        origins[vpath] = Origin(root=os.path.dirname(real), repo=_str(r.get("repo")), commit=commit,
                                license=_str(r.get("license")))
    return triton_extract.extract([], out_dir, units=units, project_root=os.path.dirname(real), files=files,
                                  roots=[os.path.dirname(real)], origin_for=origins.get)


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _read(kdir: Path, rel: str | None) -> str | None:
    if not rel:
        return None
    try:
        return (kdir / rel).read_text(encoding="utf-8")
    except OSError:
        return None


def _launcher_source(unit: str, name: str | None) -> str | None:
    """The source of function `name` (top-level or `Class.method`'s class) in the unit text."""
    if not name:
        return None
    top = name.split(".")[0]
    try:
        tree = ast.parse(unit)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == top:
            return ast.get_source_segment(unit, node)
    return None


def _test(kdir: Path, names: set[str]) -> tuple[str | None, str | None, str | None]:
    """(test code, its file, why it was rejected): the first test file whose output depends on the kernel."""
    why = None
    for f in sorted((kdir / "tests").glob("test_*.py")):
        code = f.read_text(encoding="utf-8", errors="replace")
        res = check_test_source(code, names)
        if res.ok:
            return code, f"tests/{f.name}", None
        why = f"tests/{f.name}: {res.message()}"
    return None, None, why


def _instruction(meta: dict[str, Any], kdir: Path) -> str:
    desc = _read(kdir, "enrich/description_instruct.md") or _read(kdir, "enrich/description.md")
    if desc:
        return desc.strip()
    params = ", ".join(p["name"] + (": tl.constexpr" if p["constexpr"] else "") for p in meta["triton"]["params"])
    return (f"Write a Triton kernel `{meta['name']}({params})`"
            + (f" and its Python launcher `{meta['instantiations'][0].get('python_launcher')}`"
               if meta.get("instantiations") and meta["instantiations"][0].get("python_launcher") else "")
            + ".")


def _results(meta: dict[str, Any]) -> dict[str, Any]:
    v = meta.get("validation") or {}
    bench = [b for b in v.get("bench") or [] if isinstance(b, dict)]
    ms = bench[0].get("kernel_ms") if bench else None
    ref_ms = bench[0].get("ref_ms") if bench else None
    return {"pass_call": bool(v.get("pass_call", (meta.get("build") or {}).get("pass_call", False))),
            "pass_exe": bool(v.get("pass_exe", False)), "pass_perf": v.get("pass_perf"),
            "speedup": v.get("speedup"), "ms": ms,
            "efficiency": round(ref_ms / ms, 4) if ms and ref_ms else None}


def export_records(ds: Path, fmt: str, out: str) -> tuple[int, int]:
    """Write the dataset's Triton kernels as TritonBench JSON or GEAK JSONL; returns (records, tests kept)."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    records, tests = [], 0
    for kdir in dataset.kernel_dirs(ds):
        meta = dataset.load_metadata(kdir)
        if meta.get("language") != "triton" or not meta.get("instantiations"):
            continue
        inst = meta["instantiations"][0]
        unit = _read(kdir, inst["unit"])
        if unit is None:
            continue
        launcher = inst.get("python_launcher")
        names = {meta["name"], *([launcher.split(".")[-1]] if launcher else [])}
        test, test_file, rejected = _test(kdir, names)
        tests += test is not None
        src = meta["source"]
        common = {"id": meta["id"], "repo": src["repo"], "commit": src["commit"], "license": src["license"],
                  "start_line": src["start_line"], "end_line": src["end_line"], **_results(meta)}
        if fmt == "tritonbench":
            rec = {"code": unit, "kernel_wrapper": _launcher_source(unit, launcher), "unitest_code": test,
                   "kernel_name": meta["name"], "kernel_code": _read(kdir, triton_extract.KERNEL_TEXT),
                   "file": src["path"], "test_file": test_file, "test_rejected": rejected, **common}
        else:
            rec = {"instruction": _instruction(meta, kdir), "label": unit, "file": src["path"],
                   "target_kernel_name": meta["name"], "test_code": test, "test_rejected": rejected, **common}
        errs = schema.errors(rec, fmt)
        if errs:
            raise ValueError(f"{meta['id']}: export does not match metadata/{fmt}.schema.json: {errs[0]}")
        records.append(rec)
    if fmt == "tritonbench":
        atomic.write_text(Path(out), json.dumps(records, indent=1, ensure_ascii=False) + "\n")
    else:
        atomic.write_text(Path(out), "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return len(records), tests
