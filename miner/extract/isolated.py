"""libclang parses in child processes, each with a time limit.

libclang runs in the process that calls it: a segfault or an abort inside it (it has both on unusual
input), a kernel's out-of-memory kill of a worker, or a parse that never ends used to take the whole
extract with it. With `multiprocessing.Pool` a dead worker's task is never answered, so the run hung; in
the main process the run died with no output. Through `pebble.ProcessPool` each parse is a task that
fails alone: its file is reported like one libclang cannot parse (tree-sitter reads its kernels) and the
pool starts a fresh worker for the rest."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from collections.abc import Callable, Iterator
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import as_completed
from typing import Any, TypeVar

import pebble

from miner.errors import UsageError

T = TypeVar("T")
R = TypeVar("R")

# A parse (with its analysis and the instantiating re-parses) longer than this is taken for a hang. The
# heaviest translation units of the corpora take a few minutes on a loaded two-core machine.
DEFAULT_TIMEOUT_S = 900.0
_LOST = ("the parse crashed", "the parse took longer than")


def parse_timeout() -> float:
    """Seconds one translation unit's parse may take: KM_PARSE_TIMEOUT, else DEFAULT_TIMEOUT_S."""
    raw = os.environ.get("KM_PARSE_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise UsageError(f"KM_PARSE_TIMEOUT must be a positive number of seconds, not {raw!r}")
    return value


def lost(error: str | None) -> bool:
    """Whether a parse's error says it crashed or ran out of time (not the file's fault alone: not cached)."""
    return bool(error) and error.startswith(_LOST)


def _why(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, FutureTimeout):
        return f"the parse took longer than {timeout:g} s (KM_PARSE_TIMEOUT)"
    code = getattr(exc, "exitcode", None)
    if isinstance(code, int) and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the parse crashed ({name})"
    return f"the parse crashed (exit code {code})"


def run(fn: Callable[[T], R], items: list[T], workers: int, failed: Callable[[T, str], R],
        initializer: Callable[..., Any] | None = None, initargs: tuple[Any, ...] = ()) -> Iterator[tuple[int, R]]:
    """(index, result) of `fn(item)` for each item, in the order they finish, each in a worker process (forked:
    the workers share what the parent has loaded) under `parse_timeout()`. An item whose worker dies or runs
    out of time gives `failed(item, why)`."""
    if not items:
        return
    timeout = parse_timeout()
    with pebble.ProcessPool(max_workers=max(1, min(workers, len(items))), initializer=initializer,
                            initargs=initargs, context=mp.get_context("fork")) as pool:
        futures = {pool.schedule(fn, args=(item,), timeout=timeout): i for i, item in enumerate(items)}
        for fut in as_completed(futures):
            i = futures[fut]
            try:
                yield i, fut.result()
            except (pebble.ProcessExpired, FutureTimeout) as exc:
                yield i, failed(items[i], _why(exc, timeout))


def call(fn: Callable[[T], R], item: T, failed: Callable[[T, str], R]) -> R:
    """`fn(item)` in one worker process, as `run` does for a list."""
    return next(run(fn, [item], 1, failed))[1]
