"""Extract speed mechanisms (tests/fixtures/speed): the precompiled prefix with an index that leaves
its declarations out of the walks, the prefix kept for parses with added defines, and the faster cursor
methods. Each must give the results of the plain way exactly: real libclang parses compared."""

from __future__ import annotations

import importlib
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, load_dataset, run_miner

SPEED = FIXTURES / "speed"


@pytest.fixture(scope="module")
def parse_setup(tmp_path_factory: pytest.TempPathFactory):
    from miner.frontends import clang_frontend, pch
    from miner.frontends.config import ParseConfig

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    inputs = {str(p.resolve()) for p in SPEED.rglob("*") if p.suffix in (".cu", ".cuh")}
    plain = ParseConfig(include_dirs=[str((SPEED / "include").resolve())])
    path = pch.build(plain, str(tmp_path_factory.mktemp("pch")))
    assert path
    tus = frozenset(p for p in inputs if p.endswith(".cu"))
    fast = replace(plain, torch_pch=path, torch_tus=tus)
    return plain, fast, inputs


def _summary(res) -> dict:
    """Everything a parse hands to the rest of the pipeline."""
    return {
        "kernels": [(k.qualified_name, k.path, k.start_offset, k.end_offset, k.signature,
                     [vars(p) for p in k.params], [vars(t) for t in k.template_params], k.is_specialization,
                     k.diagnostics) for k in res.kernels],
        "analysis": res.analysis, "seen": sorted(res.seen_files), "error": res.error, "unit_error": res.unit_error,
    }


@pytest.mark.parametrize("tu", ["speed_ops.cu", "speed_rows.cu"])
def test_prefix_parse_with_local_index_equals_plain_parse(parse_setup, tu: str) -> None:
    from miner.frontends import clang_frontend
    from miner.units.analysis import analyse

    plain, fast, inputs = parse_setup
    path = str((SPEED / "ops" / tu).resolve())
    assert "-include-pch" in clang_frontend.clang_args(fast, path)
    a = clang_frontend.parse(path, plain, inputs, analyse=analyse)
    b = clang_frontend.parse(path, fast, inputs, analyse=analyse)
    assert a.kernels and a.analysis["launches"] and not a.error
    assert _summary(a) == _summary(b)
    if tu == "speed_ops.cu":
        names = {k.qualified_name for k in b.kernels}
        assert {"km_speed::scale_kernel", "fill_kernel", "square_kernel", "shift_kernel", "plain_c_kernel",
                "braced_c_kernel"} <= names
        # One fill_kernel template and one explicit specialization: no implicit instantiation listed.
        assert sorted(k.is_specialization for k in b.kernels if k.name == "fill_kernel") == [False, True]
        assert b.analysis["explicit"].get("square_kernel") == [["float"]]


def test_local_index_lists_only_the_file_own_declarations(parse_setup) -> None:
    """Through the prefix, the held top-level list has none of the prefix's declarations and no
    instantiated function definitions, where the ordinary index lists the whole C++ library."""
    import clang.cindex as ci

    from miner.frontends import cindex_speed, clang_frontend

    plain, fast, _inputs = parse_setup
    path = str((SPEED / "ops" / "speed_ops.cu").resolve())
    args = clang_frontend.clang_args(fast, path)
    ordinary = ci.Index.create().parse(path, args=args, options=0x201)
    local = clang_frontend._local_index().parse(path, args=args, options=0x201)
    cindex_speed.hold_top_level(local, local_only=True)
    try:
        held = list(local.cursor.get_children())
        assert held is not list(local.cursor.get_children())  # a fresh iterator over the same list
        assert [c.hash for c in held] == [c.hash for c in local.cursor.get_children()]
    finally:
        cindex_speed.release(local)
    everything = list(ordinary.cursor.get_children())
    assert len(held) * 20 < len(everything)

    def own(cursors):
        return [(c.kind.name, c.location.file.name, c.location.offset) for c in cursors
                if c.location.file is not None and c.location.file.name.startswith(str(SPEED.resolve()))
                and not c.kind.is_preprocessing()]

    assert own(held) == own(everything)


