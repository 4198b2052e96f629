"""What a rerun of `extract` reuses besides the parse: each kernel's folder, by content.

A kernel folder (`kernel.cu`, `metadata.json`, and with units the instantiation plan, launch records,
closure summary, `unit.cu` and `host_wrapper.cu` from the jinja templates) is a pure function of the
kernel's metadata before the units stage, its text, the closure / launches / explicit instantiations
the parse found for it, and the miner's own code; the key covers exactly those. A hit gives back the
final metadata and every file's bytes (serialising the metadata with indentation alone cost a warm
MMCV run a second), which are written only where the bytes on disk differ: an unchanged tree costs
reads, not writes, and a unit.cu whose bytes did not change keeps its mtime, so a library built from
it is not taken for stale. Entries live in the parse cache's folder (`KM_PARSE_CACHE`): one switch
turns both off.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any

from miner import dataset
from miner.dataset import atomic
from miner.frontends import treesitter_frontend
from miner.frontends.model import Kernel
from miner.frontends.parse_cache import ParseCache
from miner.units import weak_args
from miner.units.mentions import Mentions
from miner.units.records import Analyses

KIND = "kernel folders"


@functools.cache
def _templates_id() -> str:
    """The unit templates live outside miner/ (a checkout's templates/), so the parse cache's code id
    misses them; a changed template must render again."""
    from miner.resources import data_dir

    h = hashlib.sha256()
    for p in sorted(data_dir("templates").rglob("*")):
        # not bytecode: Python's for an installed package's `__init__.py`, jinja's compiled templates
        # (resources.template_env), written by the run itself
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(p.relative_to(data_dir("templates")).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def _key(cache: ParseCache, meta: dict[str, Any], k: Kernel, text: bytes, data: Analyses, root: str,
         units: bool, mentions: Mentions | None) -> str:
    key = (k.path, k.start_offset)
    parts = [_templates_id() if units else "", root, units, meta, hashlib.sha256(text).hexdigest(), k.path,
             k.start_offset, k.start_line, k.name, k.frontend]
    if units:
        launches = data.launches.get(key, [])
        closure = data.closures.get(key)
        parts += [closure.to_dict() if closure is not None else None, [lc.to_dict() for lc in launches],
                  data.explicit.get(k.name, [])]
        if not launches and mentions is not None:  # launch_missing names where else the kernel is written
            uses = mentions.uses(k.name, (k.path, k.start_offset, k.end_offset), c_linkage=k.c_linkage)
            parts.append(uses)
            # (whether those are launches of another kernel of the name: launch_missing's other_definition)
            sites = weak_args.launch_sites(data, key) if uses else set()
            parts.append(weak_args.other_definition(uses, sites, mentions))
            parts.append([u for u in uses if mentions.namesake_call(k.name, *u)])  # (launch_missing's namesakes)
            parts.append((k.diagnostics or {}).get("_error_lines"))  # (units.unparsed_launchers)
            parts.append((k.diagnostics or {}).get("_skipped"))  # (launch_missing: configuration_skipped)
        elif mentions is not None:  # args_missing: whether the launching host templates are named anywhere
            parts.append(weak_args.launcher_uses(launches, mentions))
    return cache.entry_key(KIND, *parts)


def _unit_files(meta: dict[str, Any]) -> list[str]:
    """The files render wrote for this kernel, relative to its folder (every instantiation's unit and wrapper)."""
    return [rel for inst in meta.get("instantiations", []) for rel in (inst["unit"], inst["host_wrapper"])]


def write_kernel(cache: ParseCache | None, out_dir: Path, meta: dict[str, Any], k: Kernel, text: bytes,
                 data: Analyses, root: str, units: bool, mentions: Mentions | None = None) -> dict[str, Any]:
    """The kernel's folder (`assemble.attach` when `units`, then `kernel.cu` and `metadata.json`), or its
    recorded files when the inputs are the same; returns the final metadata."""
    done, key = from_cache(cache, out_dir, meta, k, text, data, root, units, mentions)
    if done is not None:
        return done
    return render_kernel(cache, key, out_dir, meta, k, text, data, root, units, mentions)


def from_cache(cache: ParseCache | None, out_dir: Path, meta: dict[str, Any], k: Kernel, text: bytes,
               data: Analyses, root: str, units: bool, mentions: Mentions | None = None
               ) -> tuple[dict[str, Any] | None, str]:
    """The kernel's folder written from the cache and its final metadata, or None (a miss: `render_kernel`
    with the key returned makes it)."""
    kdir = out_dir / meta["id"]
    key = _key(cache, meta, k, text, data, root, units, mentions) if cache is not None else ""
    hit = cache.load_entry(key, KIND) if cache is not None else None
    if isinstance(hit, dict) and "vendored" not in hit and (hit["meta"].get("closure") or {}).get("vendored"):
        hit = None  # an entry from before the libraries were recorded with it: written afresh, which copies them
    if isinstance(hit, dict):
        for rel, body in hit["files"].items():
            atomic.write_bytes_if_changed(kdir / rel, body)
        if hit.get("vendored"):
            # The dataset's copy of each vendored library the units #include (`../vendor/json-<hash>`): a new
            # output folder served from the cache needs it as much as one written afresh.
            from miner.units import vendor_copy

            for include_dir, parts in hit["vendored"]:
                vendor_copy.carry(str(out_dir), include_dir, list(parts))
        return hit["meta"], key
    return None, key


def render_kernel(cache: ParseCache | None, key: str, out_dir: Path, meta: dict[str, Any], k: Kernel, text: bytes,
                  data: Analyses, root: str, units: bool, mentions: Mentions | None = None) -> dict[str, Any]:
    """The kernel's folder made afresh (`key`: its cache key, `from_cache`'s), stored in the cache; the final
    metadata."""
    kdir = out_dir / meta["id"]
    if units:
        from miner.units import assemble  # only on a miss: it brings jinja2 and the templates

        assemble.attach(str(out_dir), meta, k, text.decode("utf-8", "replace"), data, root, mentions)
    files = {dataset.KERNEL_TEXT: text, dataset.METADATA: atomic.dumps(meta).encode("utf-8")}
    for rel, body in files.items():
        atomic.write_bytes_if_changed(kdir / rel, body)
    if cache is not None:
        try:  # read back what render just wrote: the cache needs no hook inside the units stage
            files.update({rel: (kdir / rel).read_bytes() for rel in _unit_files(meta)})
        except OSError:
            return meta
        unit = data.closures.get((k.path, k.start_offset)) if units else None
        vendored = [(e["include_dir"], list(e["parts"])) for e in (unit.vendored if unit is not None else [])
                    if not e.get("wheel")]  # (a wheel's library is not carried)
        cache.store_entry(key, {"meta": meta, "files": files, "vendored": vendored})
    return meta


def treesitter(cache: ParseCache | None, data: bytes, path: str) -> tuple[list[Kernel], int]:
    """`treesitter_frontend.parse_bytes` by the file's content: the pass over every kernel file is half a
    second of an MMCV rerun."""
    if cache is None:
        return treesitter_frontend.parse_bytes(data, path)
    key = cache.entry_key("tree-sitter", path, hashlib.sha256(data).hexdigest())
    hit = cache.load_entry(key, "tree-sitter")
    if isinstance(hit, tuple):
        return hit
    res = treesitter_frontend.parse_bytes(data, path)
    cache.store_entry(key, res)
    return res
