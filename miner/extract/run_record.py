"""A whole `extract` run recorded by everything it depends on: an unchanged rerun into the same folder checks
its outputs and returns, without discovering, parsing or rendering anything (docs/scale.md, "The whole-run
record").

The key: the options but -j, the output folder, the environment the stages consult (variables; the tools on
PATH, the toolkit's version headers and libclang / tree-sitter / jinja2 by stat; Python), and the content hash
of every file under every folder the run may read (the inputs, the project root the stages use, the -I
folders, compile_commands.json, the miner's package, templates/ and metadata/), with the git state of every
checkout met and the `.git` / `.gitmodules` of the folders above. The outputs: every file extract writes in
each reported kernel's folder (`written`) and index.jsonl by content hash, the `vendor/` copies by presence.
A rerun with the same key and the same outputs returns the recorded report; anything else runs the stages
and records again. A file whose stat (size, mtime, ctime, inode, device, mode) is the recorded one, and whose
last change lies more than `RACY_NS` before that stat was taken, keeps its recorded hash (git's racy-clean
rule). Runs with failures or failed parses are not recorded. Records live in the parse cache's folder
(`runs/`), never in the dataset; `KM_PARSE_CACHE=off` or `KM_RUN_RECORD=off` turns them off.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat as stat_mod
import sys
import time
from pathlib import Path
from typing import Any

from miner.dataset import atomic

FORMAT = 1
ENV = "KM_RUN_RECORD"
RACY_NS = 2_000_000_000
INDEX = "index.jsonl"
LOCK = ".index.lock"
# What the stages read from the environment (os.environ in source/, frontends/, builder/toolchain, the tools
# found on PATH); every KM_* variable is added.
_ENV_VARS = ("PATH", "HOME", "XDG_CACHE_HOME", "CUDA_HOME", "CUDA_PATH", "ROCM_PATH", "HIP_PATH", "CPATH",
             "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "LD_LIBRARY_PATH", "PYTHONPATH")
_TOOLS = ("nvcc", "gcc", "cc", "g++", "c++", "git", "hipcc")
_TOOLKIT_FILES = ("version.json", "include", "include/cuda.h", "include/cuda_runtime_api.h", "include/cccl",
                  "include/cuda/std/__cccl/version.h", "include/cub/version.cuh", "include/thrust/version.h")
_PACKAGES = ("clang", "tree_sitter", "tree_sitter_cuda", "jinja2")
_SKIP_NAMES = frozenset({"__pycache__"})  # bytecode: no stage reads it, and Python rewrites it at will


def _sig(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, st.st_mode]


def _sha_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


class _Hashes:
    """Content hashes by path; a previous record's hash is taken where the stat is the same and the file's last
    change lies more than RACY_NS before that record's stat."""

    def __init__(self, prev: dict[str, list[Any]], prev_at: int) -> None:
        self.prev, self.trusted_before = prev, prev_at - RACY_NS
        self.now: dict[str, list[Any]] = {}
        self.hashed = 0

    def digest(self, path: str, st: os.stat_result, key: str | None = None) -> str:
        """`path`'s hash (`key`: its name in the record, the path itself by default)."""
        key = path if key is None else key
        sig = _sig(st)
        old = self.prev.get(key)
        if old is not None and old[:-1] == sig and max(st.st_mtime_ns, st.st_ctime_ns) < self.trusted_before:
            h = old[-1]
        else:
            h = _sha_file(path)
            self.hashed += 1
        self.now[key] = [*sig, h]
        return h


