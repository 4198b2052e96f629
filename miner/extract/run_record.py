"""A whole `extract` run recorded by everything it depends on: an unchanged rerun into the same folder checks
its outputs and returns, without discovering, parsing or rendering anything (docs/scale.md, "The whole-run
record").

The key (`run_inputs`): the options but -j, the output folder, the environment the stages consult (variables;
the tools on PATH, the toolkit's version headers and libclang / tree-sitter / jinja2 by stat; Python), and the
content hash of every file under every folder the run may read (the inputs, the project root the stages use,
the -I folders, compile_commands.json, the miner's package, templates/ and metadata/), with the git state of
every checkout met and the `.git` / `.gitmodules` of the folders above. The outputs: every file extract writes in
each reported kernel's folder (`written`) and index.jsonl by content hash, the `vendor/` copies by presence.
A rerun with the same key and the same outputs returns the recorded report; anything else runs the stages
and records again. Hashes of files whose stat did not change are the recorded ones (`run_inputs`). Runs with
failures or failed parses are not recorded. Records live in the parse cache's folder (`runs/`), never in the
dataset; `KM_PARSE_CACHE=off` or `KM_RUN_RECORD=off` turns them off.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from miner.dataset import atomic
from miner.extract import run_inputs

FORMAT = 1
ENV = "KM_RUN_RECORD"
INDEX = "index.jsonl"
LOCK = ".index.lock"


def written(meta: dict[str, Any]) -> list[str]:
    """The files extract writes in a kernel's folder, relative to it: its text and metadata, each
    instantiation's unit and host wrapper, a Triton kernel's reference test."""
    triton = meta.get("triton")
    out = ["kernel.py" if triton is not None else "kernel.cu", "metadata.json"]
    for inst in meta.get("instantiations") or []:
        out += [inst[k] for k in ("unit", "host_wrapper") if inst.get(k)]
    ref = (triton or {}).get("reference") or {}
    if ref.get("test"):
        out.append(ref["test"])
    return out


def _vendored(meta: dict[str, Any]) -> list[str]:
    """The dataset's `vendor/` folders the kernel's units include (`../vendor/glm-<hash>`)."""
    out = []
    for e in ((meta.get("closure") or {}).get("vendored") or []):
        d = e.get("include_dir", "")
        if d.startswith("../"):
            out.append(d[3:])
    return out


def _folder_files(out_dir: Path, kernel_id: str) -> list[str]:
    """Every file under a kernel's folder, relative to the dataset, sorted (hidden ones too)."""
    out = []
    top = os.path.join(out_dir, kernel_id)
    for dp, dns, fns in os.walk(top):
        dns.sort()
        rel = os.path.relpath(dp, out_dir)
        out += [f"{rel}/{f}" for f in sorted(fns)]
    return out


