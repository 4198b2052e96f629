#!/usr/bin/env python3
"""Mutation scores on a GPU: the example kernels' tests and the issue-15 bypasses, run against mutants.

    PYTHONPATH=. python3 scripts/mutation_gpu_check.py prepare DIR        # here: parse, render, mutate
    PYTHONPATH=. python3 scripts/mutation_gpu_check.py run DIR [--out D] [--no-sandbox]  # GPU: build, run

`prepare` (needs libclang and tree-sitter, no GPU) extracts examples/ into DIR/ds with the kernels'
source-side tests and wrappers (as validate places them), writes a relu kernel of our own into
DIR/relu with the honest test of tests/llm_bypasses.py and every bypass that is harmless to run,
extracts the Triton fixture (tests/fixtures/triton) into DIR/triton with its reference tests, plus an
honest and a shape-only test for silu_kernel, and makes every kernel's mutants under DIR/mutants
(miner.enrich.mutation.prepare_mutants; Triton ones with Python's ast).
`run` (needs nvcc, torch, triton and a GPU; no parser) builds the datasets and all mutants with the
build stages (nvcc; Triton's AOT compile), runs each test on its kernel and, where it passed, on each
mutant, through enrich's runner, and prints a table; summary.json goes to --out (default $OUT or
./mutation_gpu_out).

The bypasses are judged by behaviour alone here (the static check that refuses them all on the CPU
is not applied), to measure the second line of defence: a bypass is "accepted" only if it passes on
the kernel and fails on every mutant. Target: the honest tests accepted, no bypass accepted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from miner import dataset  # noqa: E402
from miner.enrich.mutation import build_mutants, load_mutants, run_mutants  # noqa: E402

TIMEOUT = 180.0

# Triton tests of our own for the fixture's silu_kernel: one that checks values (every mutant must fail
# it) and one that reads only the shape (a bypass: the mutants must let it through, so it is refused).
TRITON_HONEST = """import pytest
import torch
from pathlib import Path

from miner.triton import harness

harness.require_gpu()
KDIR = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("n", [1, 7, 1000, 4097, 65536])
def test_silu_values(n):
    unit = harness.load_triton_unit(KDIR)
    torch.manual_seed(n)
    x = torch.randn(n, device="cuda") * 4
    x[0] = 0.5
    expected = x * torch.sigmoid(x)
    out = unit.function("silu")(x)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)
"""
TRITON_SHAPE_ONLY = """import torch
from pathlib import Path

from miner.triton import harness

harness.require_gpu()
KDIR = Path(__file__).resolve().parents[1]


def test_silu_shape():
    unit = harness.load_triton_unit(KDIR)
    x = torch.randn(1000, device="cuda")
    assert unit.function("silu")(x).shape == x.shape
