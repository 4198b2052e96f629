"""Turn what a test process left behind into exactly one outcome per kernel.

A sandboxed child that tried to write outside its work area or to use the network (the audit
hook's report), or that hit one of the sandbox's limits (processes, memory, file size, open files:
read from its errors), is `sandbox_violation` whatever else happened; the reason says what it tried
and what the tests did. Otherwise precedence, first match wins:
build_failed (no instantiation compiles) > skipped (no tests) > timeout (we killed it) >
cuda_error (memcheck found an error under --sanitize) > cuda_error (a test saw one, even if the
process then crashed) > crashed (killed by a signal) > the tests' own outcomes, worst first:
build_failed, failed, error, then skipped when nothing passed, else passed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miner.sandbox import audit
from miner.validate.plugin import SEVERITY
from miner.validate.runner import SANITIZER_EXIT, RawResult

OUTCOMES = ("passed", "failed", "error", "timeout", "crashed", "cuda_error", "build_failed", "skipped",
            "sandbox_violation")
# Outcomes that are no failure. `skipped` is here because nothing went wrong, not because anything was
# verified: its tests did not run (no GPU, no tests); `validate` exits 3 for it, never 0 (docs/harness.md).
NOT_FAILED = frozenset({"passed", "skipped"})


@dataclass
class Verdict:
    outcome: str
    reason: str
    signal: str | None = None
    test: str | None = None  # the test that decided the outcome
    counts: dict[str, int] = field(default_factory=dict)
    violations: list[dict[str, str]] = field(default_factory=list)


def _first_line(text: str, limit: int = 300) -> str:
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


def _tail(path: Path, lines: int = 1) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(kept[-lines:])[:300]


def _sanitizer_error(*paths: Path) -> str:
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        m = re.search(r"=========\s+((?:Invalid|Out-of-range|Misaligned|Program hit|Malloc|Cuda|Race)[^\n]*)",
                      text)
        if m:
            return m.group(1).strip()
    return "compute-sanitizer memcheck reported errors"


def classify(raw: RawResult, stdout: Path, stderr: Path, timeout: float) -> Verdict:
    verdict = _classify(raw, stdout, stderr, timeout)
    violations = list(raw.extra.get("violations") or [])
    if raw.extra.get("sandboxed") and verdict.outcome not in NOT_FAILED:
        res = raw.result or {}
        texts = [f"{t.get('exc_type', '')}: {t.get('message', '')}" for t in (res.get("tests") or {}).values()
                 if t.get("outcome") not in ("passed", "skipped")]
        texts += [str(e.get("message", "")) for e in res.get("collect_errors", [])]
        try:
            texts.append(stderr.read_text(encoding="utf-8", errors="replace")[-8000:])
        except OSError:
            pass
        kinds = {v["kind"] for v in violations}
        violations += [hit for hit in audit.limit_hits(*texts) if hit["kind"] not in kinds]
    if not violations:
        return verdict
    tried = "; ".join(f"{v['kind']}: {v['what']}" for v in violations[:5])
    return Verdict("sandbox_violation", f"sandbox: {tried} (tests: {verdict.outcome}: {verdict.reason})"[:600],
                   signal=verdict.signal, test=verdict.test, counts=verdict.counts, violations=violations)


def _classify(raw: RawResult, stdout: Path, stderr: Path, timeout: float) -> Verdict:
    res = raw.result or {}
    tests: dict[str, dict[str, Any]] = res.get("tests", {})
    counts: dict[str, int] = {}
    for t in tests.values():
        key = t.get("outcome") or "error"  # None: the process died inside this test
        counts[key] = counts.get(key, 0) + 1
    counts["total"] = len(tests)
    current = res.get("current")

    def worst(kind: str) -> tuple[str, dict[str, Any]] | None:
        for nodeid, t in tests.items():
            if t.get("outcome") == kind:
                return nodeid, t
        return None

    if raw.timed_out:
        where = f" in {current}" if current else ""
        return Verdict("timeout", f"no result after {timeout:g} s{where}; process group killed",
                       test=current, counts=counts)
    hit = worst("cuda_error")
    if raw.returncode == SANITIZER_EXIT and raw.command and raw.command[0] == "compute-sanitizer":
        return Verdict("cuda_error", "memcheck: " + _sanitizer_error(stdout, stderr),
                       test=hit[0] if hit else current, counts=counts)
    if hit:
        return Verdict("cuda_error", _first_line(hit[1].get("message", "")), test=hit[0], counts=counts)
    sig = raw.signal_name
    if sig is None and raw.command and raw.command[0] == "compute-sanitizer" and raw.returncode \
            and raw.returncode > 128:
        sig = _signal_from_code(raw.returncode - 128)
    if sig:
        where = f" in {current}" if current else ""
        return Verdict("crashed", f"killed by {sig}{where}", signal=sig, test=current, counts=counts)
    if raw.result is None:
        why = raw.note or f"exit code {raw.returncode}"
        return Verdict("error", f"test process ended before pytest started ({why}): {_tail(stderr)}",
                       counts=counts)
    for err in res.get("collect_errors", []):
        return Verdict("error", f"collection failed: {_last_line(err.get('message', ''))}",
                       test=err.get("nodeid"), counts=counts)
    for kind in SEVERITY:
        if kind in ("cuda_error", "passed", "skipped"):
            continue
        hit = worst(kind)
        if hit:
            t = hit[1]
            msg = _first_line(t.get("message", "")) or t.get("exc_type", "")
            if t.get("exc_type") and not msg.startswith(t["exc_type"]):
                msg = f"{t['exc_type']}: {msg}"
            return Verdict(kind, msg, test=hit[0], counts=counts)
    hit = worst(None)  # type: ignore[arg-type]
    if hit:
        return Verdict("error", f"{hit[0]} did not finish (exit code {raw.returncode})", test=hit[0],
                       counts=counts)
    if counts.get("passed"):
        if raw.returncode not in (0, None):
            return Verdict("error", f"tests passed but pytest exited {raw.returncode}: {_tail(stderr)}",
                           counts=counts)
        return Verdict("passed", f"{counts['passed']} test(s) passed", counts=counts)
    skipped = worst("skipped")
    if skipped:
        return Verdict("skipped", _first_line(skipped[1].get("message", "")) or "all tests skipped",
                       test=skipped[0], counts=counts)
    if raw.returncode not in (0, 5, None):
        return Verdict("error", f"pytest exited {raw.returncode}: {_tail(stderr)}", counts=counts)
    return Verdict("skipped", "no tests collected", counts=counts)


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def _signal_from_code(n: int) -> str | None:
    import signal

    try:
        return signal.Signals(n).name
    except ValueError:
        return None