def test_added_defines_keep_the_prefix_unless_a_prefix_file_names_them(parse_setup) -> None:
    from miner.frontends import clang_frontend, pch
    from miner.units.analysis import analyse

    plain, fast, inputs = parse_setup
    hip = pch.with_defines(fast, ["KM_SPEED_WITH_HIP"])
    assert hip.torch_pch == fast.torch_pch and hip.defines == ["KM_SPEED_WITH_HIP"]
    # The parse stub tests __CUDACC__: a prefix built without it would not be the same prefix.
    assert pch.with_defines(fast, ["__CUDACC__=1"]).torch_pch is None
    assert pch.with_defines(plain, ["KM_SPEED_WITH_HIP"]).torch_pch is None
    path = str((SPEED / "ops" / "speed_rows.cu").resolve())
    a = clang_frontend.parse(path, replace(plain, defines=["KM_SPEED_WITH_HIP"]), inputs, analyse=analyse)
    b = clang_frontend.parse(path, hip, inputs, analyse=analyse)
    assert _summary(a) == _summary(b)
    (row_sum,) = [k for k in b.kernels if k.name == "row_sum_kernel"]
    (closure,) = [c for key, c in b.analysis["closures"] if key == [row_sum.path, row_sum.start_offset]]
    assert "__shfl_down(v, d)" in repr(closure)  # the HIP branch's macro


def test_faster_cursor_methods_match_the_bindings(parse_setup) -> None:
    import clang.cindex as ci

    from miner.frontends import cindex_speed, clang_frontend

    plain, _fast, _inputs = parse_setup
    path = str((SPEED / "ops" / "speed_ops.cu").resolve())
    tu = ci.Index.create().parse(path, args=clang_frontend.clang_args(plain, path), options=0x201)
    cindex_speed.hold_top_level(tu)  # the file table too, as a parse holds it
    orig = cindex_speed.ORIGINAL
    mine = [c for c in tu.cursor.get_children()
            if c.location.file is not None and c.location.file.name.startswith(str(SPEED.resolve()))]
    assert mine
    for top in mine:
        fast_walk = list(top.walk_preorder())
        slow_walk = list(orig["walk_preorder"](top))
        assert [c.hash for c in fast_walk] == [c.hash for c in slow_walk]
        for c in fast_walk:
            assert c.kind == orig["kind"].fget(c)
            assert [x.hash for x in c.get_children()] == [x.hash for x in orig["get_children"](c)]
            if c.location.file is not None:
                assert c.location.file.name == orig["file_name"].fget(c.location.file)
            for loc, fresh in ((c.location, ci.conf.lib.clang_getCursorLocation(c)),
                               (c.extent.start, orig["range_start"].fget(c.extent)),
                               (c.extent.end, orig["range_end"].fget(c.extent))):
                want = orig["loc_file"].fget(fresh)  # a new location: the bindings' own path
                got = loc.file
                assert (got is None) == (want is None) and (got is None or got.name == want.name)
                assert loc.offset == orig["loc_offset"].fget(fresh)
    cindex_speed.release(tu)


def test_extract_of_the_fixture_uses_the_prefix_and_finds_every_launch(tmp_path: Path) -> None:
    from miner.frontends import clang_frontend

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    src = tmp_path / "speed"
    shutil.copytree(SPEED, src)
    proc = run_miner("extract", src, "-o", tmp_path / "out", "-j", "2",
                     env={"XDG_CACHE_HOME": str(tmp_path / "c"), "KM_PARSE_CACHE": "off"})
    assert proc.returncode == 0, proc.stderr
    metas = {m["qualified_name"] + ("@spec" if m["is_specialization"] else "")
             + ("@hip" if m.get("variant") else ""): m for m in load_dataset(tmp_path / "out")}
    assert {"km_speed::scale_kernel", "km_speed::row_sum_kernel", "fill_kernel", "fill_kernel@spec",
            "square_kernel", "shift_kernel", "plain_c_kernel", "braced_c_kernel"} <= set(metas)
    # The HIP configuration's parse (through the prefix) gives row_sum its HIP variant.
    assert metas["km_speed::row_sum_kernel@hip"]["variant"]["defines"] == ["KM_SPEED_WITH_HIP"]
    scale = metas["km_speed::scale_kernel"]
    assert [i["template_args"] for i in scale["instantiations"]] == [{"T": "float"}, {"T": "double"}]
    assert any(f.endswith("Scaler::apply") for f in scale["closure"]["functions"]), scale["closure"]


