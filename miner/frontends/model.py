"""Records passed between stages. Plain dataclasses: picklable for worker processes."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Param:
    name: str
    type: str
    pointer: bool
    const: bool
    restrict: bool


@dataclass
class TemplateParam:
    kind: str  # "type" | "value" | "template"
    name: str
    type: str | None
    default: str | None


@dataclass
class Attribute:
    name: str
    text: str


@dataclass
class Kernel:
    """One `__global__` definition, located by byte offsets in its file."""

    name: str
    qualified_name: str
    path: str  # absolute, resolved
    start_offset: int
    end_offset: int
    start_line: int
    end_line: int
    signature: str
    params: list[Param]
    template_params: list[TemplateParam]
    attributes: list[Attribute]
    is_specialization: bool
    frontend: str
    diagnostics: dict[str, Any] = field(default_factory=dict)
    name_offset: int = -1  # where clang locates the declaration (launch callees point here)
    defines: list[str] = field(default_factory=list)  # extra -D that made its #if branch active
    # `extern "C"` (alone, in a block, or from an earlier declaration): the symbol is the plain name, which
    # the unit must keep for its .entry to be the original's (code that loads kernels by name).
    c_linkage: bool = False
    # The enclosing namespaces, outermost first, "" for an anonymous one (qualified_name leaves those out, and
    # so keeps kernel ids stable): a unit reopens the same chain, or its kernel cannot see what the anonymous
    # namespace declares beside it.
    namespaces: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
