"""Run the enrichment stages over a dataset folder with a thread pool; every kernel ends recorded."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miner import dataset
from miner.dataset.atomic import write_json
from miner.enrich.budget import Budget, BudgetExhausted
from miner.enrich.cache import ResponseCache
from miner.enrich.client import AuthError, LLMClient, LLMError
from miner.enrich.config import EnrichConfig
from miner.enrich.records import KernelInput, Record, load_kernel, now
from miner.enrich.redact import Redactor
from miner.enrich.stages.analysis import run_analysis
from miner.enrich.stages.base import RunContext, StageFailure, read_json
from miner.enrich.stages.describe import run_describe
from miner.enrich.stages.tests import run_tests_stage
from miner.errors import InputError, UsageError
from miner.reporter import Reporter

SUMMARY_FILE = "enrich_run.json"


@dataclass
class RunSummary:
    kernels: dict[str, dict[str, str]] = field(default_factory=dict)
    stopped: str | None = None
    http_requests: int = 0
    cache_hits: int = 0
    budget: dict[str, Any] = field(default_factory=dict)

    def failed(self) -> list[str]:
        return [k for k, st in self.kernels.items() if any(v not in ("ok", "unverified") for v in st.values())]


class _Stop:
    """Set once by any worker (budget spent, key refused); the others finish their stage and stop."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.auth = False
        self._lock = threading.Lock()

    def set(self, reason: str, auth: bool = False) -> None:
        with self._lock:
            if self.reason is None:
                self.reason, self.auth = reason, auth


def _analysis_of(kin: KernelInput, record: Record) -> dict[str, Any] | None:
    if not record.done("analysis"):
        return None
    data = read_json(kin.enrich_dir / "analysis.json")
    return data.get("analysis") if data else None


def enrich_kernel(ctx: RunContext, kdir: Path, stop: _Stop) -> dict[str, str]:
    record = Record(kdir)
    try:
        kin = load_kernel(kdir)
    except ValueError as exc:
        for stage in ctx.cfg.stages:
            record.set_stage(stage, "failed", error=f"bad kernel folder: {exc}")
        return {s: "failed" for s in ctx.cfg.stages}
    for stage in ctx.cfg.stages:
        if stop.reason:
            break
        if record.done(stage) and not ctx.cfg.force:
            continue
        analysis = _analysis_of(kin, record) if stage != "analysis" else None
        if stage != "analysis" and analysis is None:
            record.set_stage(stage, "blocked", error="needs a successful analysis stage")
            continue
        try:
            if stage == "analysis":
                _, meta = run_analysis(ctx, kin)
                record.set_stage(stage, "ok", files=["enrich/analysis.json"], **meta)
            elif stage == "tests":
                info = run_tests_stage(ctx, kin, analysis or {})
                record.set_stage(stage, info.pop("status"), **info)
            else:
                meta = run_describe(ctx, kin, analysis or {})
                record.set_stage(stage, "ok", files=["enrich/description.json"], **meta)
        except StageFailure as exc:
            record.set_stage(stage, "failed", error=str(exc), model=ctx.cfg.model, **_prompt_meta(exc.meta))
        except LLMError as exc:
            if isinstance(exc, AuthError):
                stop.set(str(exc), auth=True)
            record.set_stage(stage, "failed", error=ctx.redact.text(str(exc)), model=ctx.cfg.model)
        except BudgetExhausted as exc:
            stop.set(f"budget exhausted: {exc}")
            record.set_stage(stage, "pending", error=f"not finished: {exc}")
        except Exception as exc:  # noqa: BLE001 - a bug on one kernel must not end the run
            record.set_stage(stage, "failed", error=ctx.redact.text(f"internal error: {type(exc).__name__}: {exc}"))
        ctx.log(f"{kdir.name}: {stage}: {record.stage(stage).get('status')}")
    return {s: str(record.stage(s).get("status", "pending")) for s in ctx.cfg.stages}


def _prompt_meta(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: meta[k] for k in ("prompt", "prompt_version", "prompt_tokens", "completion_tokens", "calls")
            if k in meta}


def run_enrich(root: Path, cfg: EnrichConfig, reporter: Reporter | None = None) -> RunSummary:
    """Enrich every selected kernel; progress lines (redacted) go to `reporter` (default: stderr)."""
    if not root.is_dir():
        raise InputError(f"{root}: not a directory")
    kernels = dataset.select_kernels(root, cfg.kernels, required=True)
    redactor = Redactor(cfg.api_key)
    out = reporter or Reporter()

    def say(msg: str) -> None:
        out.message(redactor.text(msg))

    budget = Budget(cfg.max_requests, cfg.max_tokens)
    client = LLMClient(cfg, ResponseCache(root / ".cache" / "llm"), budget, redactor)
    ctx = RunContext(cfg=cfg, client=client, redact=redactor, log=say)
    stop = _Stop()
    summary = RunSummary()
    lock = threading.Lock()
    summary_path = root / SUMMARY_FILE
    started = now()
    index = dataset.IndexRefresher(root)

    def save() -> None:
        write_json(summary_path, redactor.obj({
            "started": started, "updated": now(), "model": cfg.model, "stages": list(cfg.stages),
            "stopped": stop.reason, "http_requests": client.http_requests, "cache_hits": client.cache_hits,
            "budget": budget.summary(), "kernels": summary.kernels}))

    def work(kdir: Path) -> None:
        if stop.reason:
            status = {s: "pending" for s in cfg.stages}
        else:
            status = enrich_kernel(ctx, kdir, stop)
        with lock:
            summary.kernels[kdir.name] = status
            save()  # periodic save: after every kernel, so a kill loses at most the kernels in flight
            index.maybe()

    t0 = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=cfg.concurrency, thread_name_prefix="enrich") as pool:
            list(pool.map(work, kernels))
    finally:
        client.close()
        if kernels:
            index.now()  # index.jsonl carries each kernel's `enrichment` block too
    summary.stopped = stop.reason
    summary.http_requests = client.http_requests
    summary.cache_hits = client.cache_hits
    summary.budget = budget.summary()
    with lock:
        save()
    say(f"enrich: {len(kernels)} kernel(s), {len(summary.failed())} not complete, "
        f"{client.http_requests} HTTP request(s), {client.cache_hits} cache hit(s), "
        f"{budget.tokens} token(s), {time.monotonic() - t0:.1f} s")
    if stop.auth:
        raise UsageError(stop.reason or "authentication failed")
    return summary
