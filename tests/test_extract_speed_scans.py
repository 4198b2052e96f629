"""Text scans that a unit or a run repeated, cut (issue 10 item 1, session 18): a macro's `#undef` looked for with
two patterns compiled per name, the unit's files scanned for CCCL per kernel, a unit's pieces scanned for
arch-specific instructions and removed CUB functors per instantiation, every file of a tree scanned for C++20.
Each answer must be the old scan's exactly: real parses (fixture tests/fixtures/speed_scoped) and texts compared."""

from __future__ import annotations

import importlib
import os
import re

import pytest

from tests.conftest import FIXTURES

SCOPED = FIXTURES / "speed_scoped"


def _scoped_parse():
    from miner.frontends import clang_frontend
    from miner.frontends.config import ParseConfig
    from miner.units.analysis import analyse

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    inputs = {str(p.resolve()) for p in SCOPED.iterdir() if p.suffix in (".cu", ".cuh")}
    return clang_frontend.parse(str((SCOPED / "scoped.cu").resolve()), ParseConfig(), inputs, analyse=analyse)


def test_undef_of_reads_each_file_define_lines_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`_undef_of` compiled two patterns for each macro's name and scanned its file from the definition, once per
    candidate definition of every macro every closure takes. It reads the file's `#define`/`#undef` lines from an
    index made once per file and unit now: no per-name pattern is compiled, every answer is the scan's, and the
    closures take the scoped definitions as before (each helper its own `SC_OP`, the last `SC_TMP`)."""
    compute = importlib.import_module("miner.units.closure.compute")
    asked: list[tuple[str, int, int | None]] = []
    undef_of = compute._undef_of

    compiled: list[bytes] = []
    compile_ = re.compile

    def counted(pattern, flags=0):
        if isinstance(pattern, bytes) and b"undef" in pattern:
            compiled.append(pattern)
        return compile_(pattern, flags)

    def compared(ctx, m):
        monkeypatch.setattr(compute.re, "compile", counted)
        got = undef_of(ctx, m)
        monkeypatch.setattr(compute.re, "compile", compile_)
        assert got == compute._undef_scanned(ctx, m), (m.name, m.start)
        asked.append((m.name, m.start, got))
        return got

    monkeypatch.setattr(compute, "_undef_of", compared)
    res = _scoped_parse()
    assert asked, "no closure asked for a macro's #undef"
    assert {name for name, _start, got in asked if got is not None} >= {"SC_OP"}
    assert compiled == []  # (one or two per question before)
    closures = dict((tuple(k) if isinstance(k, list) else k, c) for k, c in res.analysis["closures"])
    texts = {k: "\n".join(p["text"] for p in c["pieces"]) for k, c in closures.items()}
    mul = next(t for t in texts.values() if "sc_mul(" in t)
    assert "#define SC_OP(a, b) ((a) * (b))" in mul and "#define SC_TMP 3.0f" in mul
    late = next(t for t in texts.values() if "#define SC_LATE" in t)
    assert "SC_OP" not in late


def test_undef_of_names_that_are_not_plain_words_take_the_scan() -> None:
    """A name the index's `\\w+` would not hold (not an ASCII identifier: `\u00e9x`, which the name's own pattern
    finds after `#undef `) is answered by the scan itself."""
    compute = importlib.import_module("miner.units.closure.compute")
    data = "#define \u00e9x 1\nint y = \u00e9x;\n#undef \u00e9x\n".encode()

    class Ctx:
        def read(self, _path):
            return data

        def memo(self, key, make):
            return self.__dict__.setdefault(key, make())

    class M:
        name, path, end, start = "\u00e9x", "f.h", data.index(b"\n"), 0

    assert compute._undef_scanned(Ctx(), M()) == data.index(b"#undef")
    assert compute._undef_of(Ctx(), M()) == data.index(b"#undef")


class _Counted:
    """A compiled pattern whose searches are counted."""

    def __init__(self, pattern: re.Pattern) -> None:
        self.pattern, self.searched = pattern, 0

    def search(self, *args):
        self.searched += 1
        return self.pattern.search(*args)

    def finditer(self, *args):
        self.searched += 1
        return self.pattern.finditer(*args)


def test_cccl_opened_by_a_file_is_read_once_per_unit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a unit's files open thrust or CUB (`using namespace cub;`) was scanned per kernel over the same files:
    once per file and unit now, the same answer (none of the fixture's files does)."""
    from miner.units.closure import text

    counted = _Counted(text._USES_CCCL)
    monkeypatch.setattr(text, "_USES_CCCL", counted)
    res = _scoped_parse()
    assert len(res.analysis["closures"]) == 3
    assert 0 < counted.searched <= 2, counted.searched  # (scoped.cu, scoped.cuh: 6 scans with one per kernel)


