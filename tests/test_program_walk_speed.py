"""The walk of a program's instantiated bodies (`launches.instantiated`, tests/fixtures/speed_program): one
libclang traversal per body that keeps only calls and references, the main file's kernel template bodies
left blank in the instantiating parse, and the roots of that parse through an index that excludes precompiled
declarations. Each must give the sites the plain way gives: real libclang parses compared."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES

PROGRAM = FIXTURES / "speed_program"
MAIN = str((PROGRAM / "step_table.cu").resolve())


def _setup():
    from miner.frontends import clang_frontend
    from miner.frontends.config import ParseConfig

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    return ParseConfig(include_dirs=[str(PROGRAM.resolve())]), {MAIN}


def _summary(res) -> dict:
    """What a parse hands to the rest of the pipeline (its kernels and analysis)."""
    return {"kernels": [(k.qualified_name, k.start_offset, k.end_offset) for k in res.kernels],
            "analysis": res.analysis, "error": res.error, "unit_error": res.unit_error}


def _step_args(res) -> list[list[str]]:
    """The concrete argument lists of `step_kernel`'s references."""
    out = []
    for rec in res.analysis["launches"]:
        if rec["kernel"][1] == open(MAIN, "rb").read().index(b"template <typename T, int STEP"):
            out += rec["host_template_args"]
    return sorted(out)


_EXPECTED = sorted([t, s, "true"] for t in ("float", "double") for s in ("1", "2", "4"))


def _parse(monkeypatch: pytest.MonkeyPatch | None = None, **patches):
    from miner.frontends import clang_frontend
    from miner.units.analysis import analyse
    from miner.units.launches import instantiated

    config, inputs = _setup()
    if monkeypatch is not None:
        for name, value in patches.items():
            monkeypatch.setattr(instantiated, name, value)
    res = clang_frontend.parse(MAIN, config, inputs, analyse=analyse)
    assert not res.error and not res.unit_error and not res.analysis.get("error"), res.analysis.get("error")
    return res


def _probes(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each instantiating parse of the main file, in order: whether the text it parsed had blanks."""
    import clang.cindex as ci

    from miner.frontends import clang_frontend

    seen: list[bool] = []
    parse = ci.Index.parse
    text = open(MAIN, encoding="utf-8").read()

    def counting(self, path, args=None, unsaved_files=None, options=0):
        if options == clang_frontend.KEEP_GOING and path == MAIN:
            seen.append(dict(unsaved_files or [])[MAIN].rstrip("\n") != text.rstrip("\n"))
        return parse(self, path, args=args, unsaved_files=unsaved_files, options=options)
    monkeypatch.setattr(ci.Index, "parse", counting)
    return seen


def test_blank_kernel_bodies_give_the_sites_of_the_full_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """The instantiating parse with the kernel templates' bodies blank finds the sites (and so the whole
    analysis) of the parse with them; it is the one parse made, and its text was blanked."""
    full = _parse(monkeypatch, _kernel_bodies=lambda st, main: [])
    assert _step_args(full) == _EXPECTED
    monkeypatch.undo()
    probes = _probes(monkeypatch)
    fast = _parse()
    assert probes == [True], probes
    assert _summary(fast) == _summary(full)


def test_blank_keeps_the_directives_the_host_code_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host table reads `KM_PROG_WIDEST`, which the kernel's body defines: a blank that dropped the body's
    directives loses that table entry (the fixture can tell), the real one keeps it."""
    from miner.frontends import clang_frontend

    def everything(body: bytes) -> bytes:
        return body.translate(clang_frontend._BLANK)
    monkeypatch.setattr(clang_frontend, "_blank_body", everything)
    naive = _parse()
    assert _step_args(naive) != _EXPECTED
    monkeypatch.undo()
    assert _step_args(_parse()) == _EXPECTED


