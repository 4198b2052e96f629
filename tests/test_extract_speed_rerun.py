"""The cheaper pieces of a rerun (issue 10 item 1): each gives what the plain way gave."""

from __future__ import annotations

import re
from dataclasses import asdict

from miner.source import build_flags
from miner.units.mentions import _STATEMENT_START, Mentions
from miner.units.records import ClosureRecord, Declaration, Launch, PieceText, plain


def test_plain_is_asdict():
    launch = Launch(kernel=("a.cu", 1), launcher="run", path="a.cu", line=3, kind="<<<>>>", config={"grid": None},
                    values={"block": 256}, template_args=["float"], host_template=("a.cu", 2),
                    host_template_args=[["float"], ["half"]], declared=Declaration("ns::k", ["int"], "b.cpp", 4),
                    functors=[{"name": "F", "namespaces": ["ns"], "lines": (1, 2)}], via={"member": ["run"]})
    closure = ClosureRecord("a.cu", [PieceText("FUNCTION_DECL", "f", ["ns"], "int f();", "a.cu", 1, needs=["T"])],
                            ["<cuda.h>"], ["at"], [{"symbol": "x"}], [{"parts": ("json",), "headers": ["j.h"]}])
    for rec in (launch, closure, Launch(None, "", "", 0, ""), closure.pieces[0]):
        a, b = asdict(rec), plain(rec)
        assert a == b and repr(a) == repr(b)
        assert b is not rec and all(b[k] is not getattr(rec, k) for k in b if isinstance(b[k], (list, dict)))
    assert launch.to_dict() == asdict(launch) and closure.to_dict() == asdict(closure)


def _uses_by_search(m: Mentions, name: str, definition: tuple[str, int, int]) -> list[tuple[str, int]]:
    """`Mentions.uses` as it was: a substring search of every file, then the regex."""
    pat = re.compile(rb"(?<![\w.>])" + re.escape(name.encode()) + rb"(?!\w)")
    out = []
    for path, raw in m._raw.items():
        if name.encode() not in raw or not m._sees(path, definition[0]):
            continue
        text = m._text(path)
        for hit in pat.finditer(text):
            if path == definition[0] and definition[1] <= hit.start() < definition[2]:
                continue
            head = text[max(0, hit.start() - 400):hit.start()]
            cut = max((s.end() for s in _STATEMENT_START.finditer(head)), default=0)
            if b"__global__" not in head[cut:]:
                out.append((path, text.count(b"\n", 0, hit.start()) + 1))
    return out


def test_mentions_word_index_finds_what_the_search_found():
    files = [
        ("/p/a.cu", b'__global__ void k(int *x) {}\nvoid run() { k<<<1, 1>>>(0); }\n// k in a comment\n'),
        ("/p/b.cu", b'void g() { kk(); k_(); auto s = "k"; obj.k(); }\n/*k*/k2(); k/*c*/(); x"k"k;\n'),
        ("/p/c.h", b'__global__ void k(int *x);\nstruct S { void k(); };\nint a = ns::k;\n'),
        ("/p/d.cu", b'#define L(n) n<<<1,1>>>()\nL(k);\n'),
    ]
    m = Mentions(files)
    for name in ("k", "kk", "k2", "g", "absent", "ns::k", "a.cu"):
        for definition in (("", 0, 0), ("/p/a.cu", 0, 28)):
            assert m.uses(name, definition) == _uses_by_search(Mentions(files), name, definition), name
    assert m.uses("k", ("", 0, 0)) == [("/p/a.cu", 2), ("/p/b.cu", 2), ("/p/b.cu", 2), ("/p/c.h", 2), ("/p/c.h", 3),
                                       ("/p/d.cu", 2)]


