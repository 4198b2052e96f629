"""Units to results: cache hits first, the rest planned into batches of units with the same includes
and compiled in parallel; a failed batch is split (the members its log blames are compiled alone, the
rest together again) or, when its log blames nobody, bisected."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from miner.builder.batch import attribute, batch_source, split_log
from miner.builder.cache import Cache
from miner.builder.compiler import Compiler
from miner.builder.diagnostics import is_undefined_name, missing_include, missing_symbol, parse_errors
from miner.builder.ptxas import pick_resources
from miner.builder.toolchain import BuildOptions
from miner.builder.toolchains.base import Toolchain
from miner.builder.toolchains.nvcc import Nvcc
from miner.builder.unit_split import Unit
from miner.cuda_libs import Found
from miner.dataset import atomic

LOG_LIMIT = 20_000


def _apart_by_c_symbols(units: list[Unit]) -> list[list[Unit]]:
    """`units` in as few batches as keep apart two units that define one C-linkage name (the same
    `extern "C"` kernel or helper, rendered for two kernels of one file): its namespace does not tell
    two such definitions apart, so one batch holding both would not compile."""
    out: list[tuple[list[Unit], set[str]]] = []
    for u in units:
        names = set(u.c_symbols)
        home = next((b for b in out if not names & b[1]), None)
        if home is None:
            out.append(([], set()))
            home = out[-1]
        home[0].append(u)
        home[1].update(names)
    return [b for b, _ in out]


@dataclass
class Result:
    """One unit's outcome, as the cache keeps it and the metadata records it."""

    status: str                       # ok | failed | timeout | skipped
    seconds: float = 0.0
    cached: bool = False
    error: str | None = None
    missing_symbol: str | None = None
    missing_include: str | None = None
    resources: dict[str, Any] | None = None
    object: str | None = None         # cache-relative .so
    log: str = ""
    batch_size: int = 1
    timeout: float | None = None

    def cache_record(self) -> dict[str, Any]:
        rec = {k: v for k, v in self.__dict__.items() if k != "cached"}
        rec["log"] = rec["log"][-LOG_LIMIT:]
        return rec


