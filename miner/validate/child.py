"""Entry point of one kernel's test process: run pytest with the result plugin, then exit hard.

`python -m miner.validate.child RESULT_FILE -- PYTEST_ARGS...`. Exiting with os._exit skips
interpreter teardown, where a CUDA context poisoned by an earlier error tends to abort the
process and turn a clean `cuda_error` into a misleading crash.
"""

from __future__ import annotations

import os
import sys
import time

_STARTED = time.time()


def run(result_file: str, pytest_args: list[str]) -> int:
    os.environ["KM_RESULT_FILE"] = result_file
    os.environ.setdefault("KM_CHILD_START", repr(_STARTED))
    from miner.sandbox import audit

    audit.install_from_env()  # in a sandbox: report what the tests try (writes outside, network)
    import pytest

    code = pytest.main(["-p", "miner.validate.plugin", *pytest_args])
    return int(code)


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] != "--":
        sys.stderr.write("usage: python -m miner.validate.child RESULT_FILE -- PYTEST_ARGS...\n")
        os._exit(2)
    code = 70
    try:
        code = run(argv[0], argv[2:])
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
