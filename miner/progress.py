"""A progress bar on stderr for long runs; silent when quiet or not a terminal."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def progress_bar(label: str, disable: bool = False) -> Iterator[Callable[[int], Callable[[], None]]]:
    """Yields `start(total) -> tick`; each stage calls start once and tick per item."""
    if disable or not sys.stderr.isatty():
        yield lambda total: (lambda: None)
        return
    # Imported here: rich costs a run that shows no bar (a quiet rerun, a pipe) a fifth of a second.
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        def start(total: int) -> Callable[[], None]:
            task = bar.add_task(label, total=total)
            return lambda: bar.advance(task)

        yield start