def _git_state(dot_git: str) -> list[Any]:
    """What provenance asks git (HEAD's commit, remote, tracked files) as files: HEAD, the ref it names, and
    the stat of config, packed-refs and index, in the git dir and its common dir (a worktree's)."""
    out: list[Any] = []

    def read(p: str) -> str | None:
        try:
            with open(p, encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError:
            return None

    def sig(p: str) -> list[int] | None:
        try:
            return _sig(os.stat(p))
        except OSError:
            return None

    gitdir = dot_git
    if os.path.isfile(dot_git):  # a submodule's or a worktree's `gitdir: ...`
        text = read(dot_git) or ""
        out.append(text)
        if text.startswith("gitdir:"):
            gitdir = os.path.join(os.path.dirname(dot_git), text[len("gitdir:"):].strip())
    common = gitdir
    if (rel := read(os.path.join(gitdir, "commondir"))) is not None:
        common = os.path.join(gitdir, rel.strip())
    head = read(os.path.join(gitdir, "HEAD"))
    out.append(head)
    if head and head.startswith("ref:"):
        ref = head[4:].strip()
        out.append(read(os.path.join(gitdir, ref)) or read(os.path.join(common, ref)))
    for d in dict.fromkeys((gitdir, common)):
        out += [sig(os.path.join(d, n)) for n in ("config", "packed-refs", "index")]
    return out


def _walk(root: str, hashes: _Hashes, skip: set[str], out: list[Any]) -> None:
    """Every entry below `root` (links followed, loops cut) as [path, kind, what]: a file's content hash, a
    link's target, a checkout's git state."""
    try:
        st = os.stat(root)
    except OSError as exc:
        out.append([root, "missing", exc.errno])
        return
    if not stat_mod.S_ISDIR(st.st_mode):
        out.append([root, "file", hashes.digest(root, st)] if stat_mod.S_ISREG(st.st_mode)
                   else [root, "other", st.st_mode])
        return
    seen: set[tuple[int, int]] = {(st.st_dev, st.st_ino)}
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            out.append([d, "unlisted", exc.errno])
            continue
        for e in entries:
            path = e.path
            if e.name in _SKIP_NAMES or path in skip:
                continue
            if e.name == ".git":
                out.append([path, "git", _git_state(path)])
                continue
            try:
                if e.is_symlink():
                    out.append([path, "link", os.readlink(path)])
                st = e.stat()  # through links, as discover reads them
            except OSError as exc:
                out.append([path, "error", exc.errno])
                continue
            if stat_mod.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) in seen:
                    out.append([path, "loop", None])
                    continue
                seen.add((st.st_dev, st.st_ino))
                out.append([path, "dir", None])
                stack.append(path)
            elif stat_mod.S_ISREG(st.st_mode):
                try:
                    out.append([path, "file", hashes.digest(path, st)])
                except OSError as exc:
                    out.append([path, "error", exc.errno])
            else:
                out.append([path, "other", st.st_mode])


def project_root(path: str) -> str:
    """`miner.source.context.project_root` (that module brings the parser stack): the git checkout that holds
    `path`, else the folder of `path` (or `path` if it is one)."""
    start = path if os.path.isdir(path) else os.path.dirname(path)
    d = start
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return start
        d = parent


def _stat_or_none(path: str | None) -> list[Any] | None:
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ino]


def _environment() -> list[Any]:
    """The environment the stages consult, by value (variables) or by stat (tools, toolkit headers, packages)."""
    import importlib.util
    import shutil

    env = [[k, os.environ.get(k)] for k in _ENV_VARS]
    env += sorted([k, v] for k, v in os.environ.items() if k.startswith("KM_") and k != ENV)
    tools = {t: _stat_or_none(shutil.which(t)) for t in _TOOLS}
    toolkit = None
    if tools["nvcc"]:
        home = os.path.dirname(os.path.dirname(tools["nvcc"][0]))
        toolkit = [_stat_or_none(os.path.join(home, rel)) for rel in _TOOLKIT_FILES]
    packages = []
    for name in _PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        where = [] if spec is None else [spec.origin, *(spec.submodule_search_locations or [])]
        files = []
        for w in where:
            if w and os.path.isdir(w):  # a package: its folder's files, one level down (libclang's native/)
                for dp, dns, fns in os.walk(w):
                    dns[:] = [x for x in dns if x not in _SKIP_NAMES] if dp == w else []
                    files += [_stat_or_none(os.path.join(dp, f)) for f in sorted(fns)]
            else:
                files.append(_stat_or_none(w))
        packages.append([name, files])
    return [sys.version, sys.executable, env, tools, toolkit, packages]


def _options(opts: Any) -> list[Any]:
    real = os.path.realpath
    return [list(opts.paths), [real(p) for p in opts.paths], list(opts.include_dirs),
            [real(d) for d in opts.include_dirs], list(opts.defines), opts.compile_commands,
            real(opts.compile_commands) if opts.compile_commands else None, opts.frontend, opts.units,
            opts.project, real(opts.project) if opts.project else None, opts.language]


