"""`python -m miner.sandbox --work W --cwd C --policy JSON [--report R] -- ARGV...`: confine, then exec ARGV."""

from __future__ import annotations

import argparse
import json
import os
import sys

from miner.sandbox.confine import SandboxUnavailable, confine
from miner.sandbox.policy import Policy, environment


def main(argv: list[str]) -> None:
    if "--" not in argv:
        sys.stderr.write("usage: python -m miner.sandbox --work W --cwd C --policy JSON [--report R] -- ARGV...\n")
        os._exit(2)
    cut = argv.index("--")
    parser = argparse.ArgumentParser(prog="python -m miner.sandbox")
    parser.add_argument("--work", required=True)
    parser.add_argument("--cwd", required=True)
    parser.add_argument("--policy", default="{}")
    parser.add_argument("--report")
    args = parser.parse_args(argv[:cut])
    command = argv[cut + 1:]
    try:
        confine(args.work, Policy.from_json(json.loads(args.policy)))
    except SandboxUnavailable as exc:
        sys.stderr.write(f"kernel-miner: error: sandbox: {exc}\n")
        os._exit(71)
    os.chdir(args.cwd)
    kept = environment()  # also when started by hand (triage's repro.sh): no API keys go further
    kept.update({k: os.environ[k] for k in ("HOME", "TMPDIR") if k in os.environ})  # set by confine
    os.environ.clear()
    os.environ.update(kept)
    if args.report:
        os.environ["KM_SANDBOX_REPORT"] = args.report
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"kernel-miner: error: sandbox: cannot run {command[0]}: {exc}\n")
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
