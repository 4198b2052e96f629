"""Stage 2: a generated pytest file, statically checked, run in a child process, repaired on failure.

Every attempt (candidate, outcome, error, the model's reflection and blame) is appended to
enrich/attempts.json as soon as it is known, GEAK-style, so later prompts and people can read it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from miner.dataset.atomic import write_text
from miner.enrich.gpu_probe import gpu_present
from miner.enrich.json_extract import ExtractError, extract_code
from miner.enrich.mutation import judge_test, not_run
from miner.enrich.prompt_context import test_context, writes_through
from miner.enrich.prompts import load_prompt
from miner.enrich.records import KernelInput, now
from miner.enrich.repair import (
    blame_heuristic,
    error_summary,
    normalize_output,
    parse_repair_answer,
    repair_messages,
)
from miner.enrich.run_tests import run_generated_test
from miner.enrich.stages.base import CallLog, RunContext, StageFailure, ask_until_usable, write_stage_json
from miner.enrich.static_check import check_test_source
from miner.sandbox import SandboxUnavailable

TEST_FILE = "test_generated.py"
MIN_CASES = 5
# A test file larger than this is no unit test; it would also be forwarded whole into repair prompts.
MAX_TEST_CHARS = 40_000
# Outcomes after which another attempt cannot help: the unit itself does not build.
_HOPELESS = ("build_failed",)
# Outcomes where the test ran and disagreed with the kernel: if the model blames the kernel, the test
# is kept in tests/ as evidence against it.
_EVIDENCE = ("failed", "cuda_error")


def writable_positions(kin: KernelInput) -> list[int] | None:
    """Positions of the parameters the kernel may write (`writes_through`: non-const pointees, non-const tensor
    accessors), from metadata; the same parameters the tests prompt names as outputs."""
    params = kin.metadata.get("params")
    if not isinstance(params, list) or not params or not all(isinstance(p, dict) for p in params):
        return None
    return [i for i, p in enumerate(params) if writes_through(p)]


def judge_candidate(ctx: RunContext, kin: KernelInput, test_path: Path) -> tuple[str, str, dict[str, Any]]:
    """Run a statically sound candidate on the real unit, then on its mutants: (outcome, message, mutation).

    Outcomes beyond validate's: `weak` (passed, but also on a mutant) and `rejected` (skipped on a machine
    with a GPU: it would skip everywhere)."""
    run = functools.partial(run_generated_test, sandbox=ctx.cfg.sandbox, hide=ctx.cfg.secret_files)
    try:
        outcome, message = run(kin.path, test_path, ctx.cfg.test_timeout)
    except SandboxUnavailable as exc:
        raise StageFailure(f"generated tests are not run outside the sandbox, which is unavailable here: {exc} "
                           "(enrich --no-sandbox runs them with your own rights)") from None
    if outcome == "skipped":
        if gpu_present() and ctx.cfg.sandbox:
            # The sandbox's namespaces can hide the GPU from the test (seen on the GPU machines): then
            # the skip says nothing about the test. Left to validate, or to enrich --no-sandbox.
            return outcome, message, not_run("the test skipped inside the sandbox on a machine with a GPU "
                                             "(the sandbox may hide it): rerun with --no-sandbox to judge it")
        if gpu_present():
            return "rejected", "every test skipped on a machine with a CUDA GPU: it would skip everywhere\n" \
                + message, not_run("the test skipped")
        return outcome, message, not_run("the test did not run here (no CUDA GPU)")
    if outcome != "passed":
        return outcome, message, not_run(f"the test did not pass on the real kernel ({outcome})")
    report = judge_test(kin.path, test_path, ctx.cfg.test_timeout, run)
    if report.status == "survived":
        return "weak", report.feedback(), report.record()
    return outcome, message, report.record()


def _first_candidate(ctx: RunContext, kin: KernelInput, analysis: dict[str, Any], log: CallLog) -> str:
    prompt = log.prompt
    messages = prompt.messages(kernel=kin.prompt_kernel(), code=kin.code, analysis=analysis,
                               instantiations=kin.instantiations,  # the Triton template lists them itself
                               facts=test_context(kin.metadata, analysis, kin.code_source), min_cases=MIN_CASES)

    def parse(content: str) -> str:
        code = extract_code(content, "python")
        if len(code) > MAX_TEST_CHARS:
            raise ExtractError(f"the test file has {len(code)} characters (limit {MAX_TEST_CHARS})")
        return code

    # Nothing to repair before this succeeds: the repair loop needs a candidate to start from.
    return ask_until_usable(ctx, log, messages, parse)


def _check(kin: KernelInput, code: str, writable: list[int] | None) -> Any:
    """The static check of the kernel's language: a Triton test must assert on a value the kernel computed."""
    if kin.metadata.get("language") == "triton":
        from miner.triton.test_check import check_test_source as triton_check

        launcher = (kin.metadata.get("instantiations") or [{}])[0].get("python_launcher")
        return triton_check(code, {kin.metadata["name"], *([launcher.split(".")[-1]] if launcher else [])},
                            MIN_CASES)
    return check_test_source(code, MIN_CASES, writable)


