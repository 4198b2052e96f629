"""Mutants of Triton units and of torch-extension kernels that write through tensor accessors (issue 15,
deliverable 1): each exists, differs from the unit in the intended way, parses, and compiles (nvcc for
CUDA, Triton's AOT compile where triton is installed).

Fixtures of our own: tests/fixtures/triton (extracted here) and the accessor kernels of
tests/fixtures/corpus/ops/row_stats.cu and tests/fixtures/closure/cuda/accessor_kernel.cuh.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, load_dataset, run_miner

from miner import dataset
from miner.enrich.mutation import build_mutants, judge_test, load_mutants, prepare_mutants
from miner.triton.mutants import make_mutants as triton_mutants

HAS_TRITON = importlib.util.find_spec("triton") is not None


def _changed(before: str, after: str) -> list[tuple[str, str]]:
    """(removed line, added line) pairs of a mutant's diff (one-line edits, as every operator makes)."""
    diff = [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    removed = [line[1:].strip() for line in diff if line.startswith("-")]
    added = [line[1:].strip() for line in diff if line.startswith("+")]
    assert len(removed) == len(added), diff
    return list(zip(removed, added, strict=True))


@pytest.fixture(scope="module")
def triton_ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("tsrc") / "triton"
    shutil.copytree(FIXTURES / "triton", src)
    out = tmp_path_factory.mktemp("tout") / "ds"
    r = run_miner("extract", src, "-o", out, "--language", "triton", "-q")
    assert r.returncode == 0, r.stderr
    return out


def _kdir(ds: Path, name: str) -> Path:
    return next(ds / m["id"] for m in load_dataset(ds) if m["name"] == name)


# ------------------------------------------------------------------------------------------ Triton

def test_triton_mutants_of_the_fixture_units(triton_ds: Path) -> None:
    unit = (_kdir(triton_ds, "silu_kernel") / "units/default/unit.py").read_text()
    mutants = {m.name: m for m in triton_mutants(unit, "silu_kernel")}
    assert list(mutants) == ["no_write", "poison", "drop_term.1", "off_by_one.1"]
    store = "tl.store(y_ptr + offs, x * sig(x), mask=mask)"
    assert _changed(unit, mutants["no_write"].source) == [(store, "pass")]
    assert _changed(unit, mutants["poison"].source) == [(store, "tl.store(y_ptr + offs, 1 - (x * sig(x)), mask=mask)")]
    assert _changed(unit, mutants["drop_term.1"].source) == [(store, "tl.store(y_ptr + offs, (x), mask=mask)")]
    assert _changed(unit, mutants["off_by_one.1"].source) == [
        ("x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)",
         "x = tl.load((x_ptr + offs) + 1, mask=mask).to(tl.float32)")]
    assert "`x * sig(x)` -> `(x)`" in mutants["drop_term.1"].description
    for m in mutants.values():
        ast.parse(m.source)
        # Only the kernel changes: its helpers, launcher and reference are the unit's own text.
        assert "return 1.0 / (1.0 + _exp(-x))" in m.source and "return x * torch.sigmoid(x)" in m.source
        assert "offs = pid * BLOCK + tl.arange(0, BLOCK)" in m.source  # index arithmetic is never a term

    # Two stores under a constexpr branch: both removed, both poisoned; a term and a load per branch.
    unit = (_kdir(triton_ds, "half_kernel") / "units/default/unit.py").read_text()
    mutants = {m.name: m for m in triton_mutants(unit, "half_kernel")}
    assert list(mutants) == ["no_write", "poison", "drop_term.1", "drop_term.2", "off_by_one.1", "off_by_one.2"]
    assert [a for _, a in _changed(unit, mutants["no_write"].source)] == ["pass", "pass"]
    assert len(_changed(unit, mutants["poison"].source)) == 2
    # scale_exp: `x * scale * LOG2E` loses its outer term first, then its inner one.
    unit = (_kdir(triton_ds, "scale_exp_kernel") / "units/default/unit.py").read_text()
    mutants = {m.name: m for m in triton_mutants(unit, "scale_exp_kernel")}
    assert "tl.math.exp2((x * scale))" in mutants["drop_term.1"].source
    assert "tl.math.exp2((x) * LOG2E)" in mutants["drop_term.2"].source
    assert triton_mutants(unit, "no_such_kernel") == [] and triton_mutants("def (:\n", "k") == []


ALIASED = '''
import triton
from triton import language as lang
from triton.language import store as st, load


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, a, n, BLOCK: lang.constexpr):
    offs = lang.program_id(0) * BLOCK + lang.arange(0, BLOCK)
    mask = offs < n
    x = load(x_ptr + offs, mask=mask, other=0.0)
    acc = a * x + lang.load(y_ptr + offs, mask=mask)
    st(out_ptr + offs, acc, mask=mask)
    lang.atomic_add(out_ptr, acc.sum())


@triton.jit
def block_kernel(x_ptr, out_ptr, M, N, BM: lang.constexpr, BN: lang.constexpr):
    src = lang.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    dst = lang.make_block_ptr(out_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    lang.store(dst, lang.load(src, boundary_check=(0, 1)) * 2.0, boundary_check=(0, 1))
'''


def test_triton_aliases_atomics_and_block_pointers() -> None:
    mutants = {m.name: m for m in triton_mutants(ALIASED, "axpy_kernel")}
    assert list(mutants) == ["no_write", "poison", "drop_term.1", "drop_term.2", "off_by_one.1", "off_by_one.2"]
    assert _changed(ALIASED, mutants["no_write"].source) == [
        ("st(out_ptr + offs, acc, mask=mask)", "pass"), ("lang.atomic_add(out_ptr, acc.sum())", "pass")]
    assert "st(out_ptr + offs, 1 - (acc), mask=mask)" in mutants["poison"].source
    assert "lang.atomic_add(out_ptr, 1 - (acc.sum()))" in mutants["poison"].source
    # No term in a stored value: the value variable's computation is next.
    assert _changed(ALIASED, mutants["drop_term.1"].source) == [
        ("acc = a * x + lang.load(y_ptr + offs, mask=mask)", "acc = (a * x)")]
    assert "acc = (a) + lang.load(y_ptr + offs, mask=mask)" in mutants["drop_term.2"].source
    assert "load((x_ptr + offs) + 1, mask=mask, other=0.0)" in mutants["off_by_one.1"].source
    assert "lang.load((y_ptr + offs) + 1, mask=mask)" in mutants["off_by_one.2"].source
    # Block pointers: no `+ 1` (undefined on them); the value still mutates.
    block = {m.name: m for m in triton_mutants(ALIASED, "block_kernel")}
    assert list(block) == ["no_write", "poison", "drop_term.1"]
    assert "lang.store(dst, (lang.load(src, boundary_check=(0, 1))), boundary_check=(0, 1))" in \
        block["drop_term.1"].source
    for m in [*mutants.values(), *block.values()]:
        ast.parse(m.source)


def test_triton_mutants_are_prepared_built_and_judged(triton_ds: Path, tmp_path: Path) -> None:
    kdir = _kdir(triton_ds, "silu_kernel")
    prepared = prepare_mutants(kdir, tmp_path / "mutants")
    assert set(prepared) == {"no_write", "poison", "drop_term.1", "off_by_one.1"}
    manifest = json.loads((tmp_path / "mutants" / f"{kdir.name}.mutants.json").read_text())
    assert {e["language"] for e in manifest.values()} == {"triton"}
    for _, folder in prepared.values():
        assert (folder / "units/default/unit.py").read_text() != (kdir / "units/default/unit.py").read_text()
        assert dataset.load_metadata(folder)["language"] == "triton"
    assert set(load_mutants(tmp_path / "mutants", kdir.name)) == set(prepared)

    test = kdir / "tests" / "test_reference.py"
    ran: list[str] = []

    def fake_run(folder: Path, path: Path, timeout: float) -> tuple[str, str]:
        ran.append(folder.name)
        return ("passed", "") if folder.name.startswith("off_by_one") else ("failed", "")

    report = judge_test(kdir, test, 60, fake_run)
    # Built: parsed without triton, AOT-compiled with it; either way every mutant ran (no "no mutant built").
    assert [m.build for m in report.mutants] == ["ok"] * 4 and len(ran) == 4
    assert report.record()["status"] == "survived" and report.record()["survivors"] == ["off_by_one.1"]


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
def test_triton_mutants_compile_ahead_of_time(triton_ds: Path, tmp_path: Path) -> None:
    root = tmp_path / "mutants"
    for name in ("silu_kernel", "half_kernel", "scale_exp_kernel", "copy_kernel"):
        prepare_mutants(_kdir(triton_ds, name), root)
    built = build_mutants(root, None)
    assert len(built) == 4 + 6 + 5 + 3 and set(built.values()) == {"ok"}, built
    for kdir in dataset.kernel_dirs(root):
        rec = dataset.load_metadata(kdir)["instantiations"][0]["build"]
        assert rec["status"] == "ok" and rec["library"] == "units/default/kernel.ptx"  # a real compile
    # A mutant that does not compile is not built (the kernel itself compiles): it would "kill" any test.
    kdir = _kdir(triton_ds, "silu_kernel")
    broken = tmp_path / "broken"
    prepare_mutants(kdir, broken)
    folder = broken / f"poison-{kdir.name.rsplit('-', 1)[1]}"
    unit = folder / "units/default/unit.py"
    unit.write_text(unit.read_text().replace("1 - (x * sig(x))", "tl.load(x * sig(x))"))
    manifest = broken / f"{kdir.name}.mutants.json"
    entries = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({n: {**e, "reference_build": "ok"} for n, e in entries.items()}))
    assert build_mutants(broken, None)[folder.name] == "failed"