def test_folder_flags_listing_once_per_folder(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text('set(CMAKE_CUDA_FLAGS "--expt-relaxed-constexpr")\n')
    (tmp_path / "a.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "b.cu").write_text("__global__ void q() {}\n")
    (tmp_path / "notes.txt").write_text("\n")
    root = str(tmp_path)
    assert build_flags._build_files(root) == ("CMakeLists.txt",)
    a, b = build_flags._folder_flags(root, root, "a.cu"), build_flags._folder_flags(root, root, "b.cu")
    assert a == b and a is not None and "CMakeLists.txt" in a[1]
    # a folder with Python build code: which source asks is part of the answer
    sub = tmp_path / "py"
    sub.mkdir()
    (sub / "setup.py").write_text("from setuptools import setup\nsetup(name='x')\n")
    assert build_flags._build_files(str(sub)) == ("setup.py",)
    assert build_flags._build_files(str(tmp_path / "missing")) is None
    assert build_flags._folder_flags(str(tmp_path / "missing"), root, "x.cu") is None


def test_names_any_is_any_search():
    from miner.units.launches.functors import _names_any

    texts = ["Tg *", "const T &", "int", "Map<T, Tg>", "TT", "", "a b"]
    for host in (["T"], ["T", "Tg"], ["Tg", "T"], ["N", ""], ["x.y", "T"], ["TT"]):
        for text in texts:
            assert bool(_names_any(host).search(text)) == any(
                re.search(rf"\b{re.escape(h)}\b", text) for h in host), (host, text)


def test_local_initializers_memo_gives_the_same(tmp_path):
    """A launching function's initializers, asked once per launch, come from the per-TU memo unchanged."""
    import clang.cindex as ci

    from miner.units import launch_formula

    src = tmp_path / "f.cu"
    src.write_text("struct dim3 { dim3(int, int = 1, int = 1); };\n"
                   "void run(int n) {\n  int threads = 256;\n  dim3 grid((n + 255) / 256, 2);\n"
                   "  int shared{threads * 4};\n  int unused;\n  int late = 3;\n}\n")
    tu = ci.Index.create().parse(str(src), args=["-x", "c++", "-std=c++17"])
    fn = next(c for c in tu.cursor.get_children() if c.spelling == "run")
    data = src.read_bytes()

    def read(_p):
        return data
    before = data.index(b"int late")
    plain = launch_formula.local_initializers(fn, before, str(src), read, None)
    cache: dict = {}
    first = launch_formula.local_initializers(fn, before, str(src), read, cache)
    again = launch_formula.local_initializers(fn, before, str(src), read, cache)
    assert plain == first == again == {"threads": "256", "grid": "dim3((n + 255) / 256, 2)", "shared": "(threads * 4)"}
    assert cache["initializers"]
    assert launch_formula.local_initializers(fn, len(data), str(src), read, cache)["late"] == "3"


def test_kernel_folders_rendered_in_workers_are_the_serial_ones(tmp_path):
    """With -j 2 the kernel folders the cache lacks are rendered in forked workers (stages._render_all); the
    dataset is the one -j 1 writes in the main process, and a rerun of each serves every folder from the cache."""
    import pytest

    from miner.frontends import clang_frontend
    from tests.conftest import FIXTURES, run_miner, snapshot

    if not clang_frontend.AVAILABLE:
        pytest.skip("needs libclang")
    trees = {}
    for jobs in ("1", "2"):
        env = {"KM_PARSE_CACHE": str(tmp_path / f"cache{jobs}")}
        for run in ("cold", "warm"):
            res = run_miner("extract", FIXTURES / "corpus", "-o", tmp_path / f"out{jobs}{run}", "-j", jobs, "-v",
                            env=env)
            assert res.returncode == 0, res.stderr
        assert "kernel folders from the cache" in res.stderr
        trees[jobs] = snapshot(tmp_path / f"out{jobs}cold")
        assert snapshot(tmp_path / f"out{jobs}warm") == trees[jobs]
    assert sum(k.endswith("/metadata.json") for k in trees["1"]) >= 8  # enough folders for the workers
    assert trees["1"] == trees["2"]


def test_render_all_keeps_the_order(monkeypatch):
    from miner.extract import cache as extract_cache
    from miner.extract import stages

    monkeypatch.setattr(extract_cache, "render_kernel", lambda *job: {"job": job, "pid": __import__("os").getpid()})
    jobs = [(i, f"k{i}") for i in range(12)]
    forked = stages._render_all(jobs, 2)
    assert [m["job"] for m in forked] == jobs and stages._RENDER == []
    assert any(m["pid"] != __import__("os").getpid() for m in forked)
    assert [m["job"] for m in stages._render_all(jobs[:3], 2)] == jobs[:3]  # too few: in this process


def _c_declared_by_search(raw: bytes, name: str) -> bool:
    """The search per name that `Mentions._c_declared`'s per-file index replaced (quadratic in an `extern "C" {`
    block's length: the lazy block match retried at every position, once per kernel name)."""
    return re.search(rb'extern\s*"C"\s*(?:\{[^}]*?)?[^;{}]*?\(?\s*\b' + re.escape(name.encode())
                     + rb"\s*\)?\s*\(", raw) is not None


def test_c_declaration_index_answers_what_the_search_answered():
    texts = [
        b'extern "C" void step(float *);\nvoid other(int);\n',
        b'extern "C" void (step)(float *);\n',
        b'extern "C" {\n  void a(int);\n  int (b)(float);\n}\nvoid c(int);\nextern "C" {\n}\n',
        b'extern "C" { struct S { int x; }; void after_brace(int); }\n',
        b'extern "C"\n__global__ void k1(int *x) { k2(); }\nextern "C" int v;\n',
        b'void f(); // extern "C" g(\nextern "C" typedef void (*fp)(int);\n',
        b'extern "C" {\n' + b"".join(b"__global__ void kern%d(float *p, int n);\n" % i for i in range(300)) + b"}\n",
    ]
    names = ["step", "other", "a", "b", "c", "S", "after_brace", "k1", "k2", "v", "f", "g", "fp", "kern0", "kern299",
             "kern300", "float", "absent"]
    for i, raw in enumerate(texts):
        m = Mentions([(f"/p/{i}.cu", raw)])
        for name in names:
            assert m._sees_c_declaration(f"/p/{i}.cu", name) == _c_declared_by_search(raw, name), (i, name)
    # through the include graph: a file declares nothing itself, the header it includes does
    m = Mentions([("/p/h.h", texts[0]), ("/p/u.cpp", b'#include "h.h"\n')], includes={"/p/u.cpp": {"/p/h.h"}})
    assert m._sees_c_declaration("/p/u.cpp", "step") and not m._sees_c_declaration("/p/u.cpp", "other")
