"""The dataset card (README.md) of an export: schema, counts, licenses and how the data was made."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from miner import __version__
from miner.scale.ledger import LEDGER


def _table(head: tuple[str, ...], rows: list[tuple[Any, ...]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _counts(d: dict[str, int]) -> list[tuple[str, int]]:
    return sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))


def _ledger_facts(ds: Path) -> tuple[list[str], list[tuple[str, str, int]]]:
    """The commands that made the dataset and the stage outcomes per stage, from a `mine` ledger."""
    path = ds / LEDGER
    if not path.is_file():
        return [], []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        runs = [" ".join(json.loads(a or "[]")) for (a,) in db.execute("SELECT argv FROM runs ORDER BY id")]
        stages = [(s, st, n) for s, st, n in db.execute(
            "SELECT stage, state, COUNT(*) FROM stages GROUP BY stage, state ORDER BY stage, state")]
    except sqlite3.Error:
        return [], []
    finally:
        db.close()
    return list(dict.fromkeys(r for r in runs if r)), stages


def write_card(ds: Path, rep: Any, fmt: str, license_allow: list[str] | None, drop_duplicates: bool) -> str:
    from miner.scale.export import COLUMNS

    licenses = _counts(rep.licenses)
    spdx = [lic.lower() for lic, _ in licenses if lic != "unknown"]
    header = {
        "license": spdx[0] if len(spdx) == 1 and len(licenses) == 1 else "other",
        "pretty_name": "CUDA kernels mined by kernel-miner",
        "tags": ["code", "cuda", "gpu-kernels"],
        "configs": [{"config_name": "default", "data_files": [{"split": "train", "path": f"data/train-*.{fmt}"}]}],
    }
    yaml = ["---", f"license: {header['license']}", f"pretty_name: {header['pretty_name']}", "tags:"]
    yaml += [f"- {t}" for t in header["tags"]]
    yaml += ["configs:", "- config_name: default", "  data_files:", "  - split: train",
             f"    path: data/train-*.{fmt}", "---", ""]
    stats = rep.stats
    repos = stats.get("repo", {})
    dup = stats.get("duplicate_kind", {})
    parts = [
        "\n".join(yaml),
        "# CUDA kernels mined by kernel-miner\n",
        f"{rep.rows} `__global__` kernels from {len(repos)} source repositories, one row per kernel: the exact "
        "definition text, its standalone units (closure + kernel + explicit instantiation + `extern \"C\"` "
        "launcher, compilable with nvcc alone), build and validation outcomes, duplicate clusters and the "
        "full metadata.\n",
        "## Load\n",
        "```python\nfrom datasets import load_dataset\n\n"
        f"ds = load_dataset(\"{'json' if fmt == 'jsonl' else 'parquet'}\", "
        f"data_files=\"data/train-*.{fmt}\", split=\"train\")\n```\n",
        "## Counts\n",
        _table(("what", "value", "kernels"),
               [("licenses", lic, n) for lic, n in licenses]
               + [("frontend", k, n) for k, n in _counts(stats.get("frontend", {}))]
               + [("built (any unit compiled)", k, n) for k, n in _counts(stats.get("build_ok", {}))]
               + [("validation", k, n) for k, n in _counts(stats.get("validation", {}))]
               + [("duplicate", {"null": "original"}.get(k, k), n) for k, n in _counts(dup)]) + "\n",
        "Per repository:\n",
        _table(("repository", "kernels"), _counts(repos)) + "\n",
        "## Schema\n",
        _table(("column", "type", "meaning"), [(f"`{c}`", t, d) for c, t, d in COLUMNS]) + "\n",
        "`metadata` holds everything else the stages recorded (parameters, launches, instantiations, closure, "
        "resource usage, validation details); its JSON schema is `metadata/kernel.schema.json` of kernel-miner.\n",
        "## Licenses\n",
        "Each row keeps the SPDX id of its repository's license file (`license`; null where none was found). "
        "The kernels are the original authors' code under those licenses; check them before redistribution."
        + (f" This export admits only: {', '.join(license_allow)}"
           f" ({rep.skipped_license} kernels left out)." if license_allow else "") + "\n",
        "## How it was made\n",
        f"kernel-miner {__version__}: kernels found by libclang (with tree-sitter-cuda for inactive `#if` "
        "branches), closed over their dependencies into standalone units, compiled with nvcc and tested on a GPU "
        "where the stages ran. Duplicates: exact (sha256 of the text without comments and whitespace) and near "
        "(MinHash over token 5-grams, LSH, Jaccard >= 0.8); the first kernel of a cluster in dataset order is the "
        "original." + (f" Duplicates were dropped ({rep.skipped_duplicates})." if drop_duplicates else "") + "\n",
    ]
    runs, stages = _ledger_facts(ds)
    if runs:
        parts.append("Commands (from the run ledger):\n\n```\n" + "\n".join(f"kernel-miner {r}" for r in runs)
                     + "\n```\n")
    if stages:
        parts.append(_table(("stage", "state", "repositories"), stages) + "\n")
    return "\n".join(parts)
