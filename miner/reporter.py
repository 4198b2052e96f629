"""The one owner of the terminal: progress bars, per-item lines, summaries, notes and errors.

Commands build one `Reporter` from their `-q`/`-v` options (`Reporter.from_args`) and hand it down;
library code never prints, it reports events here (`item` for one kernel's result, `note`, `message`),
so what appears at which level is decided in this module alone:

| call                   | stream | quiet | normal | verbose |
|------------------------|--------|-------|--------|---------|
| `error` / `note` / `warning` | stderr, `kernel-miner: <label>: ` | yes | yes | yes |
| `capped(lines, label)` | stderr, the first 10 and a count, all with -v | yes | yes | all |
| `message` (progress lines of long stages) | stderr | no | yes | yes |
| `info` (summaries), `item` (one per kernel) | stdout | no | yes | yes |
| `result` (the line a script reads) | stdout | yes | yes | yes |
| `detail` (lists), `detail_note` | stdout / stderr | no | no | yes |
| `progress(label)` bars (rich, transient) | stderr, only a terminal | no | yes | yes |
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator
from enum import IntEnum
from typing import Any, TextIO

PROG = "kernel-miner"
CAP = 10  # error lines shown without -v

Start = Callable[[int], Callable[[], None]]  # start(total) -> tick, one per stage
StageStart = Callable[[str, int], Callable[[], None]]  # start(stage, total) -> tick, one bar per stage


class Level(IntEnum):
    QUIET = 0
    NORMAL = 1
    VERBOSE = 2


class Reporter:
    def __init__(self, level: Level = Level.NORMAL, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.level = level
        # None: the streams of the moment (sys.stdout may be replaced after start-up, e.g. by a test's capture).
        self._out, self._err = out, err

    @classmethod
    def from_args(cls, args: Any) -> Reporter:
        """The level of a command's -q/-v options (absent options: normal)."""
        if getattr(args, "quiet", False):
            return cls(Level.QUIET)
        return cls(Level.VERBOSE if getattr(args, "verbose", False) else Level.NORMAL)

    @property
    def quiet(self) -> bool:
        return self.level <= Level.QUIET

    @property
    def verbose(self) -> bool:
        return self.level >= Level.VERBOSE

    def _write(self, text: str, err: bool) -> None:
        stream = (self._err or sys.stderr) if err else (self._out or sys.stdout)
        print(text, file=stream, flush=True)

    # -- stdout
    def result(self, text: str) -> None:
        self._write(text, err=False)

    def info(self, text: str) -> None:
        if not self.quiet:
            self._write(text, err=False)

    def detail(self, text: str) -> None:
        if self.verbose:
            self._write(text, err=False)

    def item(self, status: str, name: str, reason: str = "") -> None:
        """One finished item (a kernel's outcome): `status name  reason`."""
        self.info(f"{status:<12} {name}  {reason}")

    # -- stderr
    def error(self, text: str, label: str = "error") -> None:
        """`kernel-miner: <label>: text` on stderr (`kernel-miner: text` with an empty label)."""
        self._write(f"{PROG}: {label}: {text}" if label else f"{PROG}: {text}", err=True)

    def note(self, text: str) -> None:
        self.error(text, "note")

    def warning(self, text: str) -> None:
        self.error(text, "warning")

    def detail_note(self, text: str) -> None:
        if self.verbose:
            self.note(text)

    def message(self, text: str) -> None:
        if not self.quiet:
            self._write(text, err=True)

    def capped(self, lines: Iterable[str], label: str = "error") -> None:
        """`kernel-miner: <label>: line` per line; without -v the first CAP and a count of the rest."""
        lines = list(lines)
        shown = lines if self.verbose else lines[:CAP]
        for line in shown:
            self.error(line, label)
        if len(lines) > len(shown):
            self._write(f"{PROG}: ... and {len(lines) - len(shown)} more (-v lists all)", err=True)

    # -- progress
    def _bars(self) -> bool:
        return not self.quiet and (self._err or sys.stderr).isatty()

    @contextlib.contextmanager
    def progress(self, label: str) -> Iterator[Start]:
        """Yields `start(total) -> tick`; each stage calls start once and tick per item."""
        if not self._bars():
            yield lambda total: (lambda: None)
            return
        # Imported here: rich costs a run that shows no bar (a quiet rerun, a pipe) a fifth of a second.
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=Console(file=self._err or sys.stderr), transient=True) as bar:
            def start(total: int) -> Callable[[], None]:
                task = bar.add_task(label, total=total)
                return lambda: bar.advance(task)

            yield start

    @contextlib.contextmanager
    def stage_progress(self) -> Iterator[StageStart]:
        """Yields `start(stage, total) -> tick`: one bar per named stage, kept on screen (mine)."""
        if not self._bars():
            yield lambda stage, total: (lambda: None)
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("[bold]{task.description:<9}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=Console(file=self._err or sys.stderr)) as bar:
            def start(stage: str, total: int) -> Callable[[], None]:
                task = bar.add_task(stage, total=total)
                return lambda: bar.advance(task)

            yield start


def silent() -> Reporter:
    """What library calls without a reporter get: errors and notes only (as a -q run)."""
    return Reporter(Level.QUIET)
