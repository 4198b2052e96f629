"""Stage 2: a generated pytest file, statically checked, run in a child process, repaired on failure.

Every attempt (candidate, outcome, error, the model's reflection and blame) is appended to
enrich/attempts.json as soon as it is known, GEAK-style, so later prompts and people can read it.
"""

from __future__ import annotations

import shutil
from typing import Any

from miner.dataset.atomic import write_text
from miner.enrich.json_extract import ExtractError, extract_code
from miner.enrich.prompts import load_prompt
from miner.enrich.records import KernelInput, now
from miner.enrich.repair import blame_heuristic, error_summary, parse_repair_answer, repair_messages
from miner.enrich.run_tests import run_generated_test
from miner.enrich.stages.base import CallLog, RunContext, StageFailure, write_stage_json
from miner.enrich.static_check import check_test_source

TEST_FILE = "test_generated.py"
MIN_CASES = 5
# Outcomes after which another attempt cannot help: the unit itself does not build.
_HOPELESS = ("build_failed",)


def _first_candidate(ctx: RunContext, kin: KernelInput, analysis: dict[str, Any], log: CallLog) -> str:
    prompt = log.prompt
    messages = prompt.messages(kernel=kin.prompt_kernel(), code=kin.code, analysis=analysis,
                               instantiations=kin.instantiations, min_cases=MIN_CASES)
    comp = ctx.client.chat(messages)
    log.add(comp)
    try:
        if comp.finish_reason == "length":
            raise ExtractError("truncated answer (finish_reason=length)")
        return extract_code(comp.content, "python")
    except ExtractError as exc:
        # Nothing to repair yet: the repair loop needs a candidate to start from.
        raise StageFailure(ctx.redact.text(f"unusable answer: {exc}"), log.meta()) from None


def _check(kin: KernelInput, code: str) -> Any:
    """The static check of the kernel's language: a Triton test must assert on a value the kernel computed."""
    if kin.metadata.get("language") == "triton":
        from miner.triton.test_check import check_test_source as triton_check

        launcher = (kin.metadata.get("instantiations") or [{}])[0].get("python_launcher")
        return triton_check(code, {kin.metadata["name"], *([launcher.split(".")[-1]] if launcher else [])},
                            MIN_CASES)
    return check_test_source(code, MIN_CASES)


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
    for attempt in range(1, ctx.cfg.max_attempts + 1):
        check = _check(kin, code)
        if check.ok:
            write_text(test_path, code)
            outcome, message = run_generated_test(kin.path, test_path, ctx.cfg.test_timeout)
        else:
            outcome, message = "rejected", "static check: " + check.message()
        message = ctx.redact.text(message)
        entry = {"attempt": attempt, "candidate": code, "outcome": outcome, "error": message,
                 "error_summary": error_summary(message), "static_check": check.message(),
                 "cases": check.cases, "blame_heuristic": blame_heuristic(outcome, message), "time": now()}
        history.append(entry)
        write_stage_json(attempts_path, memory, ctx.redact)
        ctx.log(f"{kin.kid}: tests attempt {attempt}: {outcome}")
        if outcome in ("passed", "skipped") or outcome in _HOPELESS or attempt == ctx.cfg.max_attempts:
            break
        messages = repair_messages(repair_prompt, kernel=kin.prompt_kernel(), code=kin.code, test_code=code,
                                   outcome=outcome, error=message, history=history[:-1], attempt=attempt,
                                   max_attempts=ctx.cfg.max_attempts)
        comp = ctx.client.chat(messages)
        log.add(comp, repair_prompt)
        try:
            reflection, new_code = parse_repair_answer(comp.content)
        except ExtractError as exc:
            entry.update(reflection="", blame_model="unknown", repair_error=str(exc))
            write_stage_json(attempts_path, memory, ctx.redact)
            continue  # same candidate again would fail the same way; the next round re-asks with history
        entry.update(reflection=str(reflection.get("reflection", "")), blame_model=reflection["blame"],
                     confidence=reflection.get("confidence"))
        write_stage_json(attempts_path, memory, ctx.redact)
        code = new_code
    return _finish(ctx, kin, memory, outcome, log)


def _finish(ctx: RunContext, kin: KernelInput, memory: dict[str, Any], outcome: str,
            log: CallLog) -> dict[str, Any]:
    history = memory["attempts"]
    last = history[-1]
    test_path = kin.path / "tests" / TEST_FILE
    if outcome == "passed":
        status, blame = "ok", None
    elif outcome == "skipped":
        # Statically sound but not run: no GPU here. `validate` (or enrich --force on a GPU) runs it.
        status, blame = "unverified", None
    else:
        status = "failed"
        blame = last.get("blame_model") if last.get("blame_model") in ("test", "kernel") else None
        blame = blame or last["blame_heuristic"]
        # A test we believe wrong must not be picked up by validate; one that exposes a kernel bug may.
        if blame != "kernel" and test_path.exists():
            shutil.move(str(test_path), str(kin.enrich_dir / "test_generated.failed.py"))
    memory["final"] = {"status": status, "outcome": outcome, "attempts": len(history), "blame": blame,
                       "repaired": len(history) > 1 and status in ("ok", "unverified")}
    write_stage_json(kin.enrich_dir / "attempts.json", memory, ctx.redact)
    files = [f"tests/{TEST_FILE}"] if test_path.exists() else []
    return {"status": status, "outcome": outcome, "attempts": len(history), "blame": blame,
            "error": last["error_summary"] if status == "failed" else None, "files": files, **log.meta()}
