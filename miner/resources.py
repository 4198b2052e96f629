"""Where templates/ and metadata/ live: the checkout's top-level folders, or the installed package;
and the one jinja2 environment every stage renders its templates with.

A source checkout keeps them beside `miner/` (the design card's layout); `pip install .` maps
them into `miner.templates` and `miner.metadata`. Running from a checkout must not need an install.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2


@functools.cache
def data_dir(name: str) -> Path:
    """`name` is "templates" or "metadata"."""
    checkout = Path(__file__).resolve().parents[1] / name
    if checkout.is_dir():
        return checkout
    return Path(str(resources.files(f"miner.{name}")))


def _tojson(value: Any, indent: int | None = None) -> str:
    # jinja's own tojson is HTML-safe (`data_ptr\u003cint\u003e()`), which only obscures C++ in a prompt;
    # the other templates put ids and C identifiers through it, where both spellings are the same bytes.
    return json.dumps(value, indent=indent, ensure_ascii=False)


def _bytecode_cache(root: Path) -> jinja2.BytecodeCache | None:
    """Compiled templates kept in `templates/__pycache__/jinja2`, as Python keeps a module's bytecode beside it:
    compiling `unit.cu.j2` and `host_wrapper.cu.j2` was ~60 ms of every run that renders a unit. jinja checks
    each entry against its template's source (checksum) and its own bytecode version, so an edited template is
    compiled again. None (compile every run, as before) where Python writes no bytecode
    (PYTHONDONTWRITEBYTECODE) or the folder cannot be written (an installed package on a read-only path)."""
    import jinja2

    if sys.dont_write_bytecode:
        return None
    folder = root / "__pycache__" / "jinja2"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(folder, os.W_OK):
        return None
    return jinja2.FileSystemBytecodeCache(str(folder))


@functools.cache
def template_env() -> jinja2.Environment:
    """Units, kernel wrappers and LLM prompts: templates are named relative to templates/
    (`unit.cu.j2`, `prompts/analysis.j2`)."""
    import jinja2  # here: a run that renders nothing (a cached rerun of extract) need not load it

    root = data_dir("templates")
    # The prompts include each other by names relative to prompts/ (`{% include "kernel_facts.j2" %}`),
    # and their text is versioned, so the loader searches there second rather than the includes changing.
    loader = jinja2.FileSystemLoader([str(root), str(root / "prompts")])
    # StrictUndefined: a typo in a template is an error, not a silently empty unit or prompt.
    env = jinja2.Environment(loader=loader, keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
                             autoescape=False, bytecode_cache=_bytecode_cache(root))
    env.filters["tojson"] = _tojson
    return env