def _roots(opts: Any) -> list[str]:
    """The folders (and files) the run may read, none inside another."""
    from miner.resources import data_dir

    real = os.path.realpath
    inputs = [real(p) for p in opts.paths]
    roots = {*inputs, *(project_root(p) for p in inputs if os.path.exists(p)),
             *(real(d) for d in opts.include_dirs)}
    if opts.project:
        roots.add(real(opts.project))
    if opts.compile_commands:
        roots.add(real(opts.compile_commands))
    roots |= {str(Path(__file__).resolve().parents[1]), real(data_dir("templates")), real(data_dir("metadata"))}
    out: list[str] = []
    for r in sorted(roots):  # a parent sorts before its children
        if not any(r == o or r.startswith(o.rstrip(os.sep) + os.sep) for o in out):
            out.append(r)
    return out


def _above(roots: list[str]) -> list[Any]:
    """Each folder above a root: whether it holds `.git` (the checkout, provenance) or `.gitmodules` (whose
    submodule a vendored library is in), with the latter's stat."""
    out = []
    for d in sorted({p for r in roots for p in _parents(r)}):
        out.append([d, os.path.exists(os.path.join(d, ".git")), _stat_or_none(os.path.join(d, ".gitmodules"))])
    return out


def _parents(path: str) -> list[str]:
    out = []
    d = os.path.dirname(path)
    while True:
        out.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            return out
        d = parent


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


class RunRecord:
    """The record of one output folder and option set: `replay` (the unchanged rerun's report, or None), then
    `save(report)` after a run of the stages."""

    def __init__(self, opts: Any, out_dir: Path, path: Path) -> None:
        self.opts, self.out_dir, self.path = opts, out_dir, path
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
        self.hashes = _Hashes(self.prev.get("inputs", {}), self.prev.get("walked_at", 0))
        self.key = self._key()

    @classmethod
    def open(cls, opts: Any, out_dir: Path) -> RunRecord | None:
        if not getattr(opts, "record", True) or os.environ.get(ENV, "").lower() in ("off", "0", "no"):
            return None
        from miner.frontends.parse_cache import ParseCache

        cache = ParseCache.open()
        if cache is None:
            return None
        name = hashlib.sha256(json.dumps([FORMAT, os.path.realpath(out_dir), _options(opts)],
                                         separators=(",", ":")).encode()).hexdigest()
        return cls(opts, out_dir, cache.folder / "runs" / f"{name}.json")

    def _key(self) -> str:
        from miner.frontends.parse_cache import FORMAT as PARSE_FORMAT

        roots = _roots(self.opts)
        skip = {os.path.realpath(self.path.parent.parent)}  # the cache folder
        tree: list[Any] = []
        for r in roots:
            _walk(r, self.hashes, skip, tree)
        blob = json.dumps([FORMAT, PARSE_FORMAT, os.path.realpath(self.out_dir), _options(self.opts), roots,
                           _above(roots), _environment(), tree], separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()

    def replay(self) -> Any | None:
        """The recorded report when the key is the same and every output holds the recorded bytes; None
        otherwise (the stages run)."""
        prev = self.prev
        if not prev or prev.get("key") != self.key:
            return None
        checked_at = time.time_ns()
        outputs = _Hashes(prev.get("outputs", {}), prev.get("checked_at", 0))
        for rel, old in prev.get("outputs", {}).items():
            path = os.path.join(self.out_dir, rel)
            try:
                if outputs.digest(path, os.stat(path), rel) != old[-1]:
                    return None
            except OSError:
                return None
        if not all(os.path.isdir(os.path.join(self.out_dir, d)) for d in prev.get("dirs", [])):
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

    def save(self, report: Any) -> None:
        """Record a run of the stages (none that failed somewhere: a rerun must try again)."""
        if report.failures or getattr(report, "parse_errors", 0) or not report.kernels:
            self._forget()
            return
        checked_at = time.time_ns()
        rels: list[str] = [INDEX]
        dirs: list[str] = []
        for m in report.kernels:
            rels += [f"{m['id']}/{f}" for f in written(m)]
            dirs += _vendored(m)
        outputs = _Hashes({}, 0)
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