_ARCH_TEXTS = [
    "asm volatile(\"wgmma.fence.sync.aligned;\");", "asm(\"setmaxnreg.inc.sync.aligned.u32 240;\");",
    "asm(\"tcgen05.alloc.cta_group::1\");", "asm(\"tensormap.replace.tile.global_address\");",
    "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n#endif", "#ifdef __CUDA_ARCH_SPECIFIC__\n#endif",
    "mywgmma.fence", "wgmma_fence()", "tensormap.replaced", "__CUDA_ARCH_FEAT_SMX_ALL", "float x = 1;",
    "x.wgmma.y", "__CUDA_ARCH_SPECIFIC__X",
]


def test_arch_specific_and_cub_answers_are_the_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit's kernel text and pieces were searched for arch-specific instructions and for CCCL 3's removed CUB
    functors once per instantiation, with patterns that try their alternatives at every position. A text without
    the words every match holds is not searched now; the answers are the patterns' own."""
    from miner.units import render

    for t in _ARCH_TEXTS:
        assert render._arch_specific(t, []) == bool(render._ARCH_SPECIFIC.search(t)), t
        assert render._arch_specific("", [{"text": t}]) == bool(render._ARCH_SPECIFIC.search(t)), t
    cub = ["cub::Max()", "cub :: Sum()", "mycub::Max()", "cub::MaxOp()", "::cub::Min()", "float x;"]
    for t in cub:
        want = [(n, render.CUB_REMOVED[n]) for n in sorted({m.group(1) for m in render._CUB_NAMED.finditer(t)})]
        assert render._cub_compat(t, []) == want, t
    arch, named = _Counted(render._ARCH_SPECIFIC), _Counted(render._CUB_NAMED)
    monkeypatch.setattr(render, "_ARCH_SPECIFIC", arch)
    monkeypatch.setattr(render, "_CUB_NAMED", named)
    pieces = [{"text": "__device__ float f(float v) { return v * 2; }"} for _ in range(20)]
    assert not render._arch_specific("__global__ void k() {}", pieces)
    assert render._cub_compat("__global__ void k() {}", pieces) == []
    assert arch.searched == 0 and named.searched == 0