INSTANTIATE = FIXTURES / "speed_instantiate"


def _instantiate_setup():
    from miner.frontends import clang_frontend
    from miner.frontends.config import ParseConfig

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    inputs = {str(p.resolve()) for p in INSTANTIATE.iterdir() if p.suffix in (".cu", ".cuh")}
    return ParseConfig(include_dirs=[str(INSTANTIATE.resolve())]), inputs, str((INSTANTIATE / "tile_ops.cu").resolve())


def test_incomplete_parse_equals_the_complete_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the end-of-TU instantiations (CXTranslationUnit_Incomplete) the kernels, closures, launches
    and explicit instantiations are those of a parse that instantiates every specialization used."""
    from miner.frontends import clang_frontend
    from miner.units.analysis import analyse

    config, inputs, path = _instantiate_setup()
    assert clang_frontend._OPTIONS & clang_frontend.INCOMPLETE
    fast = clang_frontend.parse(path, config, inputs, analyse=analyse)
    monkeypatch.setattr(clang_frontend, "_OPTIONS", clang_frontend._OPTIONS & ~clang_frontend.INCOMPLETE)
    full = clang_frontend.parse(path, config, inputs, analyse=analyse)
    assert not fast.error and not fast.unit_error
    assert _summary(fast) == _summary(full)
    assert {k.qualified_name for k in fast.kernels} == {"km_tile::tile_kernel", "km_tile::scale_kernel"}
    launched = {lc["kernel"][1] if isinstance(lc["kernel"], list) else lc["kernel"] for lc in fast.analysis["launches"]}
    assert len(launched) == 2, fast.analysis["launches"]
    assert fast.analysis["explicit"], fast.analysis


def test_incomplete_parse_instantiates_no_function_body() -> None:
    """What the option saves: the complete parse instantiates every kernel specialization the host table
    names (an index that excludes precompiled declarations lists them at the top level); this one only
    the explicit instantiation."""
    import clang.cindex as ci

    from miner.frontends import cindex_speed, clang_frontend

    config, _inputs, path = _instantiate_setup()
    args = clang_frontend.clang_args(config, path)

    def instantiated(options: int) -> list[str]:
        tu = ci.Index.create(excludeDecls=True).parse(path, args=args, options=options)
        return [c.displayname for c in tu.cursor.get_children() if cindex_speed.instantiated(c)]

    complete = instantiated(clang_frontend.KEEP_GOING)
    assert sum(n.startswith("tile_kernel") for n in complete) == 20, complete  # the table's 10, float and double
    # Only the explicit instantiation's definition, made where it is written.
    explicit = ["scale_all<>(int *, int, int, cudaStream_t)"]
    assert instantiated(clang_frontend.KEEP_GOING | clang_frontend.INCOMPLETE) == explicit


def test_forward_declared_template_kernel_is_launched_in_an_incomplete_parse(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel declared, launched with deduced arguments, then defined: the launch resolves to the
    uninstantiated specialization, whose primary template's definition is the kernel (both parses agree)."""
    from miner.frontends import clang_frontend
    from miner.units.analysis import analyse

    config, inputs, _ = _instantiate_setup()
    path = str((INSTANTIATE / "forward_declared.cu").resolve())
    fast = clang_frontend.parse(path, config, inputs, analyse=analyse)
    monkeypatch.setattr(clang_frontend, "_OPTIONS", clang_frontend._OPTIONS & ~clang_frontend.INCOMPLETE)
    full = clang_frontend.parse(path, config, inputs, analyse=analyse)
    assert _summary(fast) == _summary(full)
    launched = fast.analysis["launches"]
    assert len(launched) == 1 and launched[0]["template_args"] == ["float"], launched