"""


def prepare(root: Path) -> None:
    sys.path.insert(0, str(REPO / "tests"))
    from llm_bypasses import BYPASSES, RUNNABLE, good
    from test_enrich_bypasses import relu_dataset

    from miner.enrich.mutation import prepare_mutants
    from miner.enrich.static_check import check_test_source
    from miner.validate.sources import sync_tests
    from miner.validate.wrapper import write_wrappers

    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    subprocess.run([sys.executable, "-m", "miner", "extract", str(REPO / "examples"), "--output-dir",
                    str(root / "ds"), "-q"], check=True, env=env, cwd=REPO)
    plan: list[dict[str, Any]] = []
    for kdir in dataset.kernel_dirs(root / "ds"):
        meta = dataset.load_metadata(kdir)
        write_wrappers(kdir, meta)
        sync_tests(kdir, meta, [REPO])
        for test in sorted((kdir / "tests").glob("test_*.py")):
            plan.append({"kernel": f"ds/{kdir.name}", "test": test.name, "kind": "example", "static": None})
        prepare_mutants(kdir, root / "mutants")
    relu_dataset(root / "relu", ["relu_kernel"])
    kdir = dataset.kernel_dirs(root / "relu")[0]
    (kdir / "tests").mkdir()
    cases = {"test_honest.py": good(), **{f"test_bypass_{n}.py": BYPASSES[n] for n in RUNNABLE}}
    for name, text in cases.items():
        (kdir / "tests" / name).write_text(text)
        static = check_test_source(text, 5, [0])
        plan.append({"kernel": f"relu/{kdir.name}", "test": name,
                     "kind": "honest" if name == "test_honest.py" else "bypass",
                     "static": "accepted" if static.ok else "rejected"})
    prepare_mutants(kdir, root / "mutants")
    plan += _prepare_triton(root, env)
    (root / "plan.json").write_text(json.dumps(plan, indent=1))
    print(f"prepared {len(plan)} test files over {len({p['kernel'] for p in plan})} kernels in {root}")


def _prepare_triton(root: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    """The Triton fixture's kernels with a test (their reference tests; silu also ours), and their mutants."""
    from miner.enrich.mutation import prepare_mutants

    src = root / "triton_src"
    shutil.copytree(REPO / "tests" / "fixtures" / "triton", src)
    subprocess.run([sys.executable, "-m", "miner", "extract", str(src), "--output-dir", str(root / "triton"),
                    "--language", "triton", "-q"], check=True, env=env, cwd=REPO)
    plan: list[dict[str, Any]] = []
    for kdir in dataset.kernel_dirs(root / "triton"):
        meta = dataset.load_metadata(kdir)
        if meta["name"] == "silu_kernel":
            (kdir / "tests").mkdir(exist_ok=True)
            (kdir / "tests" / "test_honest.py").write_text(TRITON_HONEST)
            (kdir / "tests" / "test_bypass_shape_only.py").write_text(TRITON_SHAPE_ONLY)
        tests = sorted((kdir / "tests").glob("test_*.py"))
        for test in tests:
            kind = {"test_honest.py": "honest", "test_bypass_shape_only.py": "bypass"}.get(test.name, "example")
            plan.append({"kernel": f"triton/{kdir.name}", "test": test.name, "kind": kind, "static": None})
        if tests:
            prepare_mutants(kdir, root / "mutants")
    return plan


def _build_triton(root: Path, jobs: int) -> None:
    """AOT-compile the Triton kernels, then tell their mutants' manifests whether the kernel compiled: only
    then is a mutant that does not compile left out (miner.enrich.mutation.build_mutants)."""
    from miner.triton.build import build_dataset as build_triton

    rep = build_triton(root / "triton", jobs=min(jobs, 4))
    print(f"built triton: {rep.ok}/{rep.units} units in {rep.seconds:.1f} s", flush=True)
    for kdir in dataset.kernel_dirs(root / "triton"):
        manifest = root / "mutants" / f"{kdir.name}.mutants.json"
        if manifest.is_file():
            status = (dataset.load_metadata(kdir)["instantiations"][0].get("build") or {}).get("status", "not_built")
            entries = json.loads(manifest.read_text())
            manifest.write_text(json.dumps({n: {**e, "reference_build": status} for n, e in entries.items()}, indent=1))


