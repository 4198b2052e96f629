"""The sandbox (miner/sandbox) around validate's test children: each escape is stopped and classified.

CPU-only fault fixtures, run through `kernel-miner validate` as a user would: a test that connects
to a local port, reads a planted secret, writes into another kernel's folder, writes into $HOME,
fork-bombs, allocates without bound and writes a huge file. Each gets its outcome, the run goes on
(a good kernel in the same dataset passes) and no other kernel's data changes (hashed before/after).
Skipped where this machine cannot build the sandbox (no unprivileged user namespaces).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from miner import sandbox

REPO = Path(__file__).resolve().parents[1]
WHY = sandbox.unavailable()
needs_sandbox = pytest.mark.skipif(WHY is not None, reason=f"no sandbox here: {WHY}")
SECRET = "km-planted-secret-7f3a9c"


def make_kernel(root: Path, kid: str, test: str | None) -> Path:
    d = root / kid
    (d / "tests").mkdir(parents=True)
    (d / "metadata.json").write_text(json.dumps({"schema_version": 1, "id": kid, "name": kid, "instantiations": []}))
    if test is not None:
        (d / "tests" / "test_case.py").write_text(textwrap.dedent(test))
    return d


def km(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), KM_PLANTED_API_KEY=SECRET, OPENAI_API_KEY=SECRET,
               AWS_SECRET_ACCESS_KEY=SECRET, GITHUB_TOKEN=SECRET)
    return subprocess.run([sys.executable, "-m", "miner", *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=cwd)


def data_hash(root: Path) -> dict[str, str]:
    """Every file of the dataset but what validate itself writes (validation blocks, logs, index)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if not p.is_file() or "validation" in rel.parts or rel.name == "index.jsonl" or ".lock" in rel.name:
            continue
        data = p.read_bytes()
        if rel.name == "metadata.json":
            meta = json.loads(data)
            meta.pop("validation", None)
            data = json.dumps(meta, sort_keys=True).encode()
        out[str(rel)] = hashlib.sha256(data).hexdigest()
    return out


def validation(root: Path, kid: str) -> dict:
    return json.loads((root / kid / "metadata.json").read_text())["validation"]


