"""Generated instance files (tests/fixtures/instances): files that hold only an include and explicit
instantiations are grouped, one parse per group, the others' lines read as instantiation origins of that
parse. The result must be what a parse of every file gives: real libclang parses compared, units built."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, build_statuses, extract_and_build, load_dataset

INST = FIXTURES / "instances"


def test_instance_only_statements() -> None:
    from miner.extract.instances import instance_only
    from miner.units import macro_text

    macros = macro_text.every_definition((INST / "attn.cuh").read_text())
    assert instance_only('#include "a.cuh"\nDECL_ATTN_CASE(64, float);\n', macros)
    assert instance_only('#include "a.cuh"\n// c\nDECL_ATTN_CASES(half);\n/* x */\n', macros)
    assert instance_only('#include "a.cuh"\nextern template void f<int>(int *);\n', macros)
    assert not instance_only('#include "a.cuh"\n', macros)  # nothing instantiated
    assert not instance_only('#include "a.cuh"\ntemplate struct S<int>;\n', macros)  # class: its cursors count
    assert not instance_only('#include "a.cuh"\ntemplate <> void f<int>(int *) {}\n', macros)
    assert not instance_only('#define X 1\n#include "a.cuh"\nDECL_ATTN_CASE(64, float);\n', macros)
    assert not instance_only('#include "a.cuh"\nUNKNOWN_MACRO(64);\n', macros)
    # A macro one of whose definitions writes a definition: not only instantiations.
    braced = macro_text.every_definition("#if A\n#define M(T) template void f<T>(T *);\n#else\n"
                                         "#define M(T) void g(T *) {}\n#endif\n")
    assert not instance_only('#include "a.cuh"\nM(int);\n', braced)


def _graph_inputs():
    from miner.source import include_graph
    from miner.source.discover import discover

    disc = discover([str(INST)])
    graph = include_graph.build(disc.files, [])
    return disc.files, graph


def test_groups_by_folder_includes_and_flags() -> None:
    from miner.extract.instances import groups

    files, graph = _graph_inputs()
    data = {f.path: f.data for f in files}
    roots = sorted(p for p in data if p.endswith(".cu"))
    got = groups(roots, data, graph.closure, lambda r: ["-std=c++17"])
    gen = str((INST / "gen").resolve())
    assert got == {f"{gen}/attn-instance-d128-float.cu": [f"{gen}/attn-instance-d64-float.cu",
                                                           f"{gen}/attn-instance-double.cu"]}
    # Other parse flags for one file: it is parsed on its own.
    split = groups(roots, data, graph.closure,
                   lambda r: ["-DX"] if r.endswith("double.cu") else ["-std=c++17"])
    assert split == {f"{gen}/attn-instance-d128-float.cu": [f"{gen}/attn-instance-d64-float.cu"]}


def _extract(src: Path, out: Path, grouped: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[dict], list[str]]:
    from miner.extract import ExtractOptions, extract
    from miner.extract import instances as inst

    monkeypatch.setenv("KM_PARSE_CACHE", "off")
    if not grouped:
        monkeypatch.setattr(inst, "groups", lambda *a, **k: {})
    report = extract(ExtractOptions(paths=[str(src)], out_dir=str(out), jobs=1))
    monkeypatch.undo()
    return load_dataset(out), report.notes


def _without_origin_tu(metas: list[dict]) -> list[dict]:
    return [{**m, "instantiations": [{k: v for k, v in i.items() if k != "origin_tu"} for i in m["instantiations"]]}
            for m in metas]


def test_grouped_parse_equals_a_parse_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from miner.frontends import clang_frontend

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    src = tmp_path / "instances"
    shutil.copytree(INST, src)
    grouped, notes = _extract(src, tmp_path / "grouped", True, monkeypatch)
    separate, notes_separate = _extract(src, tmp_path / "separate", False, monkeypatch)
    assert any("2 generated instance files read as instantiation origins" in n for n in notes)
    assert not any("instance files" in n for n in notes_separate)
    # (`origin_tu` aside: a grouped instance file is read by the first file's parse, whose TU its instantiations
    # then name; parsed apart, each names its own file. Both include the same header the same way.)
    assert _without_origin_tu(grouped) == _without_origin_tu(separate)
    (kernel,) = grouped
    args = sorted((i["template_args"]["D"], i["template_args"]["T"]) for i in kernel["instantiations"])
    # Every instance file's configuration, those of the parsed file, of the grouped ones (through one
    # and two macros, and written directly) and of the files parsed on their own. (A file that writes
    # them only through a macro, without the word `template`, was skipped by the host-instantiation scan.)
    assert args == sorted([("128", "float"), ("64", "float"), ("32", "double"), ("256", "double"),
                           ("16", "double"), ("512", "float"), ("8", "float")])
    assert {i["origin"] for i in kernel["instantiations"]} == {"host_template"}
    units = {p.relative_to(tmp_path / "grouped"): p.read_bytes() for p in (tmp_path / "grouped").rglob("unit.cu")}
    assert units == {p.relative_to(tmp_path / "separate"): p.read_bytes()
                     for p in (tmp_path / "separate").rglob("unit.cu")}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_instance_units_build(tmp_path_factory: pytest.TempPathFactory) -> None:
    res = extract_and_build(tmp_path_factory, "instances")
    assert res["proc"].returncode == 0, res["proc"].stderr
    (meta,) = res["metas"]
    statuses = build_statuses(meta)
    assert len(statuses) == 7 and set(statuses.values()) == {"ok"}, statuses