def test_cxx20_source_answers_are_the_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file of a tree (the project's context files too: 1,400 with ggml's checkout) was searched for C++20 with
    one pattern whose leading alternatives are tried at every `>`, `)` and word. Each half is searched only where its
    words occur now; the answer is the old pattern's, on the fixtures' sources and on texts written for each case."""
    from miner.source import build_flags

    old = re.compile(r"(?:>|\))\s*requires\s*[(\w:]|\bconcept\s+\w+\s*=|\bconsteval\b|\bconstinit\b|<=>"
                     r"|#\s*include\s*<(?:concepts|ranges|span|bit|compare|numbers)>")
    texts = ["template <class T> requires(sizeof(T) > 1) void f();", "template <class T> concept Small = true;",
             "consteval int f() { return 1; }", "constinit int x = 1;", "auto c = a <=> b;", "#include <span>",
             "#  include<bit>", "#include <bitset>", "// requires nothing", "concept_t x;", "int consteval_x;",
             "#include <ranges>\n", "f() requires\n  std::is_integral_v<T>", "struct A {};"]
    texts += [p.read_text(errors="replace") for p in FIXTURES.rglob("*") if p.suffix in (".cu", ".cuh", ".h")]
    for t in texts:
        assert build_flags.source_std(t) == (build_flags.std_flag(20) if old.search(t) else None), t[:80]
    code, include = _Counted(build_flags._CXX20_CODE), _Counted(build_flags._CXX20_INCLUDE)
    monkeypatch.setattr(build_flags, "_CXX20_CODE", code)
    monkeypatch.setattr(build_flags, "_CXX20_INCLUDE", include)
    assert build_flags.source_std("#include <vector>\n__global__ void k(int *p) { if (p) *p = 1; }\n") is None
    assert code.searched == 0 and include.searched == 0


def _cmake_tree(root, define: str) -> list[str]:
    """A project whose root CMakeLists.txt gives every subdirectory a define and a dialect, a backend folder with a
    CMakeLists.txt of its own that only lists sources, and six sources there."""
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(p LANGUAGES CXX CUDA)\nset(CMAKE_CUDA_STANDARD 17)\n"
        f"add_compile_definitions({define})\nadd_subdirectory(backend)\n")
    backend = root / "backend"
    backend.mkdir(exist_ok=True)
    (backend / "CMakeLists.txt").write_text("add_library(backend STATIC ${SOURCES})\n")
    paths = []
    for i in range(6):
        (backend / f"k{i}.cu").write_text(f"__global__ void k{i}(float *p) {{ p[0] = {i}; }}\n")
        paths.append(str(backend / f"k{i}.cu"))
    return paths


def test_inherited_build_flags_read_once_per_build_file_text(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every source asked the CMakeLists.txt above it for the definitions and dialect a directory inherits, and each
    time they were parsed again (ggml's backend: 283 sources, 552 parses of the same files, most of configure).
    They are answered by each file's text now: parsed once per text, the same flags, and an edited file is read
    again (its new define is what the next question gets)."""
    from miner.source import build_flags

    build_flags._directory_flags.cache_clear()
    build_flags._standard_set.cache_clear()
    paths = _cmake_tree(tmp_path, "P_WITH_A=1")
    parsed: list[str] = []
    defines = build_flags._cmake_defines

    def counted(code, *args, **kwargs):
        parsed.append(code)
        return defines(code, *args, **kwargs)

    monkeypatch.setattr(build_flags, "_cmake_defines", counted)
    inherited = [build_flags._inherited_cmake_defines(os.path.dirname(p), str(tmp_path)) for p in paths]
    assert inherited[0] == [("-DP_WITH_A=1", "CMakeLists.txt")] and all(i == inherited[0] for i in inherited)
    assert len(parsed) == 1, len(parsed)  # (the root's text, once: six times before)
    stds = [build_flags._inherited_std(os.path.dirname(p), str(tmp_path)) for p in paths]
    assert stds == [("-std=c++17", "CMakeLists.txt")] * 6
    (tmp_path / "CMakeLists.txt").write_text((tmp_path / "CMakeLists.txt").read_text()
                                             .replace("P_WITH_A=1", "P_WITH_B=2").replace("17)", "20)"))
    assert build_flags._inherited_cmake_defines(os.path.dirname(paths[0]), str(tmp_path)) == [
        ("-DP_WITH_B=2", "CMakeLists.txt")]
    assert build_flags._inherited_std(os.path.dirname(paths[0]), str(tmp_path)) == ("-std=c++20", "CMakeLists.txt")


def test_pasted_names_found_once_per_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """The names pasted together in a file (`launch_##KIND`) were looked for with a pattern that tries every position
    of every word, once per template kernel without a concrete launch and file of its unit. Once per text now; the
    defines that turn the branch on are the same."""
    from miner.extract import switched

    switched._pasted.cache_clear()
    text = (b"#ifdef P_WITH_FAST\n#define LAUNCH(KIND) launch_##KIND<T>(x)\n#endif\n"
            + b"int filler_word_number_%d;\n" * 200)
    counted = _Counted(switched._PASTE)
    monkeypatch.setattr(switched, "_PASTE", counted)
    answers = [switched._switch_naming(text, {"launch_fast"}, set()) for _ in range(5)]
    assert answers == [["P_WITH_FAST"]] * 5
    assert counted.searched == 1
    assert switched._switch_naming(text, {"step_fast"}, set()) == []


