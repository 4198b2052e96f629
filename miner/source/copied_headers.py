"""Headers the build copies into a folder of another name: `#include "doca_gpunetio/doca_gpunetio_device.h"` where
the tree holds `doca-gpunetio/include/doca_gpunetio_device.h`, which the build copies (CMake `configure_file(...
COPYONLY)`, `file(COPY)`, a Makefile rule) into `<build>/include/.../doca_gpunetio/`.

No `-I` finds such an include, so the parse lost every declaration of the copied headers and the units named them
undefined (nccl's GIN kernels: `DOCA_GPUNETIO_VERBS_GPU_CODE_OPT_DEFAULT`). The miner does not run the build; it
finds, for each include the tree lacks whose path has a folder part (`P/rest`), the one project folder D that holds
`rest` for every such include under `P`, where the project's build files name `P`'s folder (so the copy is the
build's, not a guess from a file name). A folder of the user's cache then holds `P` as a link to D and joins the
include dirs: the parse reads the project's own files through it (their real paths, so units inline them as
project code).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import defaultdict
from collections.abc import Callable, Iterable

from miner import lazy_re
from miner.source.build_files import read_build_file
from miner.source.configured_headers import project_folders

_INCLUDE = lazy_re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
_SKIP_DIRS = {".git", "build", "node_modules", "__pycache__"}
_BUILD_FILES = ("CMakeLists.txt", "Makefile", "makefile", "GNUmakefile")
_MAX_FILES = 50000


def _tree(roots: Iterable[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Project files by name, and the build files' paths."""
    by_name: dict[str, list[str]] = defaultdict(list)
    builds: list[str] = []
    for d, names in project_folders(roots, _MAX_FILES, _SKIP_DIRS):
        for n in names:
            by_name[n].append(os.path.join(d, n))
            if n in _BUILD_FILES or n.endswith((".cmake", ".mk")):
                builds.append(os.path.join(d, n))
    return by_name, builds


def aliases(texts: dict[str, bytes], found: Callable[[str, str, bool], bool], roots: Iterable[str]) -> dict[str, str]:
    """Folder as the includes spell it (`doca_gpunetio`) -> the project folder whose files it names."""
    missing: dict[str, set[str]] = defaultdict(set)  # first folder part -> the rests spelled under it
    for path, data in texts.items():
        if b"include" not in data:
            continue
        for m in _INCLUDE.finditer(data.decode("utf-8", "replace")):
            name = m.group(2).strip()
            parts = name.split("/")
            if len(parts) < 2 or ".." in parts or parts[0] in ("", ".") or found(path, name, m.group(1) == '"'):
                continue
            missing[parts[0]].add("/".join(parts[1:]))
    if not missing:
        return {}
    by_name, builds = _tree(roots)
    scripts = None
    out: dict[str, str] = {}
    for prefix, rests in sorted(missing.items()):
        dirs: set[str] | None = None
        for rest in rests:
            cands = {p[: -len(rest) - 1] for p in by_name.get(os.path.basename(rest), [])
                     if p.endswith(os.sep + rest.replace("/", os.sep))}
            dirs = cands if dirs is None else dirs & cands
            if not dirs:
                break
        if not dirs or len(dirs) != 1:
            continue
        (folder,) = dirs
        if os.path.basename(folder) == prefix:
            continue  # (an -I the miner lacks, not a copy: include_graph's tail matching finds those)
        if scripts is None:
            scripts = "\n".join(_paths_written(_read(p)) for p in builds)
        if not re.search(rf"(?<=/){re.escape(prefix)}(?![\w.-])", scripts):
            # The build never writes that folder into a path (a copy's destination, `.../include/proj/P`): no
            # evidence of a copy. A library the build fetches or links (`FetchContent_Declare(fmt ...)`,
            # `fmt::fmt`, `<fmt/format.h>` in a comment) is named too, but its headers are no copy of the
            # project's (lmdeploy's `fmt/format.h` was read as its own `kernels/gemm/format.h`, an include cycle
            # that put a class before the variable template it reads).
            continue
        out[prefix] = folder
    return out


_COMMENT = lazy_re.compile(r"#[^\n]*")
_URL = lazy_re.compile(r"\S+://\S+")


def _paths_written(script: str) -> str:
    """A build file without its comments and URLs (a fetched library's repository is no folder of the tree)."""
    return _URL.sub(" ", _COMMENT.sub(" ", script))


def _read(path: str) -> str:
    return read_build_file(path, 1_000_000)


def write_links(found: dict[str, str]) -> str | None:
    """A cache folder holding each alias as a link to its project folder (named after the pairs, so parse-cache
    keys stay stable); None where nothing is to be written or it cannot be."""
    if not found:
        return None
    digest = hashlib.sha256(repr(sorted(found.items())).encode()).hexdigest()[:16]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "kernel-miner", "copied", digest)
    try:
        os.makedirs(folder, exist_ok=True)
        for alias, target in found.items():
            link = os.path.join(folder, alias)
            if os.path.islink(link) and os.readlink(link) == target:
                continue
            tmp = f"{link}.{os.getpid()}.tmp"
            os.symlink(target, tmp)
            os.replace(tmp, link)
    except OSError:
        return None
    return folder