class Builder:
    def __init__(self, nvcc: str | Toolchain, opts: BuildOptions, cache: Cache,
                 tick: Callable[[int], None] | None = None) -> None:
        self.opts = opts
        self.toolchain = nvcc if isinstance(nvcc, Toolchain) else Nvcc(nvcc)
        self.flags = self.toolchain.flags(opts)
        self.compiler = Compiler(self.toolchain.path, [*self.toolchain.invocation(), *self.flags], opts.timeout,
                                 self.toolchain.env())
        self.cache = cache
        self.tick = tick or (lambda n: None)
        self.results: dict[str, Result] = {}

    # Each task compiles one group and returns follow-up groups (a failed batch's pieces).
    def _single(self, u: Unit) -> list[tuple[list[Unit], bool]]:
        tmp = self.cache.tmpdir()
        try:
            out = tmp / "unit.so"
            c = self.compiler.compile(u.rel, out, u.kernel_dir, tmp,
                                      [*self.toolchain.unit_flags(u.flags), *u.compile_flags])
            if c.rc is None:
                what = f"{self.toolchain.compiler} timed out after {self.opts.timeout:g} s"
                r = Result("timeout", c.seconds, error=what,
                           log=c.log, timeout=self.opts.timeout)
            elif c.rc == 0 and out.is_file():
                obj = self.cache.store_object(out, u.key)
                res = pick_resources(self.toolchain.parse_resources(c.log), u.kernel_name)
                r = Result("ok", c.seconds, resources=res, object=obj, log=c.log)
            else:
                diags = parse_errors(c.log)
                exit_line = f"{self.toolchain.compiler} exit {c.rc}"
                first = diags[0].text if diags else (c.log.strip().splitlines() or [exit_line])[-1]
                r = Result("failed", c.seconds, error=first, missing_symbol=missing_symbol(diags),
                           missing_include=missing_include(diags), log=c.log)
            self._finish(u, r)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return []

    def _batch(self, units: list[Unit]) -> list[tuple[list[Unit], bool]]:
        tmp = self.cache.tmpdir()
        try:
            src = tmp / f"batch{self.toolchain.source_suffix}"
            atomic.write_text(src, batch_source(units))
            out = tmp / "batch.so"
            c = self.compiler.compile(str(src), out, tmp, tmp,  # the batch's flags: _plan groups by them
                                      [*self.toolchain.unit_flags(units[0].flags), *units[0].compile_flags])
            if c.rc == 0 and out.is_file():
                bkey = hashlib.sha256("".join(u.key for u in units).encode()).hexdigest()
                obj = self.cache.store_object(out, bkey)
                entries = self.toolchain.parse_resources(c.log)
                share = c.seconds / len(units)
                for i, u in enumerate(units):
                    # A C-linkage kernel's symbol is its plain name, outside the batch namespace.
                    own = {k: v for k, v in entries.items() if f"km_b{i}_" in k or v["kernel"] in u.c_symbols}
                    self._finish(u, Result("ok", share, resources=pick_resources(own, u.kernel_name),
                                           object=obj, batch_size=len(units)))
                return []
            bad = set() if c.rc is None else attribute(c.log, units)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if c.rc is None:
            # Bisecting would wait out the limit once per level: each unit alone waits it once.
            return [([u], False) for u in units]
        if bad:
            done = self._own_failures(c.log, units, bad, c.seconds)
            rest = [u for i, u in enumerate(units) if i not in bad]
            alone = [([units[i]], False) for i in sorted(bad - done)]
            return alone + ([(rest, len(rest) > 1)] if rest else [])
        half = len(units) // 2
        return [(g, len(g) > 1) for g in (units[:half], units[half:])]

    def _own_failures(self, log: str, units: list[Unit], bad: set[int], seconds: float) -> set[int]:
        """Batch members whose failure needs no solo compile to be known as their own.

        A unit whose first error says a name is undefined fails the same way alone: a batch only
        adds other units' namespaced declarations, never removes one. Anything less clear, or any
        member after one whose errors may have derailed the parser, is compiled alone.
        """
        owned, stray = split_log(log, units)
        if stray:
            return set()
        done: set[int] = set()
        for i in sorted(bad):
            diags = parse_errors(owned.get(i, ""))
            if not (diags and diags[0].file == units[i].rel and is_undefined_name(diags[0].message)):
                break
            self._finish(units[i], Result("failed", seconds / len(units), error=diags[0].text,
                                          missing_symbol=missing_symbol(diags[:1]), log=owned[i],
                                          batch_size=len(units)))
            done.add(i)
            # A syntax error can derail the parser into the next member: trust nothing after one.
            if "parsing restarts" in owned[i] or not all(is_undefined_name(d.message) for d in diags):
                break
        return done

    def _finish(self, u: Unit, r: Result) -> None:
        self.cache.put(u.key, r.cache_record())
        self.results[u.key] = r
        self.tick(1)

    def run(self, units: list[Unit]) -> dict[str, Result]:
        todo: list[Unit] = []
        queued: set[str] = set()
        for u in units:
            if u.missing_header:
                # nvcc would stop at the #include; say what is missing and what provides it instead.
                msg = Found(u.missing_header, "missing").missing_message()
                self.results[u.key] = Result("failed", error=msg, missing_include=u.missing_header, log=msg + "\n")
                self.tick(1)
                continue
            rec = None if self.opts.force else self.cache.get(u.key)
            if rec is not None and rec.get("status") == "timeout" and (rec.get("timeout") or 0) < self.opts.timeout:
                rec = None  # a longer limit may let it finish
            cached = None
            if rec is not None:
                rec.pop("cached", None)
                try:
                    cached = Result(**{**rec, "cached": True})
                except TypeError:  # a record this version does not understand: compile again
                    cached = None
            if cached is not None:
                self.results[u.key] = cached
                self.tick(1)
            elif u.key not in queued:
                queued.add(u.key)
                todo.append(u)
        groups = self._plan(todo)
        with ThreadPoolExecutor(max_workers=max(1, self.opts.jobs)) as pool:
            pending: set[Future[list[tuple[list[Unit], bool]]]] = set()

            def submit(group: list[Unit], batched: bool) -> None:
                fn = (lambda: self._batch(group)) if batched and len(group) > 1 else (lambda: self._single(group[0]))
                pending.add(pool.submit(fn))

            try:
                for g in groups:
                    submit(g, len(g) > 1)
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for f in done:
                        pending.discard(f)
                        for g, batched in f.result():
                            submit(g, batched)
            except BaseException:
                # nvcc runs in its own session, so Ctrl-C does not reach it: stop it here.
                for f in pending:
                    f.cancel()
                self.compiler.kill_all()
                raise
        return self.results

    def _plan(self, todo: list[Unit]) -> list[list[Unit]]:
        """Batches of units with the same includes and the same project flags: a header one unit lacks
        must not be lent to it by a neighbour, or the unit would pass in its batch and fail on its own;
        and one command line serves the whole batch."""
        singles = [[u] for u in todo if not u.batchable]
        # Same compile flags too: one nvcc command line serves a batch (project flags, a wheel's include dir).
        groups: dict[tuple[frozenset[str], tuple[str, ...], tuple[str, ...]], list[Unit]] = {}
        for u in todo:
            if u.batchable:
                groups.setdefault((frozenset(u.includes), tuple(u.compile_flags), tuple(u.flags)), []).append(u)
        batches: list[list[Unit]] = []
        for members in groups.values():
            n = -(-len(members) // max(1, self.opts.batch_size))
            size = -(-len(members) // n)
            for i in range(0, len(members), size):
                batches += _apart_by_c_symbols(members[i:i + size])
        # Enough batches to keep every job busy.
        while len(batches) < self.opts.jobs and max((len(b) for b in batches), default=0) > 1:
            big = max(batches, key=len)
            batches.remove(big)
            batches += [big[:len(big) // 2], big[len(big) // 2:]]
        batches.sort(key=len, reverse=True)  # long ones first: the tail of the run stays short
        return batches + singles
