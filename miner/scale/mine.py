"""`kernel-miner mine`: extract, build and validate many repositories into one dataset, resumably.

Each stage of each repo runs as a job (worker.run_job: a child process with the repo's remaining time
budget); the driver alone writes the ledger and commits extractions (commit.py), so any executor gives
the same dataset. A rerun of the same command skips finished stages, finishes a commit that was cut
short and redoes a stage that was running when the run died.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miner import dataset
from miner.builder.toolchain import DEFAULT_ARCH
from miner.errors import UsageError
from miner.scale import commit, executor, worker
from miner.scale.ledger import Ledger
from miner.scale.repos import Repo, read_list

LOCK = ".mine.lock"


@dataclass
class MineOptions:
    repos: str
    out_dir: str
    build: bool = False
    validate: bool = False
    jobs: int = 1  # parser / nvcc / test processes inside one repo's stage
    workers: int = 1  # repos processed at once
    repo_timeout: float = 3600.0
    retry_failed: bool = False
    units: bool = True
    frontend: str = "auto"
    license_allow: list[str] | None = None
    executor: str = "local"
    ray_address: str | None = None
    arch: str = DEFAULT_ARCH
    nvcc: str | None = None
    build_timeout: float = 300.0
    batch_size: int = 12
    cache_dir: str | None = None
    validate_timeout: float = 120.0
    oracles: bool = True
    sandbox: bool = True
    dedupe: bool = True
    argv: list[str] = field(default_factory=list)

    @property
    def stages(self) -> list[str]:
        return ["extract"] + (["build"] if self.build else []) + (["validate"] if self.validate else [])


@dataclass
class MineReport:
    repos: int = 0
    done: int = 0
    failed: int = 0
    skipped: int = 0
    resumed: int = 0  # commits finished that a killed run had started
    kernels: int = 0
    new_kernels: int = 0
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    duplicates: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


@contextlib.contextmanager
def _run_lock(ds: Path) -> Iterator[None]:
    with open(ds / LOCK, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise UsageError(f"{ds}: another `kernel-miner mine` run is writing this dataset") from None
        yield


def _repo_license(repo: Repo) -> str | None:
    from miner.source.provenance import origin_of

    return origin_of(os.path.join(repo.key, ".km-probe"), repo.key).license


class _Run:
    def __init__(self, opts: MineOptions, ds: Path, ledger: Ledger,
                 progress: Callable[[str, int], Callable[[], None]]) -> None:
        self.opts, self.ds, self.ledger, self.progress = opts, ds, ledger, progress
        self.report = MineReport()
        self.used: dict[str, float] = {}  # seconds each repo's stages took in this run

    def _paths(self, repo: Repo, stage: str, attempt: int) -> tuple[Path, Path, Path]:
        base = self.ds / commit.STAGING / f"{repo.slug}.{stage}.{attempt}"
        return base, base.with_name(base.name + ".result.json"), self.ds / ".logs" / f"{repo.slug}.{stage}.log"

    def job(self, repo: Repo, stage: str, attempt: int) -> dict[str, Any]:
        o = self.opts
        staging, result, log = self._paths(repo, stage, attempt)
        return {
            "stage": stage, "repo": repo.key, "path": repo.key, "ds": str(self.ds.resolve()),
            "staging": str(staging.resolve()), "result": str(result.resolve()), "log": str(log.resolve()),
            "timeout": o.repo_timeout - self.used.get(repo.key, 0.0), "jobs": o.jobs, "units": o.units,
            "frontend": o.frontend, "attempt": attempt,
            "kernels": self.ledger.kernel_ids(repo.key) if stage != "extract" else [],
            "build": {"arch": o.arch, "nvcc": o.nvcc, "timeout": o.build_timeout, "batch_size": o.batch_size,
                      "cache_dir": o.cache_dir},
            "validate": {"timeout": o.validate_timeout, "oracles": o.oracles, "sandbox": o.sandbox},
        }

    def recover(self) -> None:
        """Finish the extractions a killed run left `committing`."""
        by_key = {r["key"]: r for r in self.ledger.repos()}
        for st in self.ledger.stages():
            if st["stage"] != "extract" or st["state"] != "committing":
                continue
            detail = json.loads(st["detail"] or "{}")
            staging = self.ds / commit.STAGING / detail.get("staging", "")
            try:
                result = json.loads(staging.with_name(staging.name + ".result.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                self.ledger.end_stage(st["repo"], "extract", "running", None, "commit lost its staging folder")
                continue
            if st["repo"] in by_key:
                commit.commit_extract(self.ds, self.ledger, st["repo"], staging, result)
                self.report.resumed += 1

    def next_stage(self, repo: Repo, after: str | None = None) -> str | None:
        """The first wanted stage (after `after`) that is not done, or None when the repo is done."""
        stages = self.opts.stages
        for stage in stages[stages.index(after) + 1 if after else 0:]:
            if self.ledger.stage(repo.key, stage).get("state") != "done":
                return stage
        return None

    def _license_blocks(self, repo: Repo) -> str | None:
        allow = self.opts.license_allow
        if not allow:
            return None
        lic = _repo_license(repo) or "unknown"
        if lic in allow:
            return None
        return f"license {lic} is not in --license-allow ({','.join(allow)})"

    def plan(self, repos: list[Repo]) -> list[tuple[Repo, str]]:
        todo = []
        for repo in repos:
            stage = self.next_stage(repo)
            if stage is None:
                self.report.done += 1
                continue
            st = self.ledger.stage(repo.key, stage)
            if st.get("state") == "skipped" and self._license_blocks(repo):
                self.report.skipped += 1
                continue
            if st.get("state") == "failed" and not self.opts.retry_failed:
                self.report.failed += 1
                self.report.failures.append(f"{repo.path}: {stage}: {st.get('error')} (--retry-failed retries)")
                continue
            todo.append((repo, stage))
        return todo

    def start(self, repo: Repo, stage: str) -> dict[str, Any] | None:
        """The job for this stage, or None when the stage ended without one (missing repo, licence)."""
        if stage == "extract":
            why = None if repo.exists else "not a directory"
            if why is None:
                why = self._license_blocks(repo)
                if why:
                    self.ledger.end_stage(repo.key, stage, "skipped", 0.0, why)
                    self.report.skipped += 1
                    return None
            if why:
                self.ledger.begin_stage(repo.key, stage)
                self.ledger.end_stage(repo.key, stage, "failed", 0.0, why)
                self._failed(repo, stage, why)
                return None
        attempt = self.ledger.begin_stage(repo.key, stage)
        if stage != "extract" and not self.ledger.kernel_ids(repo.key):
            self.ledger.end_stage(repo.key, stage, "done", 0.0, None, {"kernels": 0})
            return {}
        return self.job(repo, stage, attempt)

    def _failed(self, repo: Repo, stage: str, error: str) -> None:
        self.report.failed += 1
        self.report.failures.append(f"{repo.path}: {stage}: {error}")

    def finish(self, repo: Repo, job: dict[str, Any], res: dict[str, Any]) -> bool:
        """Record a finished job; True when the repo goes on to its next stage."""
        stage = job["stage"]
        self.used[repo.key] = self.used.get(repo.key, 0.0) + float(res.get("seconds") or 0.0)
        if res.get("status") != "ok":
            err = str(res.get("error") or "failed")
            self.ledger.end_stage(repo.key, stage, "failed", res.get("seconds"), err)
            self._failed(repo, stage, err)
            return False
        if stage == "extract":
            staging = Path(job["staging"])
            self.ledger.end_stage(repo.key, stage, "committing", res.get("seconds"), None,
                                  {"staging": staging.name})
            before = set(self.ledger.kernel_ids(repo.key))
            detail = commit.commit_extract(self.ds, self.ledger, repo.key, staging, res)
            self.report.new_kernels += len(set(self.ledger.kernel_ids(repo.key)) - before)
            for kid in detail["collisions"]:
                self.report.failures.append(f"{repo.path}: extract: kernel id {kid} already held by another repo")
            return True
        self._record_outcomes(repo)
        detail = {k: v for k, v in res.items() if k not in ("status", "seconds")}
        self.ledger.end_stage(repo.key, stage, "done", res.get("seconds"), None, detail)
        return True

    def _record_outcomes(self, repo: Repo) -> None:
        rows = []
        for kid in self.ledger.kernel_ids(repo.key):
            try:
                meta = dataset.load_metadata(self.ds / kid)
            except (OSError, ValueError):
                continue
            b = meta.get("build")
            v = meta.get("validation")
            build = None if not isinstance(b, dict) else ("ok" if b.get("pass_call") else
                                                          "failed" if b.get("units") else "none")
            rows.append((build, v.get("outcome") if isinstance(v, dict) else None, kid))
        self.ledger.set_kernel_outcomes(rows)

    def run(self, repos: list[Repo], ex: executor.Executor) -> None:
        todo = self.plan(repos)
        ticks = {s: self.progress(s, sum(1 for _, st in todo if self.opts.stages.index(st) <= i))
                 for i, s in enumerate(self.opts.stages)}
        pending = list(todo)
        running: dict[Any, tuple[Repo, dict[str, Any]]] = {}
        limit = max(1, self.opts.workers)
        while pending or running:
            while pending and len(running) < limit:
                repo, stage = pending.pop(0)
                job = self.start(repo, stage)
                if job is None:
                    self._skip_rest(ticks, stage)
                    continue
                if not job:  # nothing to do in this stage
                    ticks[stage]()
                    nxt = self.next_stage(repo, stage)
                    if nxt:
                        pending.insert(0, (repo, nxt))
                    else:
                        self.report.done += 1
                    continue
                running[ex.submit(job)] = (repo, job)
            if not running:
                continue
            handle, res = ex.wait_any(list(running))
            repo, job = running.pop(handle)
            stage = job["stage"]
            ticks[stage]()
            if not self.finish(repo, job, res):
                self._skip_rest(ticks, stage)
                continue
            nxt = self.next_stage(repo, stage)
            if nxt is None:
                self.report.done += 1
            else:
                pending.insert(0, (repo, nxt))  # finish a repo before starting another

    def _skip_rest(self, ticks: dict[str, Callable[[], None]], stage: str) -> None:
        for s in self.opts.stages[self.opts.stages.index(stage):]:
            ticks[s]()


def _dedupe(ds: Path, rep: MineReport) -> None:
    """Duplicate clusters over the whole dataset (a new repo may hold the original of an older one's copy)."""
    from miner.scale.dedupe import dedupe_dataset

    try:
        rep.duplicates = dedupe_dataset(ds)
    except UsageError as exc:
        rep.notes.append(f"duplicates not marked: {exc}")


def mine(opts: MineOptions, progress: Callable[[str, int], Callable[[], None]] | None = None) -> MineReport:
    t0 = time.monotonic()
    repos = read_list(opts.repos)
    ds = dataset.prepare_output(opts.out_dir)
    if opts.build:
        from miner.builder import find_nvcc

        find_nvcc(opts.nvcc)  # one clear error before any work, not one per repo
    with _run_lock(ds):
        ledger = Ledger(ds)
        try:
            run_id = ledger.start_run(opts.argv, opts.executor)
            ledger.add_repos((r.key, r.path) for r in repos)
            run = _Run(opts, ds, ledger, progress or (lambda stage, total: (lambda: None)))
            run.recover()
            commit.sweep(ds)
            ex = executor.make(opts.executor, opts.workers, opts.ray_address)
            try:
                run.run(repos, ex)
            except BaseException:
                worker.kill_active()
                raise
            finally:
                ex.close()
            commit.sort_index(ds, ledger)
            if opts.dedupe:
                _dedupe(ds, run.report)
            commit.sweep(ds)
            ledger.finish_run(run_id)
            rep = run.report
            rep.repos = len(repos)
            keys = {r.key for r in repos}
            rep.kernels = sum(1 for k in ledger.kernels() if k["repo"] in keys)
        finally:
            ledger.close()
    rep.seconds = time.monotonic() - t0
    return rep
