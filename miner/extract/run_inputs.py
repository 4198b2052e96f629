"""What an `extract` run reads, as one key (miner/extract/run_record.py records it): the content hash of every
file under every folder the run may read, the git state of each checkout met, the folders above, the options
and the environment the stages consult. Content hashes come from a previous record where a file's stat is the
recorded one and its last change lies more than `RACY_NS` before that stat was taken (git's racy-clean rule).
"""

from __future__ import annotations

import hashlib
import os
import stat as stat_mod
import sys
from pathlib import Path
from typing import Any

from miner.source.checkout import project_root

RACY_NS = 2_000_000_000

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


class Hashes:
    """Content hashes by path; a previous record's hash is taken where the stat is the same and the file's last
    change lies more than RACY_NS before that record's stat."""

    def __init__(self, prev: dict[str, list[Any]], prev_at: int) -> None:
        self.prev, self.trusted_before = prev, prev_at - RACY_NS
        self.now: dict[str, list[Any]] = {}
        self.hashed = 0
        self._links: dict[tuple[int, ...], str] = {}  # one hash per inode: a batch's library is hard-linked per unit

    def digest(self, path: str, st: os.stat_result, key: str | None = None) -> str:
        """`path`'s hash (`key`: its name in the record, the path itself by default)."""
        key = path if key is None else key
        sig = _sig(st)
        old = self.prev.get(key)
        inode = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if old is not None and old[:-1] == sig and max(st.st_mtime_ns, st.st_ctime_ns) < self.trusted_before:
            h = old[-1]
        elif (h := self._links.get(inode)) is None:
            h = _sha_file(path)
            self.hashed += 1
        self._links[inode] = h
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


def walk(root: str, hashes: Hashes, skip: set[str], out: list[Any]) -> None:
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




def _stat_or_none(path: str | None) -> list[Any] | None:
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ino]


def environment() -> list[Any]:
    """The environment the stages consult, by value (variables) or by stat (tools, toolkit headers, packages)."""
    import importlib.util
    import shutil

    env = [[k, os.environ.get(k)] for k in _ENV_VARS]
    env += sorted([k, v] for k, v in os.environ.items() if k.startswith("KM_") and k != "KM_RUN_RECORD")
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


def options(opts: Any) -> list[Any]:
    real = os.path.realpath
    return [list(opts.paths), [real(p) for p in opts.paths], list(opts.include_dirs),
            [real(d) for d in opts.include_dirs], list(opts.defines), opts.compile_commands,
            real(opts.compile_commands) if opts.compile_commands else None, opts.frontend, opts.units,
            opts.project, real(opts.project) if opts.project else None, opts.language]


def roots(opts: Any) -> list[str]:
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


def above(roots: list[str]) -> list[Any]:
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
