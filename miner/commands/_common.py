"""Options several commands share, declared and checked one way so their help and errors read alike.

Not a command: miner/cli.py loads only the names in its COMMANDS list.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from miner.errors import UsageError


def add_output_level(parser: argparse.ArgumentParser, verbose_help: str) -> None:
    """-q/--quiet (errors only) and -v/--verbose, which exclude each other."""
    g = parser.add_mutually_exclusive_group()
    g.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    g.add_argument("-v", "--verbose", action="store_true", help=verbose_help)


def add_kernels(parser: argparse.ArgumentParser, verb: str) -> None:
    """--kernels, repeatable and comma-separated; kernel_patterns() reads it, dataset.select() applies it."""
    parser.add_argument("--kernels", action="append", metavar="ID|NAME|GLOB",
                        help=f"{verb} only these kernels: ids, kernel names or glob patterns "
                             f"(repeatable, comma-separated; default: all)")


def kernel_patterns(values: Iterable[str] | None) -> list[str]:
    """The --kernels values, split on commas, blanks dropped."""
    return [s.strip() for item in values or () for s in item.split(",") if s.strip()]


def check_numbers(args: argparse.Namespace, *, at_least_one: Iterable[str] = (),
                  positive: Iterable[str] = ()) -> None:
    """`--jobs must be at least 1`, `--timeout must be positive` (NaN is not), for the named options."""
    for name in at_least_one:
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
    for name in positive:
        value = getattr(args, name)
        if not value > 0:  # NaN included
            raise UsageError(f"--{name.replace('_', '-')} must be positive")
