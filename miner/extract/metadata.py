"""A kernel's metadata before the units stage: source, signature, parse context, project build flags."""

from __future__ import annotations

import hashlib
import os
from typing import Any

from miner.dataset.schema import SCHEMA_VERSION
from miner.frontends import pch
from miner.frontends.config import ParseConfig
from miner.frontends.model import Kernel
from miner.source import build_flags, context, include_graph
from miner.source.discover import SourceFile
from miner.source.provenance import Origin


def _input_root(path: str, roots: list[str]) -> str:
    for r in sorted(roots, key=len, reverse=True):
        if path == r or path.startswith(r + os.sep):
            return r
    return os.path.dirname(path)


def _rel(path: str, root: str) -> str:
    return os.path.relpath(path, root) if path.startswith(root + os.sep) else path


def _rel_dir(path: str, root: str) -> str:
    """A dir relative to root, with `..` where it lies beside it; absolute only on another tree."""
    return os.path.relpath(path, root) if os.path.commonpath([path, root]) != os.sep else path


def _project_flags(files: list[SourceFile], graph: include_graph.IncludeGraph, per_file: dict[str, list[str]],
                   project: str | None, roots: list[str]) -> dict[str, dict[str, Any]]:
    """Per source file, the nvcc flags its project's build gives it (metadata `build_flags`): the build
    files above it, a compile_commands.json `-std` over theirs, else the dialect its own text (or a
    header it includes) needs. Files nothing is known for are left out."""
    own = {f.path for f in files if build_flags.source_std(f.data.decode("utf-8", "replace"))}
    torch = {f.path for f in files if pch.includes_torch(f.data)}
    out: dict[str, dict[str, Any]] = {}
    for f in files:
        # Build files are looked for up to the project: --project, else the git checkout, else the input
        # folder that holds the file (a setup.py beside src/ belongs to the sources under it).
        stop = project or context.project_root(f.path)
        if not project and not os.path.exists(os.path.join(stop, ".git")):
            stop = _input_root(f.path, roots)
        found = build_flags.find(f.path, stop)
        flags, used = (list(found["nvcc"]), list(found["from"])) if found else ([], [])
        if found is None and ({f.path} | graph.closure(f.path)) & torch:
            # A torch source whose build script lies outside what was mined (a project-level builder that
            # names `csrc/...` files): torch.utils.cpp_extension passes this flag to every extension it builds
            # (COMMON_NVCC_FLAGS), and it only lets more code compile. Torch's half defines are not assumed:
            # they change what code means, a CMake build with torch's package config does not pass them, and
            # extension builders often undo them.
            flags.append("--expt-relaxed-constexpr")
            used.append("source: includes torch")
        db_std = [a for a in per_file.get(f.path, []) if a.startswith("-std=")]
        if db_std:
            flags = build_flags.merge([*(x for x in flags if not x.startswith("-std=")),
                                       build_flags.normal(db_std[-1])])
            used.append("compile_commands.json")
        if not any(x.startswith("-std=") for x in flags) and ({f.path} | graph.closure(f.path)) & own:
            flags = [build_flags.std_flag(20), *flags]
            used.append("source")  # a requires clause, a concept, ... in the file or a header it includes
        if flags:
            out[f.path] = {"nvcc": flags, "from": used}
            if found and found.get("defines"):
                out[f.path]["defines"] = found["defines"]  # each project -D and the build file line that writes it
    return out


def _file_defines(config: ParseConfig, tu: str | None) -> list[str]:
    """-D flags a compile_commands.json entry gives the translation unit, and the feature switches its
    guarded explicit instantiations need (config.defines_of)."""
    args = config.per_file_args.get(tu or "", [])
    out = list(config.defines_of.get(tu or "", []))
    for i, a in enumerate(args):
        if a == "-D" and i + 1 < len(args):
            out.append(args[i + 1])
        elif a.startswith("-D") and len(a) > 2:
            out.append(a[2:])
    return out


def _reopened_namespaces(chain: list[str]) -> list[str]:
    """The kernel's namespace chain up to its last named one where an anonymous namespace comes before that
    (`namespace { namespace device {`), else []: anonymous namespaces at the end of the chain need no
    reopening (what they declare is visible from the named namespace around them)."""
    while chain and not chain[-1]:
        chain = chain[:-1]
    return list(chain) if "" in chain else []


def _metadata(k: Kernel, text: bytes, origin: Origin, kid: str, tu: str | None,
              config: ParseConfig) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "id": kid,
        "name": k.name,
        "qualified_name": k.qualified_name,
        "source": {
            "repo": origin.repo,
            "commit": origin.commit,
            "license": origin.license,
            "path": _rel(k.path, origin.root),
            "start_line": k.start_line,
            "end_line": k.end_line,
            "sha256": hashlib.sha256(text).hexdigest(),
        },
        "signature": k.signature,
        "params": [vars(p) for p in k.params],
        "template_params": [vars(t) for t in k.template_params],
        "attributes": [vars(a) for a in k.attributes],
        "is_specialization": k.is_specialization,
        **({"linkage": "C"} if k.c_linkage else {}),
        # Only where a named namespace is nested in an anonymous one (`namespace { namespace device {`): the
        # unit must reopen that chain for the kernel to see its neighbours; qualified_name has the named ones.
        **({"namespaces": ns} if (ns := _reopened_namespaces(k.namespaces)) else {}),
        "frontend": k.frontend,
        "diagnostics": {key: v for key, v in k.diagnostics.items() if not key.startswith("_")}
        if k.diagnostics else {"count": 0, "errors": 0, "messages": []},
        "parse_context": {
            "translation_unit": _rel(tu, origin.root) if tu else None,
            "defines": [f"__CUDA_ARCH__={config.cuda_arch}", "__NVCC__",
                        *dict.fromkeys([*config.defines, *_file_defines(config, tu), *k.defines])],
            # Every dir, also those outside the input root (a project's shared `Common/` beside the mined
            # subfolder, found through --project): verify compiles the original with them.
            "include_dirs": [_rel_dir(d, origin.root) for d in config.include_dirs_for(tu)],
            # Where source.path and the paths above are relative to, for `verify` to find the original.
            "root": origin.root,
        },
    }
