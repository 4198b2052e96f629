"""Dependency closure of a kernel, computed on the libclang AST of the unit that includes it.

Everything the kernel reaches in the repo's own files (functions, overloads of built-ins, types,
globals, macros) is collected as whole top-level pieces with their enclosing namespaces, then
emitted in original source order. Names declared by our parse stub are CUDA built-ins; names from
the torch shims are recorded as shims; toolkit and C++ headers stay as `#include`s.

Modules, one job each:
  context   the TU indexed: pieces by file and name, #defines in force, include order (`TUContext`)
  shims     which parse shim a declaration comes from, what a unit lacks of them, namespace chains
  compute   the walk from the kernel over the AST that collects its closure (`compute`)
  siblings  declarations one macro writes beside a kernel (host specializations that launch it)
  text      the closure as text (`render_pieces`), the `#include`s a unit keeps, unresolved names
  dropped   namespace-scope declarations the parse dropped (their text names a library it only stands in for)
  operators a type's `__device__` operators, which come with the type
  usings    the using-directives, using-declarations and namespace aliases a unit keeps
  macro_scope   where a #define is in force: the #undef that closes it, the definition at one place
  per_inclusion a header included once per macro value: its pieces written once per inclusion
"""

from miner.units.closure.compute import compute
from miner.units.closure.context import Closure, Macro, Piece, TUContext
from miner.units.closure.siblings import written_with
from miner.units.closure.text import render_pieces

__all__ = ["Closure", "Macro", "Piece", "TUContext", "compute", "render_pieces", "written_with"]
