"""`kernel-miner enrich DIR`: LLM analysis, generated tests (with a repair loop) and descriptions."""

from __future__ import annotations

import argparse
from pathlib import Path

from miner.commands import options
from miner.commands._common import add_kernels
from miner.errors import UsageError

HELP = "analyse, test and describe each kernel with an LLM (any OpenAI-compatible endpoint)"
DESCRIPTION = """\
For every kernel folder in DIR: (1) an analysis of what the kernel computes (enrich/analysis.json),
(2) a generated pytest file (tests/test_generated.py) checked statically, run in a child process and
repaired up to --max-attempts times (history in enrich/attempts.json), (3) a complete structured
description and an instruct description derived from it by rules (enrich/description.json).

The key and endpoint come from OPENAI_API_KEY / OPENAI_BASE_URL or from a TOML --config file
(keys: api_key, base_url, model, concurrency, ..., optionally under an [enrich] table). Answers are
cached in DIR/.cache/llm, so a rerun repeats no request; finished stages are skipped unless --force.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", metavar="DIR", help="dataset folder written by `kernel-miner extract`")
    parser.add_argument("--model", help="model name (default gpt-4o-mini, or OPENAI_MODEL)")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1")
    parser.add_argument("--config", help="TOML file with the same settings (and api_key)")
    parser.add_argument("--concurrency", type=int, help="kernels enriched at once (default 4)")
    parser.add_argument("--max-attempts", type=int, help="test candidates per kernel, repairs included (default 3)")
    parser.add_argument("--stages", help="comma-separated subset of analysis,tests,describe (default all)")
    parser.add_argument("--max-requests", type=int, help="stop cleanly after this many HTTP requests")
    parser.add_argument("--max-tokens", type=int, help="stop cleanly once this many tokens were used")
    parser.add_argument("--completion-tokens", type=int, help="max_tokens of one answer (default 4096)")
    parser.add_argument("--timeout", type=float, help="seconds per HTTP request (default 120)")
    parser.add_argument("--test-timeout", type=float, help="seconds per generated-test run (default 300)")
    add_kernels(parser, "enrich")
    parser.add_argument("--force", action="store_true", default=None, help="redo stages already finished")
    parser.add_argument("--no-sandbox", dest="sandbox", action="store_false", default=None,
                        help="run generated tests with your own rights, not in the sandbox (docs/enrich.md)")


def run(args: argparse.Namespace) -> int:
    # Imported here so `kernel-miner --help` works without the optional `llm` extra installed.
    try:
        from miner.enrich.pipeline import run_enrich
    except ModuleNotFoundError as exc:
        raise UsageError(f"enrich needs the llm extra ({exc.name} missing): pip install 'kernel-miner[llm]'") from None
    cfg = options.enrich_options(args)
    rep = options.reporter(args)
    summary = run_enrich(Path(args.dir), cfg, rep)
    if summary.stopped:
        rep.warning(f"stopped early: {summary.stopped}; rerun to continue")
    return 1 if summary.failed() else 0
