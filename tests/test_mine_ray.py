"""`kernel-miner mine --executor ray` writes the same dataset, byte for byte, as the local executor.

The Ray test starts a head node of its own (`ray start --head --block`, CPU only, fixed free ports: with
ports picked at random the raylet waits 15 s at most for its agents, which a loaded 2-core machine
misses) and stops it by its process group. The fast test checks the property Ray relies on without Ray:
results that arrive in another order give the same bytes.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPOS_FIXTURE, run_miner, snapshot


@pytest.fixture()
def repos(tmp_path: Path) -> Path:
    shutil.copytree(REPOS_FIXTURE, tmp_path / "repos")
    (tmp_path / "repos" / "plain").mkdir()  # no kernels: recorded as done with none
    (tmp_path / "repos" / "plain" / "x.cu").write_text("int main() { return 0; }\n")
    return tmp_path / "repos"


def _same(a: Path, b: Path) -> None:
    sa, sb = snapshot(a), snapshot(b)
    assert len([k for k in sa if k.endswith("/metadata.json")]) == 7
    assert sorted(sa) == sorted(sb)
    assert [k for k in sa if sa[k] != sb[k]] == []


def test_results_in_another_order_give_the_same_bytes(repos: Path, tmp_path: Path) -> None:
    fast = ["--frontend", "treesitter", "--no-units", "-j", "1", "-q"]
    one = run_miner("mine", repos, "-o", tmp_path / "one", *fast)
    two = run_miner("mine", repos, "-o", tmp_path / "two", *fast, "--workers", "3")
    assert one.returncode == two.returncode == 0, one.stderr + two.stderr
    _same(tmp_path / "one", tmp_path / "two")


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _start_head(ray_bin: str, env: dict[str, str], temp: str) -> tuple[subprocess.Popen[bytes], str] | None:
    """A head node whose raylet is still alive 20 s after it registered, or None."""
    gcs, grpc, listen, metrics, runtime = _free_ports(5)
    proc = subprocess.Popen([ray_bin, "start", "--head", "--block", f"--port={gcs}", "--num-cpus=2", "--num-gpus=0",
                             "--include-dashboard=false", f"--dashboard-agent-grpc-port={grpc}",
                             f"--dashboard-agent-listen-port={listen}", f"--metrics-export-port={metrics}",
                             f"--runtime-env-agent-port={runtime}", f"--temp-dir={temp}", "--disable-usage-stats"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    address = f"127.0.0.1:{gcs}"
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        st = subprocess.run([ray_bin, "status", f"--address={address}"], env=env, capture_output=True, text=True)
        if st.returncode == 0 and "node_" in st.stdout:
            break
        time.sleep(2)
    # The raylet gives its agents 15 s to report their ports, then exits (ray issue #65983): wait that out.
    time.sleep(20)
    if proc.poll() is None:
        return proc, address
    _stop(proc)
    return None


def _stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except ProcessLookupError:
        proc.wait()
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.fixture()
def ray_head() -> Iterator[tuple[str, dict[str, str]]]:
    pytest.importorskip("ray")
    ray_bin = shutil.which("ray")
    if ray_bin is None:
        pytest.skip("no `ray` command")
    temp = tempfile.mkdtemp(prefix="kmray-", dir="/tmp")  # unix socket paths must stay short
    # No drain on SIGTERM: by default the head's handler first waits up to 30 s for the GCS to drain the node
    # (for serving clusters), and that wait is all of this fixture's teardown (the raylet, stopped by the same
    # signal to the group, never answers). Stopping it at once loses nothing here.
    env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0",
               RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="0")
    head = None
    try:
        for _ in range(3):
            head = _start_head(ray_bin, env, temp)
            if head:
                break
        if head is None:
            pytest.skip("a Ray head node did not stay up on this machine (its raylet timed out waiting for its "
                        "dashboard agent: ray issue #65983, a loaded machine)")
        yield head[1], env
    finally:
        if head:
            _stop(head[0])
        shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.slow
def test_ray_executor_gives_the_local_executors_dataset(repos: Path, tmp_path: Path,
                                                         ray_head: tuple[str, dict[str, str]]) -> None:
    address, env = ray_head
    local = run_miner("mine", repos, "-o", tmp_path / "local", "-j", "1", "-q", timeout=600)
    assert local.returncode == 0, local.stderr
    ray = run_miner("mine", repos, "-o", tmp_path / "ray", "-j", "1", "-q", "--executor", "ray", "--workers", "2",
                    "--ray-address", address, timeout=300, env=env)
    assert ray.returncode == 0, ray.stderr
    _same(tmp_path / "local", tmp_path / "ray")