def run_tests_stage(ctx: RunContext, kin: KernelInput, analysis: dict[str, Any]) -> dict[str, Any]:
    """Returns the stage's record entry; status is ok (passed), unverified (no GPU here) or failed."""
    log = CallLog(load_prompt("tests", kin.metadata.get("language")), ctx.cfg.model)
    repair_prompt = load_prompt("repair")
    test_path = kin.path / "tests" / TEST_FILE
    attempts_path = kin.enrich_dir / "attempts.json"
    history: list[dict[str, Any]] = []
    memory: dict[str, Any] = {"kernel": kin.kid, "model": ctx.cfg.model, "attempts": history}
    # A candidate from an earlier run must not survive if this run's candidates are all rejected.
    test_path.unlink(missing_ok=True)
    code = _first_candidate(ctx, kin, analysis, log)
    outcome, message = "error", ""
    writable = writable_positions(kin)
    for attempt in range(1, ctx.cfg.max_attempts + 1):
        check = _check(kin, code, writable)
        mutation = not_run("rejected by the static check")
        if check.ok:
            write_text(test_path, code)
            outcome, message, mutation = judge_candidate(ctx, kin, test_path)
        else:
            outcome, message = "rejected", "static check: " + check.message()
            test_path.unlink(missing_ok=True)
        # Timings, addresses and temp paths vary between runs: without them the repair prompt, and so its
        # cache key, is the same on a rerun.
        message = normalize_output(ctx.redact.text(message))
        entry = {"attempt": attempt, "candidate": code, "outcome": outcome, "error": message,
                 "error_summary": error_summary(message), "static_check": check.message(),
                 "cases": check.cases, "mutation": mutation,
                 "blame_heuristic": blame_heuristic(outcome, message), "time": now()}
        history.append(entry)
        write_stage_json(attempts_path, memory, ctx.redact)
        ctx.log(f"{kin.kid}: tests attempt {attempt}: {outcome}")
        if outcome in ("passed", "skipped") or outcome in _HOPELESS or attempt == ctx.cfg.max_attempts:
            break
        messages = repair_messages(repair_prompt, kernel=kin.prompt_kernel(), code=kin.code, test_code=code,
                                   outcome=outcome, error=message, history=history[:-1], attempt=attempt,
                                   max_attempts=ctx.cfg.max_attempts, min_cases=MIN_CASES,
                                   facts=test_context(kin.metadata, analysis, kin.code_source))
        comp = ctx.client.chat(messages)
        log.add(comp, repair_prompt)
        try:
            reflection, new_code = parse_repair_answer(comp.content)
            if len(new_code) > MAX_TEST_CHARS:
                raise ExtractError(f"the test file has {len(new_code)} characters (limit {MAX_TEST_CHARS})")
        except ExtractError as exc:
            entry.update(reflection="", blame_model="unknown", repair_error=str(exc))
            write_stage_json(attempts_path, memory, ctx.redact)
            continue  # same candidate again would fail the same way; the next round re-asks with history
        entry.update(reflection=reflection["reflection"], blame_model=reflection["blame"],
                     confidence=reflection["confidence"])
        write_stage_json(attempts_path, memory, ctx.redact)
        code = new_code
    return _finish(ctx, kin, memory, outcome, log)


def _finish(ctx: RunContext, kin: KernelInput, memory: dict[str, Any], outcome: str,
            log: CallLog) -> dict[str, Any]:
    history = memory["attempts"]
    last = history[-1]
    test_path = kin.path / "tests" / TEST_FILE
    mutation = last.get("mutation") or not_run("no candidate ran")
    error: str | None = None
    if outcome == "passed" and mutation.get("status") == "passed":
        status, blame = "ok", None
    elif outcome in ("passed", "skipped"):
        # Sound but not judged: no GPU here, or no mutant could be built. `validate` runs it; enrich
        # --force on a GPU judges it (answers come from the cache).
        status, blame = "unverified", None
        error = mutation.get("reason") or None
    else:
        status = "failed"
        # The model's latest reading: the reflection that produced the last candidate, or one after it.
        blame = next((h["blame_model"] for h in reversed(history) if h.get("blame_model") in ("test", "kernel")),
                     None) or last["blame_heuristic"]
        if outcome in ("rejected", "weak", "no_code"):
            blame = "test"  # a test that cannot fail, or did not notice a mutant, says nothing about the kernel
        kept = blame == "kernel" and outcome in _EVIDENCE
        # A test we believe wrong must not be picked up by validate; one that exposes a kernel bug is kept
        # in tests/ as evidence against the kernel.
        if not kept:
            write_text(kin.enrich_dir / "test_generated.failed.py", last["candidate"])
            test_path.unlink(missing_ok=True)
        error = last["error_summary"]
    memory["final"] = {"status": status, "outcome": outcome, "attempts": len(history), "blame": blame,
                       "repaired": len(history) > 1 and status in ("ok", "unverified"),
                       "evidence_against_kernel": status == "failed" and test_path.exists(),
                       "mutation": {k: v for k, v in mutation.items() if k != "mutants"}}
    write_stage_json(kin.enrich_dir / "attempts.json", memory, ctx.redact)
    files = [f"tests/{TEST_FILE}"] if test_path.exists() else []
    return {"status": status, "outcome": outcome, "attempts": len(history), "blame": blame,
            "error": error, "files": files, "mutation": memory["final"]["mutation"], **log.meta()}