class Listener:
    """A local TCP server a test must not reach: counts the connections it gets."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()


@needs_sandbox
def test_every_escape_is_stopped_classified_and_leaves_the_dataset_alone(tmp_path: Path) -> None:
    listener = Listener()
    home_target = Path.home() / f"km-sandbox-escape-{os.getpid()}"
    faults = {
        "f-network": f"""
            import socket
            def test_connect():
                socket.create_connection(("127.0.0.1", {listener.port}), timeout=2).sendall(b"hi")
        """,
        "f-secret": f"""
            import os, glob
            def test_secret():
                seen = []
                for p in glob.glob("/proc/*/environ"):
                    try:
                        seen.append(open(p, "rb").read())
                    except OSError:  # PID 1 keeps the capabilities the test dropped
                        pass
                print(sorted(os.environ), seen)
                assert {SECRET!r} not in repr(seen)
                assert not [k for k in os.environ if k.endswith(("_API_KEY", "_TOKEN")) or k.startswith("AWS_")]
        """,
        "f-other": """
            import os
            def test_other():
                open(os.path.join("..", "victim", "metadata.json"), "w").write("{}")
        """,
        "f-other-abs": f"""
            def test_other_absolute():
                open({str(tmp_path / 'ds' / 'victim' / 'kernel.cu')!r}, "a").write("// owned")
        """,
        "f-home": f"""
            def test_home():
                open({str(home_target)!r}, "w").write("x")
        """,
        "f-forkbomb": """
            import subprocess, sys
            # A small interpreter forks (forking the test process itself, torch loaded, is slow).
            # Bounded: a broken sandbox must not take the machine down.
            BOMB = ("import os, time\\nfor _ in range(3000):\\n"
                    "    if os.fork() == 0:\\n        os.closerange(0, 3)\\n        time.sleep(60)\\n"
                    "        os._exit(0)\\n")
            def test_forkbomb():
                proc = subprocess.run([sys.executable, "-S", "-c", BOMB], capture_output=True, text=True)
                assert proc.returncode == 0, proc.stderr
        """,
        "f-memory": """
            def test_allocate():
                hog = []
                while True:
                    hog.append(bytearray(64 << 20))
        """,
        "f-bigfile": """
            def test_ten_gigabytes():
                chunk = b"\\0" * (16 << 20)
                with open("big.bin", "wb") as f:
                    for _ in range(640):
                        f.write(chunk)
        """,
        "f-pass": """
            import os
            def test_private_work_area():
                open("scratch.txt", "w").write("mine")  # its own copy of the kernel folder: allowed
                import tempfile
                with tempfile.NamedTemporaryFile() as t:
                    t.write(b"ok")
                assert os.environ["HOME"] != os.path.expanduser("~root") or True
        """,
    }
    root = tmp_path / "ds"
    for kid, test in faults.items():
        make_kernel(root, kid, test)
    victim = make_kernel(root, "victim", None)
    (victim / "kernel.cu").write_text("__global__ void victim() {}\n")
    before = data_hash(root)
    proc = km("validate", str(root), "--jobs", "2", "--timeout", "60", "--memory-limit", "2",
              "--file-limit", "0.25", "--process-limit", "400")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    got = {kid: validation(root, kid) for kid in faults}
    outcomes = {kid: v["outcome"] for kid, v in got.items()}
    kinds = {kid: sorted({x["kind"] for x in v.get("violations", [])}) for kid, v in got.items()}
    assert outcomes == {"f-network": "sandbox_violation", "f-secret": "passed", "f-other": "sandbox_violation",
                        "f-other-abs": "sandbox_violation", "f-home": "sandbox_violation",
                        "f-forkbomb": "sandbox_violation", "f-memory": "sandbox_violation",
                        "f-bigfile": "sandbox_violation", "f-pass": "passed"}, (outcomes, proc.stdout)
    assert kinds["f-network"] == ["network"] and str(listener.port) in got["f-network"]["reason"]
    assert kinds["f-other"] == ["write"] and "victim/metadata.json" in got["f-other"]["reason"]
    assert kinds["f-home"] == ["write"] and str(home_target) in got["f-home"]["reason"]
    assert kinds["f-forkbomb"] == ["processes"]
    assert kinds["f-memory"] == ["memory"]
    assert kinds["f-bigfile"] == ["file_size"]
    assert listener.accepted == 0
    assert not home_target.exists()
    assert data_hash(root) == before
    assert not (root / "f-pass" / "scratch.txt").exists()  # the work copy is not copied back
    outputs = [*root.glob("*/validation/*"), *root.glob("*/metadata.json"), root / "index.jsonl"]
    assert len(outputs) > 20
    for f in outputs:  # no secret in any output
        assert SECRET not in f.read_text(errors="replace"), f


@needs_sandbox
def test_spawn_mode_is_sandboxed_too(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    make_kernel(root, "f-other", "def test_other():\n    open('../victim/kernel.cu', 'w').write('x')\n")
    make_kernel(root, "f-pass", "import os\n\ndef test_ok():\n    assert 'OPENAI_API_KEY' not in os.environ\n")
    victim = make_kernel(root, "victim", None)
    (victim / "kernel.cu").write_text("__global__ void victim() {}\n")
    before = data_hash(root)
    proc = km("validate", str(root), "--mode", "spawn", "--timeout", "60")
    assert validation(root, "f-other")["outcome"] == "sandbox_violation", proc.stdout + proc.stderr
    assert validation(root, "f-pass")["outcome"] == "passed"
    assert data_hash(root) == before


def test_environment_allow_list() -> None:
    env = sandbox.environment({"PATH": "/bin", "OPENAI_API_KEY": "x", "KM_ORACLES": "1", "KM_FOO_TOKEN": "x",
                               "AWS_REGION": "x", "CUDA_VISIBLE_DEVICES": "0", "HOME": "/root", "SSH_AUTH_SOCK": "x",
                               "LD_PRELOAD": "/evil.so", "HF_TOKEN": "x", "MY_SECRET_PATH": "x"})
    assert env == {"PATH": "/bin", "KM_ORACLES": "1", "CUDA_VISIBLE_DEVICES": "0"}


def test_without_namespaces_validate_says_so_in_one_line(tmp_path: Path) -> None:
    """Where user namespaces are refused, one line names --no-sandbox; with it the run goes on."""
    root = tmp_path / "ds"
    make_kernel(root, "k", "def test_ok():\n    pass\n")
    cmd = [sys.executable, "-m", "miner", "validate", str(root)]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    if WHY is None:
        # Here namespaces work: take them away the way a locked-down machine does, inside a user
        # namespace of our own whose limit on nested user namespaces is 0.
        script = "echo 0 > /proc/sys/user/max_user_namespaces && exec " + " ".join(map(shlex.quote, cmd))
        proc = subprocess.run(["unshare", "-r", "sh", "-c", script], capture_output=True, text=True, env=env,
                              timeout=120)
        if "max_user_namespaces" in proc.stderr:
            pytest.skip("cannot restrict user namespaces here")
        rerun = subprocess.run(["unshare", "-r", "sh", "-c", script + " --no-sandbox"], capture_output=True,
                               text=True, env=env, timeout=120)
    else:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        rerun = subprocess.run([*cmd, "--no-sandbox"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("kernel-miner: error: cannot build the test sandbox")
    assert "--no-sandbox" in proc.stderr
    assert rerun.returncode == 0 and "1 passed" in rerun.stdout, rerun.stdout + rerun.stderr


@needs_sandbox
def test_run_api_copies_back_only_regular_files_of_the_result_area(tmp_path: Path) -> None:
    """sandbox.run, the one-shot form enrich's and triage's runs use."""
    kdir = make_kernel(tmp_path / "ds", "k", """
        import os
        def test_writes():
            open("validation/answer.txt", "w").write("42")
            os.symlink("/etc/hostname", "validation/leak")  # must not be followed when results come back
            open("scratch.txt", "w").write("stays in the work copy")
            open("../other/metadata.json", "w").write("{}")
    """)
    before = data_hash(tmp_path / "ds")
    out = tmp_path / "results"
    env = dict(os.environ, OPENAI_API_KEY=SECRET)
    done = sandbox.run([sys.executable, "-m", "pytest", "-p", "miner.sandbox.audit", *sandbox.pytest_args()], kdir, out,
                       timeout=120, env=env)
    assert done.returncode == 1 and not done.timed_out
    assert sorted(done.copied) == ["answer.txt", "stderr.txt", "stdout.txt", "violations.jsonl"]
    assert (out / "answer.txt").read_text() == "42" and not (out / "leak").exists()
    assert done.violations == [{"kind": "write", "what": "../other/metadata.json"}]
    assert data_hash(tmp_path / "ds") == before and not (kdir / "scratch.txt").exists()
    assert SECRET not in (out / "stdout.txt").read_text()


@needs_sandbox
def test_own_proc_is_writable_for_the_process_but_machine_settings_stay_read_only() -> None:
    """The CUDA driver writes to /proc while cuInit runs (a read-only /proc hid the GPU on an H100):
    the namespace's /proc stays writable where the process owns the file, /proc/sys never."""
    from miner.sandbox import confine, linux

    def step(work: str) -> str:
        try:
            confine(work, sandbox.Policy(memory_bytes=0))
            linux.write_file("/proc/self/comm", "km-probe")
            comm = Path("/proc/self/comm").read_text().strip()
            try:
                linux.write_file("/proc/sys/kernel/hostname", "escaped")
                sysctl = "written"
            except OSError as exc:
                sysctl = type(exc).__name__
            return f"{comm} {sysctl}"
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            return f"error {type(exc).__name__}: {exc}"

    assert linux.run_in_fork(step, "km-proc-test-") == "km-probe OSError"
