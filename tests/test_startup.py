"""What every `python -m miner` start pays: no regular expression compiled at import, the build stage not
loaded by a run that does not build, compiled templates kept, the code id read without walking bytecode."""

from __future__ import annotations

import json
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

from miner import lazy_re
from tests.conftest import ROOT

# Imports every command's modules and the extract stages, and counts the patterns `re` compiled for modules of
# miner/ meanwhile (a compile is `re._compile` missing its cache; a lazy pattern compiles nothing until it is used).
_COUNT_COMPILES = r"""
import json, re, sys
compiled = []
orig = re._compile
def counting(pattern, flags):
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == re.__file__:
        frame = frame.f_back
    if isinstance(pattern, (str, bytes)) and frame is not None and "/miner/" in frame.f_code.co_filename:
        compiled.append(frame.f_code.co_filename)
    return orig(pattern, flags)
re._compile = counting
import miner.commands.extract, miner.extract.stages, miner.extract.parse, miner.units.analysis  # noqa: E401
import importlib, miner.builder.driver, miner.cli  # noqa: E401
for name in miner.cli.COMMANDS:  # every command's modules (`import` is a keyword: by name)
    importlib.import_module(f"miner.commands.{name}")
print(json.dumps({"compiled": compiled, "modules": sorted(m for m in sys.modules if m.startswith("miner."))}))
"""


def _child(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_importing_the_stages_compiles_no_pattern() -> None:
    """~360 module-level patterns were compiled at every start (about 0.1 s); now at their first use."""
    found = _child(_COUNT_COMPILES)
    assert len(found["modules"]) > 150  # the stages were imported
    assert found["compiled"] == []


def test_a_run_that_does_not_build_does_not_load_the_build_stage() -> None:
    """`units.closure.text` reads `builder.diagnostics`; the package's other modules stay unloaded (PEP 562)."""
    code = ("import json, sys\nimport miner.commands.extract, miner.extract.stages, miner.units.analysis\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('miner.builder'))))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)
    loaded = set(json.loads(proc.stdout.splitlines()[-1]))
    assert "miner.builder.diagnostics" in loaded
    assert not loaded & {"miner.builder.driver", "miner.builder.scheduler", "miner.builder.batch",
                         "miner.builder.unit_split", "miner.builder.single"}, loaded


def test_the_build_stage_public_names_all_load() -> None:
    import miner.builder as builder

    for name in builder.__all__:
        assert getattr(builder, name) is not None, name
    with pytest.raises(AttributeError):
        builder.no_such_name  # noqa: B018


@pytest.mark.parametrize("pattern,flags,text", [
    (r"(?P<a>\w+)\s*=\s*(\d+)", 0, "x = 1, yy=22"),
    (rb"^[ \t]*#[ \t]*define[ \t]+(\w+)", re.M, b"int a;\n  # define FOO 1\n#define BAR\n"),
    (r"abc", re.I, "xABCx abc"),
])
def test_a_lazy_pattern_answers_as_the_compiled_one(pattern: str | bytes, flags: int, text: str | bytes) -> None:
    lazy, real = lazy_re.compile(pattern, flags), re.compile(pattern, flags)
    assert lazy.pattern == real.pattern
    assert "_compiled" not in vars(lazy)  # nothing compiled yet
    assert lazy.search(text).span() == real.search(text).span()
    assert [m.groups() for m in lazy.finditer(text)] == [m.groups() for m in real.finditer(text)]
    assert lazy.findall(text) == real.findall(text)
    assert lazy.split(text) == real.split(text)
    assert lazy.flags == real.flags and lazy.groups == real.groups and lazy.groupindex == real.groupindex
    assert lazy.compiled() is vars(lazy)["_compiled"]
    assert pickle.loads(pickle.dumps(lazy)).findall(text) == real.findall(text)


def test_compiled_templates_do_not_change_the_templates_id(tmp_path: Path) -> None:
    """jinja's compiled templates are written under templates/__pycache__ by the run itself; the id of the
    templates (part of a kernel folder's cache key) must not change with them, else every rerun renders again."""
    code = ("import json\nfrom miner.extract.cache import _templates_id\nfrom miner.resources import template_env\n"
            "before = _templates_id.__wrapped__()\nenv = template_env()\n"
            "[env.get_template(n) for n in ('unit.cu.j2', 'host_wrapper.cu.j2')]\n"
            "print(json.dumps([before, _templates_id.__wrapped__(), env.bytecode_cache is not None]))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False, env={**_env_writing_bytecode()})
    assert proc.returncode == 0, proc.stderr
    before, after, cached = json.loads(proc.stdout.splitlines()[-1])
    folder = ROOT / "templates" / "__pycache__" / "jinja2"
    if cached:
        assert any(folder.glob("__jinja2_*.cache"))
    assert before == after


def _env_writing_bytecode() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env
