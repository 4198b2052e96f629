"""The frameworks whose headers CUDA sources include but the parse and the units never see (PyTorch, TensorFlow):
for each, the parse shim that stands for its headers, the headers it stands for, and the unit shim whose
definitions a unit inlines when its closure names one of the framework's names.

    torch  ATen/c10/torch/THC headers     shims/km_torch_parse.h (and shims/ATen/..., ...)  unit/km_torch_unit.h
    tf     tensorflow/, tsl/, Eigen's      shims/km_tf_parse.h                               unit/km_tf_unit.h
           unsupported/Eigen/CXX11, third_party/eigen3/

A framework header a source includes that the shims lack gets a stand-in that includes the framework's parse
shim (config.framework_overlay), so the parse goes on past it. Without libclang: render reads the unit shims too.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from miner import lazy_re
from miner.frontends.config import stub_dir

_STRING_OR_COMMENT = lazy_re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)
_IDENT = lazy_re.compile(r"\b[A-Za-z_]\w*\b")


@dataclass(frozen=True)
class Framework:
    name: str
    parse_shim: str  # under shims/
    shim_dirs: tuple[str, ...]  # top folders under shims/ whose headers are this framework's
    unit_shim: str  # under unit/
    # `#include` paths of the framework's headers (group 1: the path)
    include: re.Pattern[bytes]
    # A name of the unit shim's macros that another framework or a project may use for its own meaning
    # (`CUDA_1D_KERNEL_LOOP` is MMCV's too): counted only in a translation unit that included this parse shim.
    macros_need_parse: bool = False

    def stand_in(self) -> str:
        return (f"/* kernel-miner parse stand-in: a {self.name} header the parse shims do not model. */\n"
                f"#include <{self.parse_shim}>\n")


TORCH = Framework("torch", "km_torch_parse.h", ("ATen", "c10", "torch", "THC"), "km_torch_unit.h",
                  lazy_re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]((?:ATen|c10|torch|THC)/[\w./-]+)[>"]', re.M))
TF = Framework("tf", "km_tf_parse.h", (), "km_tf_unit.h",
               lazy_re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]((?:tensorflow/(?:core|stream_executor|compiler)|tsl'
                          rb'|third_party/eigen3|unsupported/Eigen/CXX11)/[\w./-]+)[>"]', re.M),
               macros_need_parse=True)
FRAMEWORKS: tuple[Framework, ...] = (TORCH, TF)
BY_NAME = {f.name: f for f in FRAMEWORKS}


def of_shim(rel: str | None) -> Framework | None:
    """The framework a parse shim (its path relative to shims/) stands for, else None (a toolkit header's)."""
    if rel is None:
        return None
    top = rel.split("/", 1)[0]
    return next((f for f in FRAMEWORKS if rel == f.parse_shim or top in f.shim_dirs), None)


@functools.cache
def unit_text(name: str) -> str:
    return (stub_dir() / "unit" / BY_NAME[name].unit_shim).read_text(encoding="utf-8")


@functools.cache
def unit_macros(name: str) -> frozenset[str]:
    """The framework macros a unit shim defines (its own KM_ helpers left out)."""
    return frozenset(n for n in re.findall(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", unit_text(name), re.M)
                     if not n.startswith("KM_"))


@functools.cache
def unit_names(name: str) -> frozenset[str]:
    """Identifiers a unit shim declares or mentions, comments left out."""
    return frozenset(_IDENT.findall(_STRING_OR_COMMENT.sub(" ", unit_text(name))))


@functools.cache
def unit_namespaces(name: str) -> frozenset[tuple[str, ...]]:
    """The namespace chains a unit shim opens (`("at",)`, `("at", "cuda", "detail")`), comments left out."""
    text = _STRING_OR_COMMENT.sub(" ", unit_text(name))
    stack: list[str | None] = []  # one entry per open brace: the namespace it opens, or None
    out: set[tuple[str, ...]] = set()
    for m in re.finditer(r"\bnamespace\s+(\w+)\s*\{|\{|\}", text):
        if m.group(1):
            stack.append(m.group(1))
            out.add(tuple(n for n in stack if n is not None))
        elif m.group(0) == "{":
            stack.append(None)
        elif stack:
            stack.pop()
    return frozenset(out)
