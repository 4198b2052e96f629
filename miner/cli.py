"""`kernel-miner` command line: dispatches to miner/commands/<name>.py."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from types import ModuleType

from miner import __version__
from miner.errors import INTERRUPTED, MinerError, exit_code_table
from miner.reporter import Reporter

# Order is the pipeline's order; a command whose module is absent is simply not offered.
COMMANDS = ("extract", "build", "verify", "validate", "triage", "enrich", "mine", "import", "export", "report")

DESCRIPTION = """\
Mine CUDA/HIP __global__ kernels from source files or whole repositories into a dataset:
one folder per kernel with its exact source text and metadata, plus index.jsonl.

The short form used by the container entrypoint,
  kernel-miner --input-file roi_align_cuda_kernel.cuh --output-dir extracted/
is the same as `kernel-miner extract roi_align_cuda_kernel.cuh --output-dir extracted/`.

Exit codes:
""" + exit_code_table() + "\n"


def _load(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"miner.commands.{name}")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("miner.commands"):
            return None
        raise


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every other usage error
        self.exit(2, f"kernel-miner: error: {message}\n")


def build_parser(only: str | None = None) -> tuple[argparse.ArgumentParser, dict[str, ModuleType]]:
    """The parser with every command, or with `only` that one (its module alone is imported)."""
    parser = _Parser(prog="kernel-miner", description=DESCRIPTION,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"kernel-miner {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    modules: dict[str, ModuleType] = {}
    for name in COMMANDS if only is None else (only,):
        mod = _load(name)
        if mod is None:
            continue
        p = sub.add_parser(name, help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(p)
        modules[name] = mod
    return parser, modules


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # The container form has no sub-command: `kernel-miner --input-file F --output-dir D`.
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        argv = ["extract", *argv]
    # A known command loads its module only: importing all ten cost a cached rerun of `extract` a
    # second of its start-up. Top-level help and unknown commands still see every command.
    only = argv[0] if argv and argv[0] in COMMANDS else None
    parser, modules = build_parser(only)
    if only is not None and only not in modules:
        parser, modules = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(modules[args.command].run(args))
    except MinerError as exc:
        Reporter().error(exc.line())
        return exc.exit_code
    except KeyboardInterrupt:
        Reporter().error("interrupted", label="")
        return INTERRUPTED
    except BrokenPipeError:
        return 1
    except Exception as exc:  # noqa: BLE001 - the contract is one line, never a traceback
        if os.environ.get("KM_DEBUG"):
            raise
        Reporter().error(f"{type(exc).__name__}: {exc} (set KM_DEBUG=1 for a traceback)", label="internal error")
        return 1
