#!/usr/bin/env python3
"""Mutation scores on a GPU: the example kernels' tests and the issue-15 bypasses, run against mutants.

    PYTHONPATH=. python3 scripts/mutation_gpu_check.py prepare DIR        # here: parse, render, mutate
    PYTHONPATH=. python3 scripts/mutation_gpu_check.py run DIR [--out D] [--no-sandbox]  # GPU: build, run

`prepare` (needs libclang and tree-sitter, no GPU) extracts examples/ into DIR/ds with the kernels'
source-side tests and wrappers (as validate places them), writes a relu kernel of our own into
DIR/relu with the honest test of tests/llm_bypasses.py and every bypass that is harmless to run,
and makes every kernel's mutants under DIR/mutants (miner.enrich.mutation.prepare_mutants).
`run` (needs nvcc, torch and a GPU; no parser) builds the datasets and all mutants with the build
stage, runs each test on its kernel and, where it passed, on each mutant, through enrich's runner,
and prints a table; summary.json goes to --out (default $OUT or ./mutation_gpu_out).

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
    (root / "plan.json").write_text(json.dumps(plan, indent=1))
    print(f"prepared {len(plan)} test files over {len({p['kernel'] for p in plan})} kernels in {root}")


def run(root: Path, out: Path, use_sandbox: bool = True) -> int:
    import functools

    from miner import sandbox
    from miner.builder.driver import build_dataset
    from miner.builder.toolchain import BuildOptions, find_nvcc
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
               "bypasses": len(bypasses), "bypasses_accepted": sum(r["accepted"] for r in bypasses),
               "bypasses_passing_on_a_mutant_accepted": sum(
                   r["accepted"] and bool((r.get("mutation") or {}).get("survivors")) for r in bypasses)}
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"\nmutants built {summary['mutants_built']}/{summary['mutants']}; example tests accepted "
          f"{summary['examples_accepted']}/{summary['examples']}; honest relu test accepted "
          f"{summary['honest_accepted']}; bypasses accepted {summary['bypasses_accepted']}/{len(bypasses)}; "
          f"{summary['seconds']} s")
    return 0 if summary["honest_accepted"] and summary["bypasses_accepted"] == 0 else 1


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