def test_launches_through_variables_index_each_function_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/fixtures/speed_dispatch: 24 launches through a local `auto kern = k<T, B>` that nested dispatch
    macros expand, and a function pointer assigned in branches. Each launch's kernel is found through the
    variable, and the launching function's assignments are indexed once, not walked again per launch (a
    host function with thousands of such launches did not finish in an hour)."""
    from miner.frontends import clang_frontend
    from miner.frontends.config import ParseConfig
    from miner.units.analysis import analyse
    from miner.units.launches import dataflow

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    calls = [0]
    original = dataflow._assignment

    def counted(c):
        calls[0] += 1
        return original(c)

    monkeypatch.setattr(dataflow, "_assignment", counted)
    path = str((FIXTURES / "speed_dispatch" / "dispatch.cu").resolve())
    res = clang_frontend.parse(path, ParseConfig(), {path}, analyse=analyse)
    assert not res.error and not res.unit_error
    offsets = {k.name: k.start_offset for k in res.kernels}
    chevrons = [lc for lc in res.analysis["launches"] if lc["kind"] == "<<<>>>"]
    scaled = sorted(tuple(lc["template_args"]) for lc in chevrons if lc["kernel"][1] == offsets["scale_rows"])
    assert scaled == sorted((t, b) for t in ("float", "double", "int") for b in ("true", "false"))
    assert {lc["kernel"][1] for lc in chevrons if lc["line"] == 68} == {offsets["add_one"], offsets["sub_one"]}
    # One walk of each launching function (and of the bodies the member-store search reads), where the walk
    # per launch cost 24 times the dispatching function's cursors.
    idx = clang_frontend.ci.Index.create()
    tu = idx.parse(path, args=clang_frontend.clang_args(ParseConfig(), path), options=0x200)
    size = sum(1 for c in tu.cursor.get_children() if c.spelling in ("launch_all", "launch_picked")
               for _ in c.walk_preorder())
    assert 0 < calls[0] <= 2 * size


def test_call_arguments_walked_once_for_kernel_references(monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/fixtures/speed_dispatch: nested dispatch macros put every launch inside lambdas passed to calls
    inside lambdas passed to calls. Each call asked its arguments' whole subtrees for kernel references and
    lambdas again (`note_call`, `_lambda_lists`); now the first call asked walks its subtree once and keeps
    what each expression in it holds (`state.subtree_flags`). The analysis must be the same as without, with
    fewer cursors visited."""
    import clang.cindex as ci

    from miner.frontends import clang_frontend
    from miner.frontends.config import ParseConfig
    from miner.units.analysis import analyse
    from miner.units.launches import helpers, host_chain, state

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    path = str((FIXTURES / "speed_dispatch" / "dispatch.cu").resolve())
    visits = [0]
    original = ci.Cursor.get_children

    def counted(self):
        visits[0] += 1
        return original(self)

    monkeypatch.setattr(ci.Cursor, "get_children", counted)
    with_flags = clang_frontend.parse(path, ParseConfig(), {path}, analyse=analyse)
    visits_with = visits[0]
    # Without: every subtree unknown, so each call walks its arguments as before.
    monkeypatch.setattr(helpers, "subtree_flags", lambda st, c: state.REF | state.LAMBDA)
    monkeypatch.setattr(host_chain, "subtree_flags", lambda st, c: state.REF | state.LAMBDA)
    visits[0] = 0
    without = clang_frontend.parse(path, ParseConfig(), {path}, analyse=analyse)
    assert not with_flags.unit_error and with_flags.analysis == without.analysis
    # (7,286 against 8,811 here: the rest is the closures' and the kernels' own walks)
    assert visits_with < 0.85 * visits[0], (visits_with, visits[0])