def test_a_walk_that_reaches_a_blank_body_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Were a blanked definition reached (here the host table itself, made to look like a kernel's range), the
    walk is made again over the parse with every body: the same sites, two instantiating parses."""
    from miner.units.launches import instantiated

    real = instantiated._kernel_bodies
    text = open(MAIN, "rb").read()
    start = text.index(b"template <typename T, bool WRITE")
    open_brace = text.index(b"{", text.index(b"void* choose_step"))
    end = text.index(b"\n}\n", open_brace) + 2

    def with_table(st, main):
        return [*real(st, main), ((start, end), (open_brace + 1, end - 1))]
    probes = _probes(monkeypatch)
    res = _parse(monkeypatch, _kernel_bodies=with_table)
    assert probes == [True, False], probes
    assert _step_args(res) == _EXPECTED


@pytest.mark.parametrize("body, kept", [
    (b"\n  int i = 0;\n#pragma unroll\n  for (;;) {}\n#define W 4 \\\n  + 1\n  x(W);\n", True),
    (b" x();\r\n#ifdef A\r\n  y();\r\n#endif\r\n", True),
    (b"\n  /* #define W 4 */\n#define V 1\n", False),  # a comment could hide or show a directive line
    (b"\n  _Pragma(\"unroll\") for (;;) {}\n", False),
    (b"\n  f(a, \\\n#b);\n", False),  # a continued code line carries the next one on
    (b"\n  int i = 0; /* no directive: nothing to tell apart */\n", True),
])
def test_blank_body_keeps_lines_offsets_and_directives(body: bytes, kept: bool) -> None:
    from miner.frontends import clang_frontend

    out = clang_frontend._blank_body(body)
    if not kept:
        assert out is None
        return
    assert out is not None and len(out) == len(body)
    for a, b in zip(body.split(b"\n"), out.split(b"\n"), strict=True):
        code = a.rstrip(b"\r")
        assert b.endswith(b"\r") == a.endswith(b"\r")
        assert b == a or not b.strip(), (a, b)  # each line kept whole or made blank
        if code.lstrip().startswith(b"#"):
            assert b == a
    text = b"void f() {" + body + b"}\n"
    blanked = clang_frontend.blanked(text.decode(), [(10, 10 + len(body))], True).encode()
    assert blanked == b"void f() {" + out + b"}\n"
    # Not between braces, or offsets that may not be the file's: left as it was.
    assert clang_frontend.blanked(text.decode(), [(9, 10 + len(body))], True) == text.decode()
    assert clang_frontend.blanked(text.decode(), [(10, 10 + len(body))], False) == text.decode()


def _node(d) -> tuple:
    """A statement cursor's node: its kind, statement and TU (the struct's first word is the declaration the
    traversal came through, which one recursive traversal keeps and a listing per node does not), and what the
    walk reads of it."""
    from miner.frontends import cindex_speed

    r = cindex_speed.referenced_unchecked(d)
    return (d._kind_id, d.data[1], d.data[2], d.location.line, d.location.offset, cindex_speed.cursor_key(r))


def test_descendants_are_the_preorder_walk_filtered() -> None:
    """`cindex_speed.descendants_of_kinds` lists what `walk_preorder` lists of those kinds, in its order, on
    every function (instantiations too) of an instantiating parse."""
    import clang.cindex as ci

    from miner.frontends import cindex_speed, clang_frontend
    from miner.units.launches import instantiated

    config, _ = _setup()
    tu = ci.Index.create(excludeDecls=True).parse(MAIN, args=clang_frontend.clang_args(config, MAIN),
                                                  options=clang_frontend.KEEP_GOING)
    original = cindex_speed.ORIGINAL.get("walk_preorder", ci.Cursor.walk_preorder)
    checked = 0
    for fn in tu.cursor.walk_preorder():
        if fn.kind not in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.CXX_METHOD) or not fn.is_definition():
            continue
        want = [_node(d) for d in list(original(fn))[1:] if d._kind_id in instantiated._NAMING]
        got = cindex_speed.descendants_of_kinds(fn, instantiated._NAMING)
        assert [_node(d) for d in got] == want
        assert all(d._tu is tu for d in got)
        checked += bool(want)
    assert checked >= 5


def test_roots_through_an_excluding_index_are_the_written_functions() -> None:
    """An index that leaves precompiled declarations out lists the instantiated function definitions at the top
    level (kernel specializations among them); the walk's roots there are those of a plain index: the functions
    the main file writes."""
    import clang.cindex as ci

    from miner.frontends import cindex_speed, clang_frontend
    from miner.units.closure import TUContext
    from miner.units.launches import instantiated

    config, inputs = _setup()
    args = clang_frontend.clang_args(config, MAIN)

    def roots(exclude: bool) -> tuple[list[str], int]:
        tu = ci.Index.create(excludeDecls=exclude).parse(MAIN, args=args, options=clang_frontend.KEEP_GOING)
        ctx = TUContext(tu, inputs, lambda p: p, lambda p: open(p, "rb").read())
        listed = sum(cindex_speed.instantiated(c) for c in tu.cursor.get_children())
        return [c.displayname for c in instantiated._roots(tu.cursor, ctx, MAIN)], listed

    excluding, listed = roots(True)
    plain, listed_plain = roots(False)
    assert listed >= 6 and listed_plain == 0  # step_kernel's six specializations at least
    assert excluding == plain == ["run_steps(void *, const void *, int, int, int, cudaStream_t)"]