def test_hip_source_test_once_per_file(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a kernel's file is HIP code already scans the whole file: it was asked per kernel, once per file now;
    the dataset is the same (three kernels of one file, none a HIP variant)."""
    from miner.extract import ExtractOptions, extract
    from miner.frontends import clang_frontend, hip_config

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    asked: list[str] = []
    reason = hip_config.native_reason

    def counted(path, data, cuda_macros=frozenset()):
        asked.append(path)
        return reason(path, data, cuda_macros)

    monkeypatch.setattr(hip_config, "native_reason", counted)
    monkeypatch.setenv("KM_PARSE_CACHE", "off")
    report = extract(ExtractOptions(paths=[str(SCOPED)], out_dir=str(tmp_path / "ds"), units=False))
    names = sorted(k["name"] for k in report.kernels)
    assert names == ["sc_late_kernel", "sc_mul_kernel", "sc_sum_kernel"]
    assert not any("variant" in k for k in report.kernels)
    assert asked == [str((SCOPED / "scoped.cu").resolve())]  # (three times before)


def test_feature_switches_find_the_template_writing_macros_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The project's macros that write `template` (and the pattern of a call to one) are a function of the project's
    macros alone; `feature_guards.switches` made them again for every source with a guarded branch. Once per call
    now, and each source's switches are the same."""
    from miner.source import feature_guards

    header = b"#define P_INST(T) template __global__ void scale_kernel<T>(T *, int);\n"
    texts = {"/p/defs.cuh": header}
    for i in range(4):
        texts[f"/p/k{i}.cu"] = (b'#include "defs.cuh"\ntemplate <typename T> __global__ void scale_kernel(T *p, int n)'
                                b" { p[n] = 0; }\nP_INST(float)\n#ifdef P_WITH_DOUBLE%d\nP_INST(double)\n#endif\n" % i)
    made: list[int] = []
    writing = feature_guards.writing_template

    def counted(macros):
        made.append(len(macros))
        return writing(macros)

    monkeypatch.setattr(feature_guards, "writing_template", counted)
    found = feature_guards.switches(texts)
    assert found == {f"/p/k{i}.cu": {f"P_WITH_DOUBLE{i}"} for i in range(4)}
    assert len(made) == 1, made  # (four times before: once per guarded source)


SPEED = FIXTURES / "speed"


def test_treesitter_pass_runs_beside_the_prefix_build(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tree-sitter pass over the kernel files runs in a thread while the torch prefix is built (a libclang call
    that lets go of the interpreter: on two cores the other one idled). The build here waits for the pass's first
    file, so a pass that ran after it would never come (the wait times out); no other thread is alive when the
    preludes are planned or the pool forks, and the kernels are those of the pass run in place."""
    import shutil
    import threading

    from miner.extract import ExtractOptions, extract, parse
    from miner.extract import cache as extract_cache
    from miner.frontends import clang_frontend, pch, prelude

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    monkeypatch.setenv("KM_PARSE_CACHE", "off")
    src = tmp_path / "speed"
    shutil.copytree(SPEED, src)
    started = threading.Event()
    treesitter, build, plan, run_clang = extract_cache.treesitter, pch.build, prelude.plan, parse._run_clang
    overlapped: list[bool] = []
    alone: list[int] = []

    def ts(*args):
        started.set()
        return treesitter(*args)

    def waiting_build(*args, **kwargs):
        overlapped.append(started.wait(timeout=60))
        return build(*args, **kwargs)

    def planned(*args, **kwargs):
        alone.append(threading.active_count())
        return plan(*args, **kwargs)

    def pooled(*args, **kwargs):
        alone.append(threading.active_count())
        return run_clang(*args, **kwargs)

    monkeypatch.setattr(extract_cache, "treesitter", ts)
    monkeypatch.setattr(pch, "build", waiting_build)
    monkeypatch.setattr(prelude, "plan", planned)
    monkeypatch.setattr(parse, "_run_clang", pooled)
    report = extract(ExtractOptions(paths=[str(src)], out_dir=str(tmp_path / "a"), jobs=2, units=False))
    assert overlapped == [True]
    assert alone and set(alone) == {threading.active_count()}

    class InPlace(parse._TreeSitterBeside):  # the pass where it ran before: after the build, in the main thread
        def __init__(self, cache, kernel_files):
            self.cache, self.kernel_files, self.failed = cache, kernel_files, None

        def join(self):
            self.done = {}
            self._run(self.cache, self.kernel_files)
            return self.done

    monkeypatch.setattr(pch, "build", build)
    monkeypatch.setattr(parse, "_TreeSitterBeside", InPlace)
    again = extract(ExtractOptions(paths=[str(src)], out_dir=str(tmp_path / "b"), jobs=2, units=False))
    assert report.kernels == again.kernels and len(report.kernels) >= 8