def run(root: Path, out: Path, use_sandbox: bool = True) -> int:
    import functools

    from miner import sandbox
    from miner.builder import BuildOptions, build_dataset, find_nvcc
    from miner.enrich.run_tests import run_generated_test

    why = sandbox.unavailable() if use_sandbox else "--no-sandbox"
    print(f"sandbox: {'on' if why is None else 'off (' + why + '): tests run unconfined'}", flush=True)
    run_test = functools.partial(run_generated_test, sandbox=why is None)

    t0 = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    plan = json.loads((root / "plan.json").read_text())
    nvcc = find_nvcc()
    jobs = max(2, (os.cpu_count() or 2) - 2)
    for ds in ("ds", "relu"):
        rep = build_dataset(root / ds, BuildOptions(jobs=jobs), nvcc)
        print(f"built {ds}: {rep.ok}/{rep.units} units in {rep.seconds:.1f} s", flush=True)
    if (root / "triton").is_dir():
        _build_triton(root, jobs)
    built = build_mutants(root / "mutants", None)
    print(f"built mutants: {sum(s == 'ok' for s in built.values())}/{len(built)} in "
          f"{time.monotonic() - t0:.1f} s", flush=True)

    def judge(item: dict[str, Any]) -> dict[str, Any]:
        kdir = root / item["kernel"]
        test = kdir / "tests" / item["test"]
        t = time.monotonic()
        outcome, message = run_test(kdir, test, TIMEOUT)
        row = {**item, "real": outcome, "error": message.splitlines()[0][:200] if outcome != "passed" else ""}
        if outcome == "passed":
            mutants = load_mutants(root / "mutants", kdir.name)
            report = run_mutants(mutants, built, test, TIMEOUT, run_test,
                                 stop_at_survivor=item["kind"] == "bypass")
            row["mutation"] = report.record()
        row["accepted"] = outcome == "passed" and row["mutation"]["status"] == "passed"
        row["seconds"] = round(time.monotonic() - t, 1)
        with open(out / "rows.jsonl", "a", encoding="utf-8") as f:  # kept if the run is cut short
            f.write(json.dumps(row) + "\n")
        m = row.get("mutation") or {}
        print(f"done {item['kernel']} {item['test']}: {outcome} score={m.get('score')} "
              f"survivors={m.get('survivors')} {row['seconds']} s", flush=True)
        return row

    with ThreadPoolExecutor(4) as pool:
        rows = list(pool.map(judge, plan))
    print(f"\n{'kernel':42} {'test':44} {'static':8} {'real':8} {'score':>6} {'killed':>7}  survivors")
    for r in rows:
        m = r.get("mutation") or {}
        score = "-" if m.get("score") is None else f"{m['score']:.2f}"
        killed = f"{m.get('killed', 0)}/{m.get('ran', 0)}" if m else "-"
        print(f"{r['kernel'][-42:]:42} {r['test'][:44]:44} {r['static'] or '-':8} {r['real']:8} {score:>6} "
              f"{killed:>7}  {','.join(m.get('survivors', [])) or ('ACCEPTED' if r['accepted'] else '')}")
    bypasses = [r for r in rows if r["kind"] == "bypass"]
    summary = {"seconds": round(time.monotonic() - t0, 1), "sandbox": why is None, "rows": rows,
               "mutants_built": sum(s == "ok" for s in built.values()), "mutants": len(built),
               "examples_accepted": sum(r["accepted"] for r in rows if r["kind"] == "example"),
               "examples": sum(r["kind"] == "example" for r in rows),
               "honest_accepted": all(r["accepted"] for r in rows if r["kind"] == "honest"),
               "triton_accepted": sum(r["accepted"] for r in rows if r["kernel"].startswith("triton/")),
               "triton_tests": sum(r["kernel"].startswith("triton/") for r in rows),
               "triton_mutants_built": sum(s == "ok" for n, s in built.items() if _is_triton_mutant(root, n)),
               "bypasses": len(bypasses), "bypasses_accepted": sum(r["accepted"] for r in bypasses),
               "bypasses_passing_on_a_mutant_accepted": sum(
                   r["accepted"] and bool((r.get("mutation") or {}).get("survivors")) for r in bypasses)}
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"\nmutants built {summary['mutants_built']}/{summary['mutants']}; example tests accepted "
          f"{summary['examples_accepted']}/{summary['examples']}; triton tests accepted "
          f"{summary['triton_accepted']}/{summary['triton_tests']} ({summary['triton_mutants_built']} triton mutants "
          f"built); honest tests accepted "
          f"{summary['honest_accepted']}; bypasses accepted {summary['bypasses_accepted']}/{len(bypasses)}; "
          f"{summary['seconds']} s")
    return 0 if summary["honest_accepted"] and summary["bypasses_accepted"] == 0 else 1


def _is_triton_mutant(root: Path, folder: str) -> bool:
    try:
        return dataset.load_metadata(root / "mutants" / folder).get("language") == "triton"
    except (OSError, ValueError):
        return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step", choices=["prepare", "run"])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "mutation_gpu_out")))
    ap.add_argument("--no-sandbox", dest="sandbox", action="store_false",
                    help="run the tests unconfined (the sandbox's namespaces can hide the GPU)")
    args = ap.parse_args()
    if args.step == "prepare":
        prepare(args.dir.resolve())
        return 0
    return run(args.dir.resolve(), args.out, args.sandbox)


if __name__ == "__main__":
    sys.exit(main())