class RunRecord:
    """The record of one output folder and option set: `replay` (the unchanged rerun's report, or None), then
    `save(report)` after a run of the stages.

    `extra` (JSON, `extract --build`: extract/build_record.py) joins the key and the record's name; a record
    with `whole_folders` checks every file under each kernel's folder, none missing and none added, instead of
    the files extract writes there (`written`)."""

    whole_folders = False

    def __init__(self, opts: Any, out_dir: Path, path: Path, extra: Any = None) -> None:
        self.opts, self.out_dir, self.path, self.extra = opts, out_dir, path, extra
        self.prev: dict[str, Any] = {}
        try:
            with open(path, encoding="utf-8") as fh:
                prev = json.load(fh)
            if isinstance(prev, dict) and prev.get("format") == FORMAT:
                self.prev = prev
        except (OSError, ValueError):
            pass
        # Taken before the walk: a file changed after this moment is hashed again next time.
        self.walked_at = time.time_ns()
        self.hashes = run_inputs.Hashes(self.prev.get("inputs", {}), self.prev.get("walked_at", 0))
        self.key = self._key()

    @classmethod
    def open(cls, opts: Any, out_dir: Path, extra: Any = None) -> RunRecord | None:
        if not getattr(opts, "record", True) or os.environ.get(ENV, "").lower() in ("off", "0", "no"):
            return None
        from miner.frontends.parse_cache import ParseCache

        cache = ParseCache.open()
        if cache is None:
            return None
        named = [FORMAT, os.path.realpath(out_dir), run_inputs.options(opts)]
        if extra is not None:
            named.append(extra)
        name = hashlib.sha256(json.dumps(named, separators=(",", ":")).encode()).hexdigest()
        return cls(opts, out_dir, cache.folder / "runs" / f"{name}.json", extra)

    def _key(self) -> str:
        from miner.frontends.parse_cache import FORMAT as PARSE_FORMAT

        roots = run_inputs.roots(self.opts)
        skip = {os.path.realpath(self.path.parent.parent)}  # the cache folder
        tree: list[Any] = []
        for r in roots:
            run_inputs.walk(r, self.hashes, skip, tree)
        parts = [FORMAT, PARSE_FORMAT, os.path.realpath(self.out_dir), run_inputs.options(self.opts), roots,
                 run_inputs.above(roots), run_inputs.environment(), tree]
        if self.extra is not None:
            parts.append(self.extra)
        blob = json.dumps(parts, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()

    def replay(self) -> Any | None:
        """The recorded report when the key is the same and every output holds the recorded bytes; None
        otherwise (the stages run)."""
        prev = self.prev
        if not prev or prev.get("key") != self.key:
            return None
        checked_at = time.time_ns()
        outputs = run_inputs.Hashes(prev.get("outputs", {}), prev.get("checked_at", 0))
        for rel, old in prev.get("outputs", {}).items():
            path = os.path.join(self.out_dir, rel)
            try:
                if outputs.digest(path, os.stat(path), rel) != old[-1]:
                    return None
            except OSError:
                return None
        if not all(os.path.isdir(os.path.join(self.out_dir, d)) for d in prev.get("dirs", [])):
            return None
        if self.whole_folders:  # nothing added either (a build removes a stale library or log)
            now = [INDEX] + [r for i in prev["report"]["ids"] for r in _folder_files(self.out_dir, i)]
            if sorted(now) != sorted(prev.get("outputs", {})):
                return None
        metas = self._kernels(prev["report"]["ids"])
        if metas is None:
            return None
        open(os.path.join(self.out_dir, LOCK), "a").close()  # as the index update leaves it
        if self.hashes.hashed or outputs.hashed:  # stats refreshed: the next rerun reads fewer files
            self._write({**prev, "inputs": self.hashes.now, "walked_at": self.walked_at,
                         "outputs": outputs.now, "checked_at": checked_at})
        from miner.extract.options import ExtractReport

        rep = prev["report"]
        return ExtractReport(kernels=metas, files=rep["files"], failures=[], notes=[
            *rep["notes"], f"unchanged since the last run into this folder: {len(metas)} kernel folders and the "
                           f"index checked, nothing parsed or rendered (run record {self.path})"])

    def _kernels(self, ids: list[str]) -> list[dict[str, Any]] | None:
        """The report's kernel metadata, in order, from index.jsonl (checked above: the run's own lines)."""
        want = set(ids)
        found: dict[str, dict[str, Any]] = {}
        try:
            with open(os.path.join(self.out_dir, INDEX), encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        m = json.loads(line)
                        if m.get("id") in want:
                            found[m["id"]] = m
        except (OSError, ValueError):
            return None
        return [found[i] for i in ids] if len(found) == len(want) else None

    def save(self, report: Any, **more: Any) -> None:
        """Record a run of the stages (none that failed somewhere: a rerun must try again); `more`: what a
        caller replays besides the report (extract --build: the build's summaries)."""
        if report.failures or getattr(report, "parse_errors", 0) or not report.kernels:
            self._forget()
            return
        checked_at = time.time_ns()
        rels: list[str] = [INDEX]
        dirs: list[str] = []
        for m in report.kernels:
            if self.whole_folders:
                rels += _folder_files(self.out_dir, m["id"])
            else:
                rels += [f"{m['id']}/{f}" for f in written(m)]
            dirs += _vendored(m)
        outputs = run_inputs.Hashes({}, 0)
        for rel in dict.fromkeys(rels):
            path = os.path.join(self.out_dir, rel)
            try:
                outputs.digest(path, os.stat(path), rel)
            except OSError:  # something the run should have written is not there: no record
                self._forget()
                return
        cache_notes = set(getattr(report, "cache_notes", ()))
        self._write({
            "format": FORMAT, "key": self.key, "walked_at": self.walked_at, "inputs": self.hashes.now,
            "checked_at": checked_at, "outputs": outputs.now,
            "dirs": sorted(set(dirs)),
            "report": {"files": report.files, "notes": [n for n in report.notes if n not in cache_notes],
                       "ids": [m["id"] for m in report.kernels]},
            **more,
        })

    def _write(self, record: dict[str, Any]) -> None:
        try:
            atomic.write_bytes(self.path, json.dumps(record, separators=(",", ":")).encode())
        except OSError:
            pass

    def _forget(self) -> None:
        try:
            self.path.unlink()
        except OSError:
            pass