# ------------------------------------------------------------------------------------------ accessors

def test_accessor_outputs_get_every_mutant() -> None:
    from miner.enrich.mutants import make_mutants

    text = (FIXTURES / "corpus/ops/row_stats.cu").read_text()
    mutants = {m.name: m for m in make_mutants(text, "row_mean_kernel")}
    assert list(mutants) == ["no_write", "poison", "drop_term.1", "off_by_one.1", "off_by_one.2"]
    store = "mean[row] = static_cast<scalar_t>(sum / static_cast<acc_t>(input.size(1)));"
    assert _changed(text, mutants["poison"].source) == [
        (store, "mean[row] = -(static_cast<scalar_t>(sum / static_cast<acc_t>(input.size(1))));")]
    assert _changed(text, mutants["drop_term.1"].source) == [(store, "mean[row] = static_cast<scalar_t>((sum));")]
    assert "input[row][(col) + 1]" in mutants["off_by_one.1"].source
    assert "input[(row) + 1][col]" in mutants["off_by_one.2"].source
    for m in mutants.values():
        assert "mean[(row) + 1]" not in m.source  # the store's address is written, never shifted as a load

    # `const Acc4R input, Acc4R output`: the type is a macro; expanded, `output` is a writable accessor.
    box = (FIXTURES / "closure/cuda/accessor_kernel.cuh").read_text()
    mutants = {m.name: m for m in make_mutants(box, "box3_kernel")}
    assert {"no_write", "poison", "off_by_one.1"} <= set(mutants)
    assert "output[n][c][y][x] = -(acc);" in mutants["poison"].source
    assert "input[n][c][y + dy][(x + dx) + 1]" in mutants["off_by_one.1"].source
    # A const accessor is an input: nothing stored through it is poisoned.
    ro = box.replace("Acc4R output)", "const Acc4R output)")
    assert "poison" not in {m.name for m in make_mutants(ro, "box3_kernel")}


@pytest.mark.slow  # libclang extract + one nvcc batch of five mutants
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_accessor_mutants_compile_with_nvcc(tmp_path: Path) -> None:
    src = tmp_path / "closure"
    shutil.copytree(FIXTURES / "closure", src)
    out = tmp_path / "ds"
    r = run_miner("extract", src, "-o", out, "-q", env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert r.returncode == 0, r.stderr
    kdir = _kdir(out, "box3_kernel")
    meta = dataset.load_metadata(kdir)
    meta["instantiations"] = [i for i in meta["instantiations"] if i["id"] == "float"]  # one nvcc unit each
    (kdir / dataset.METADATA).write_text(json.dumps(meta))
    prepared = prepare_mutants(kdir, tmp_path / "mutants")
    assert {"no_write", "poison", "off_by_one.1", "off_by_one.2"} <= set(prepared)
    unit = (kdir / "units/float/unit.cu").read_text()
    assert (prepared["poison"][1] / "units/float/unit.cu").read_text() == unit.replace(
        "output[n][c][y][x] = acc;", "output[n][c][y][x] = -(acc);")
    built = build_mutants(tmp_path / "mutants", None)
    assert set(built.values()) == {"ok"}, built