def test_closure_walks_each_declaration_once_per_unit(monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/fixtures/speed_shared: three kernels reach the same helpers and struct. The closure's walk of a
    declaration depends on the declaration alone (`compute._events`), so the translation unit's kernels
    share it; each kernel's closure must be what a walk of its own gives."""
    from miner.frontends import clang_frontend
    from miner.frontends.config import ParseConfig
    from miner.units.analysis import analyse

    compute = importlib.import_module("miner.units.closure.compute")  # (the package exports its function)
    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    path = str((FIXTURES / "speed_shared" / "shared.cu").resolve())
    calls = [0]
    original = compute._events

    def counted(ctx, cur, scope):
        calls[0] += 1
        return original(ctx, cur, scope)

    monkeypatch.setattr(compute, "_events", counted)
    shared = clang_frontend.parse(path, ParseConfig(), {path}, analyse=analyse)
    once = calls[0]

    def forgetful(ctx, cur, scope):  # the old way: every kernel walks what it reaches
        calls[0] += 1
        got = original(ctx, cur, scope)
        ctx.__dict__["_closure_events"] = {}
        return got

    monkeypatch.setattr(compute, "_events", forgetful)
    calls[0] = 0
    alone = clang_frontend.parse(path, ParseConfig(), {path}, analyse=analyse)
    assert not shared.unit_error and shared.analysis == alone.analysis
    assert len(shared.analysis["closures"]) == 3
    # 6 walks (3 kernels, helper, inner, Pair) against 12, one per kernel reaching each
    assert once < calls[0] - 4, (once, calls[0])


REPEAT = FIXTURES / "speed_repeat"


def _repeat_parse(name: str):
    from miner.frontends import clang_frontend
    from miner.frontends.config import ParseConfig
    from miner.units.analysis import analyse

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    inputs = {str(p.resolve()) for p in REPEAT.iterdir() if p.suffix in (".cu", ".cuh")}
    return clang_frontend.parse(str((REPEAT / name).resolve()), ParseConfig(), inputs, analyse=analyse)


def test_a_unit_lists_each_node_children_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/fixtures/speed_repeat: the launch walk, the flags of a call's arguments, the references in them and the
    closure's walk of each declaration list the same nodes' children again (a third of a ggml unit's listings).
    While a parse holds its TU, each node's children are listed once (`cindex_speed`); the analysis must be what
    listing them every time gives."""
    import clang.cindex as ci

    from miner.frontends import cindex_speed, clang_frontend

    lib = ci.conf.lib
    original = lib.clang_visitChildren
    listed: dict[tuple, int] = {}

    def counted(cursor, visitor, out):
        key = (cursor._kind_id, cursor.xdata, *cursor.data)
        listed[key] = listed.get(key, 0) + 1
        return original(cursor, visitor, out)

    monkeypatch.setattr(lib, "clang_visitChildren", counted)
    once = _repeat_parse("a.cu")
    assert not once.unit_error and len(once.analysis["closures"]) == 5
    assert max(listed.values()) == 1, max(listed.values())
    shared = sum(listed.values())

    hold = cindex_speed.hold_top_level

    def forgetful(tu, local_only=False, view=None):  # the old way: every walk lists again
        hold(tu, local_only, view)
        tu.__dict__.pop(cindex_speed._LISTED, None)

    monkeypatch.setattr(clang_frontend.cindex_speed, "hold_top_level", forgetful)
    listed.clear()
    again = _repeat_parse("a.cu")
    assert again.analysis == once.analysis and again.kernels == once.kernels
    # (433 listings against 987 here, one node listed 6 times)
    assert shared < 0.6 * sum(listed.values()), (shared, sum(listed.values()))


def test_closures_read_unit_wide_facts_once_per_unit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kernel's closure read every diagnostic of its TU (its unresolved names, the headers the parse lacked)
    and scanned every file the TU includes for a framework header: per kernel, the same answer. Read once per TU
    now (`closure.text._errors`, `_plain`, `_lacking_headers`): the diagnostics are read as often for a unit of
    five kernels as for one of two, and the unresolved name is still found."""
    import clang.cindex as ci

    reads = [0]
    diagnostics = ci.TranslationUnit.diagnostics

    def counted(self):
        reads[0] += 1
        return diagnostics.fget(self)

    monkeypatch.setattr(ci.TranslationUnit, "diagnostics", property(counted))
    five = _repeat_parse("a.cu")
    five_reads, reads[0] = reads[0], 0
    two = _repeat_parse("b.cu")
    assert len(five.analysis["closures"]) == 5 and len(two.analysis["closures"]) == 2
    assert five_reads == reads[0], (five_reads, reads[0])  # (19 against 13 when each closure read them)
    unresolved = [u for _key, c in five.analysis["closures"] for u in c["unresolved"]]
    assert [u["symbol"] for u in unresolved] == ["sr_missing_helper"]
    assert unresolved[0]["where"] == "a.cu:19" and unresolved[0]["nowhere"] is True


def test_written_with_indexes_a_scope_once() -> None:
    """A function written by a macro (`SR_KERNEL_AND_LAUNCHER` writes a kernel and its launcher) scanned all of its
    scope's children for what the same invocation wrote, once per such function: at a unit's top level, thousands
    of cursors each time. With a per-TU memo the scope is indexed once; the answer is the scan's."""
    import clang.cindex as ci

    from miner.frontends import clang_frontend
    from miner.frontends.config import ParseConfig
    from miner.units.closure import siblings

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    path = str((REPEAT / "a.cu").resolve())
    tu = ci.Index.create().parse(path, args=clang_frontend.clang_args(ParseConfig(), path))
    functions = [c for c in tu.cursor.walk_preorder()
                 if c.kind in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.FUNCTION_TEMPLATE)
                 and c.location.file is not None and c.location.file.name == path]
    memo: dict = {}
    indexed = [0]
    by_file = siblings._by_file

    def counted(scope):
        indexed[0] += 1
        return by_file(scope)

    siblings._by_file = counted
    try:
        for c in functions:
            got = [s.spelling for s in siblings.written_with(c, memo)]
            assert got == [s.spelling for s in siblings.written_with(c)]
    finally:
        siblings._by_file = by_file
    written = {c.spelling: [s.spelling for s in siblings.written_with(c)] for c in functions}
    assert written["twice_kernel"] == ["twice_launch"] and written["square_launch"] == ["square_kernel"]
    assert indexed[0] == 1  # (the TU's top level, for the four functions the macro wrote)


def test_macro_definitions_scanned_once_per_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every translation unit read the `#define`s of each project file it includes, twice (the explicit
    instantiations' macros, the host instantiations'): 128 ggml parses scanned the same headers. Scanned once per
    text and process now (`macro_text._scanned`); the definitions handed out are the scan's."""
    from miner.units import macro_text

    monkeypatch.setattr(macro_text, "_DEFINITIONS", {})
    scans: list[str] = []
    scan = macro_text._every_definition

    def counted(text):
        scans.append(text)
        return scan(text)

    monkeypatch.setattr(macro_text, "_every_definition", counted)
    _repeat_parse("a.cu")
    _repeat_parse("b.cu")
    assert len(scans) == len(set(scans)) and any("SR_KERNEL_AND_LAUNCHER" in t for t in scans)
    header = (REPEAT / "common.cuh").read_text()
    assert macro_text.every_definition(header) == scan(header)
    assert macro_text.definitions(header)["SR_SCALE"] == macro_text.MacroDef("SR_SCALE", ("x",), "((x) * 2.0f)")


def test_no_cycle_collection_while_a_unit_is_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The walks keep hundreds of thousands of cursor objects alive, and each automatic collection of cycles
    traversed them all again (with the children kept per node, a fifth of a ggml unit's CPU). None runs during a
    parse now; the analysis's context is cleared after it, so the TU is freed as `parse` returns, without one."""
    import gc
    import weakref

    import clang.cindex as ci

    alive: list[weakref.ref] = []
    real = ci.TranslationUnit.from_source.__func__

    def from_source(cls, *args, **kwargs):
        tu = real(cls, *args, **kwargs)
        alive.append(weakref.ref(tu))
        return tu

    monkeypatch.setattr(ci.TranslationUnit, "from_source", classmethod(from_source))
    from miner.frontends import clang_frontend

    collections: list[str] = []
    inside = [False]
    walk = clang_frontend._walk

    def walked(*args, **kwargs):
        inside[0] = True
        try:
            return walk(*args, **kwargs)
        finally:
            inside[0] = False

    monkeypatch.setattr(clang_frontend, "_walk", walked)

    def seen(phase, info):
        if phase == "start" and inside[0]:
            collections.append(phase)

    assert gc.isenabled()
    gc.callbacks.append(seen)
    thresholds = gc.get_threshold()
    gc.set_threshold(10, 1, 1)  # (a collection every few allocations, were it enabled)
    try:
        res = _repeat_parse("a.cu")
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(seen)
    assert not res.unit_error and gc.isenabled()
    assert collections == []
    assert len(alive) == 1 and alive[0]() is None
