"""pytest plugin loaded into every test process: writes what happened to a JSON result file.

The file is rewritten (atomically) at the start and end of every test, so when the process dies
the parent still knows which test was running and how the earlier ones ended. Without
KM_RESULT_FILE in the environment the plugin records nothing (plain `pytest -p ...` reruns).

It also runs the oracles (miner/validate/oracles/) after every passing test unless KM_ORACLES=0:
the launches the test made are replayed, and a failed oracle fails the test with its message.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

import pytest

from miner import lazy_re
from miner.dataset.atomic import write_json

_CUDA_ERROR = lazy_re.compile(
    r"CUDA error|cudaError|CUDA_ERROR|illegal memory access|illegal address|device-side assert|"
    r"unspecified launch failure|illegal instruction|misaligned address|CUBLAS_STATUS|"
    r"an error was encountered while running the kernel", re.I)
_NO_GPU = lazy_re.compile(
    r"Found no NVIDIA driver|Torch not compiled with CUDA enabled|No CUDA GPUs are available|"
    r"no CUDA-capable device|CUDA driver version is insufficient|cudaErrorNoDevice|"
    r"cudaErrorInsufficientDriver", re.I)
# Worst first: a test's phases (setup, call, teardown) and a kernel's tests keep the worst.
SEVERITY = ["cuda_error", "build_failed", "failed", "error", "passed", "skipped"]


def classify_exception(exc: BaseException, when: str) -> str:
    name = type(exc).__name__
    text = f"{name}: {exc}"
    if name == "BuildError":
        return "build_failed"
    if getattr(exc, "no_gpu", False) or _NO_GPU.search(text):
        return "skipped"
    if name in ("CudaLaunchError", "AcceleratorError") or _CUDA_ERROR.search(text):
        return "cuda_error"
    if when == "call" and isinstance(exc, AssertionError | pytest.fail.Exception):
        return "failed"
    return "error"


def worse(a: str | None, b: str) -> str:
    if a is None:
        return b
    return a if SEVERITY.index(a) <= SEVERITY.index(b) else b


class ResultRecorder:
    def __init__(self, path: str) -> None:
        self.path = path
        self.state: dict[str, Any] = {
            "child_start": float(os.environ.get("KM_CHILD_START", time.time())),
            "session_start": None,
            "session_end": None,
            "current": None,
            "tests": {},
            "collect_errors": [],
            "exitstatus": None,
        }
        self.flush()

    def flush(self) -> None:
        from miner import harness

        self.state["harness"] = harness.RECORDS
        write_json(self.path, self.state)

    def pytest_sessionstart(self, session: Any) -> None:
        self.state["session_start"] = time.time()

    def pytest_collection_finish(self, session: Any) -> None:
        self.state["collected_at"] = time.time()

    def pytest_collectreport(self, report: Any) -> None:
        if report.skipped:  # a module-level skip (e.g. harness.require_gpu()) stands for its tests
            self.state["tests"][report.nodeid] = {"outcome": "skipped", "duration": 0.0,
                                                  "message": _text(report.longrepr)[:500]}
            self.flush()
        elif report.failed:
            self.state["collect_errors"].append(
                {"nodeid": report.nodeid, "message": _text(report.longrepr)[-2000:]})
            self.flush()

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.state["current"] = nodeid
        self.flush()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: Any, call: Any) -> Any:
        outcome = yield
        rep = outcome.get_result()
        entry = self.state["tests"].setdefault(item.nodeid, {"outcome": None, "duration": 0.0})
        entry["duration"] += float(getattr(rep, "duration", 0.0))
        if rep.skipped and call.excinfo is not None and call.excinfo.errisinstance(pytest.skip.Exception):
            entry["outcome"] = worse(entry["outcome"], "skipped")
            entry.setdefault("message", str(call.excinfo.value)[:500])
        elif rep.failed and call.excinfo is not None:
            kind = classify_exception(call.excinfo.value, rep.when)
            if entry["outcome"] is None or SEVERITY.index(kind) < SEVERITY.index(entry["outcome"]):
                entry.update(exc_type=call.excinfo.typename, when=rep.when,
                             message=str(call.excinfo.value)[:2000])
            entry["outcome"] = worse(entry["outcome"], kind)
        elif rep.failed:
            entry["outcome"] = worse(entry["outcome"], "error")
            entry.setdefault("message", _text(rep.longrepr)[-2000:])
        elif rep.when == "call":
            entry["outcome"] = worse(entry["outcome"], "skipped" if rep.skipped else "passed")

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self.state["current"] = None
        self.flush()

    def pytest_sessionfinish(self, session: Any, exitstatus: Any) -> None:
        self.state["session_end"] = time.time()
        self.state["exitstatus"] = int(exitstatus)
        self.flush()


def _text(longrepr: Any) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


class OracleRunner:
    """Records each test's launches and, once the test body passed, runs the oracles on them."""

    def __init__(self) -> None:
        from miner import harness
        from miner.validate import oracles

        self.oracles = oracles
        self.recorder = oracles.Recorder()
        harness.set_launch_hook(self.recorder)

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        from miner import harness

        harness.RECORDS["current_test"] = nodeid
        self.recorder.start()

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_call(self, item: Any) -> None:
        # Runs after the test function returned (pytest's own runtest_call raised otherwise).
        from miner import harness

        launches = self.recorder.take()
        self.recorder.active = False  # the oracles' own launches are not recorded
        marker = item.get_closest_marker("no_oracles")
        enabled = list(self.oracles.ORACLES)
        if marker is not None:
            enabled = [o for o in enabled if marker.args and o not in marker.args]
        if not launches or not enabled:
            return
        results = self.oracles.run(launches, item.nodeid, enabled)
        for entry in results:
            harness.record_oracle(entry)
        failed = [e for e in results if e.get("ok") is False]
        if failed:
            raise AssertionError(self.oracles.failure_message(failed[0]))

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self.recorder.start()  # drop the copies


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "no_oracles(*names): do not run these oracles (default: all) "
                                       "on this test's launches")
    path = os.environ.get("KM_RESULT_FILE")
    if path and not config.pluginmanager.has_plugin("km-result-recorder"):
        config.pluginmanager.register(ResultRecorder(path), "km-result-recorder")
    from miner import harness

    if harness.oracles_enabled() and not config.pluginmanager.has_plugin("km-oracles"):
        config.pluginmanager.register(OracleRunner(), "km-oracles")


@pytest.fixture
def km_kernel_dir(request: Any) -> Any:
    """The kernel folder under test (the parent of the test file's folder)."""
    return request.path.parent.parent


@pytest.fixture
def km_unit(km_kernel_dir: Any) -> Any:
    """The kernel's first instantiation, loaded; skips where no CUDA GPU is usable."""
    from miner import harness

    harness.require_gpu()
    return harness.load_unit(km_kernel_dir)
