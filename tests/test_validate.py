"""`kernel-miner validate` on plain-Python kernel tests: isolation, outcomes, reruns, interruption.

These need no GPU: the tests inside the dataset crash, hang, fail and abort by themselves, which
is exactly what the runner must survive. The GPU fault fixtures run in scripts/gpu_validate.py.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

CASES = {
    "k-pass": "def test_ok():\n    assert 1 + 1 == 2\n",
    "k-fail": "def test_bad():\n    assert [1, 2] == [1, 3], 'lists differ here'\n",
    "k-error": "def test_raises():\n    raise ValueError('bad shape 3x4')\n",
    "k-segv": "import ctypes\n\ndef test_segv():\n    ctypes.string_at(0)\n",
    "k-abort": "import os\n\ndef test_abort():\n    os.abort()\n",
    "k-hang": "import time\n\ndef test_hang():\n    time.sleep(600)\n",
    "k-cuda": "def test_cuda():\n    raise RuntimeError('CUDA error: an illegal memory access was encountered')\n",
    "k-collect": "def test_syntax(:\n    pass\n",
    "k-skip": "import pytest\n\npytest.skip('no CUDA GPU', allow_module_level=True)\n",
    "k-mixed": "def test_a():\n    pass\n\ndef test_b():\n    assert 2 < 1\n",
}
EXPECTED = {
    "k-pass": "passed", "k-fail": "failed", "k-error": "error", "k-segv": "crashed",
    "k-abort": "crashed", "k-hang": "timeout", "k-cuda": "cuda_error", "k-collect": "error",
    "k-skip": "skipped", "k-mixed": "failed", "k-none": "skipped",
}


def make_kernel(root: Path, kid: str, test: str | None) -> Path:
    d = root / kid
    (d / "tests").mkdir(parents=True)
    (d / "metadata.json").write_text(json.dumps({"schema_version": 1, "id": kid, "name": kid,
                                                 "instantiations": []}))
    if test is not None:
        (d / "tests" / "test_case.py").write_text(test)
    return d


def make_dataset(root: Path, cases: dict[str, str | None]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for kid, test in cases.items():
        make_kernel(root, kid, test)
    return root


def km(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "miner", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def validation(root: Path, kid: str) -> dict:
    return json.loads((root / kid / "metadata.json").read_text())["validation"]


@pytest.mark.parametrize("mode", ["fork", "spawn"])
def test_every_outcome_is_exact(tmp_path: Path, mode: str) -> None:
    root = make_dataset(tmp_path / "ds", {**CASES, "k-none": None})
    t0 = time.time()
    proc = km("validate", str(root), "--jobs", "4", "--timeout", "8" if mode == "fork" else "15",
              "--mode", mode)
    assert time.time() - t0 < 90
    assert proc.returncode == 1, proc.stderr  # some kernels failed, all were processed
    got = {kid: validation(root, kid)["outcome"] for kid in EXPECTED}
    assert got == EXPECTED
    assert validation(root, "k-segv")["signal"] == "SIGSEGV"
    assert validation(root, "k-abort")["signal"] == "SIGABRT"
    assert "lists differ here" in validation(root, "k-fail")["reason"]
    assert validation(root, "k-fail")["test"] == "tests/test_case.py::test_bad"
    assert validation(root, "k-error")["reason"] == "ValueError: bad shape 3x4"
    assert "illegal memory access" in validation(root, "k-cuda")["reason"]
    assert "test_hang" in validation(root, "k-hang")["reason"]
    assert validation(root, "k-mixed")["tests"] == {"passed": 1, "failed": 1, "total": 2}
    assert validation(root, "k-pass")["pass_exe"] is True
    assert validation(root, "k-fail")["pass_exe"] is False
    assert validation(root, "k-none")["reason"] == "no tests"
    # A Python traceback from the crash is kept for triage.
    assert "Fatal Python error" in (root / "k-segv" / "validation" / "stderr.txt").read_text()
    # index.jsonl holds every kernel with its validation block, one line each.
    lines = [json.loads(x) for x in (root / "index.jsonl").read_text().splitlines()]
    assert {x["id"]: x["validation"]["outcome"] for x in lines} == EXPECTED
    assert "11 kernels:" in proc.stdout and "1 crashed" not in proc.stdout and "2 crashed" in proc.stdout


def test_skipped_kernels_are_not_a_success(tmp_path: Path) -> None:
    """A kernel whose tests all skip (no GPU here) or that has none is recorded `skipped` and its pass_exe is
    false; the run exits 7, not 0, and says so, unless a kernel failed (1); only all-passed exits 0."""
    root = make_dataset(tmp_path / "ds", {k: CASES[k] for k in ("k-pass", "k-fail", "k-skip")})
    make_kernel(root, "k-none", None)
    runs = {}
    for kernels in ("k-skip", "k-none", "k-pass,k-skip", "k-fail,k-skip", "k-pass"):
        runs[kernels] = km("validate", str(root), "--force", "--kernels", kernels)
    for kernels in ("k-skip", "k-none", "k-pass,k-skip"):
        proc = runs[kernels]
        assert proc.returncode == 7, (kernels, proc.stdout, proc.stderr)
        assert "not verified: 1 kernel(s) skipped" in proc.stdout and "exit code 7, not 0" in proc.stdout
    assert "1 skipped" in runs["k-skip"].stdout
    assert validation(root, "k-skip")["outcome"] == "skipped" and validation(root, "k-skip")["pass_exe"] is False
    assert validation(root, "k-none")["outcome"] == "skipped" and validation(root, "k-none")["reason"] == "no tests"
    assert runs["k-fail,k-skip"].returncode == 1  # a failure outranks a skip
    assert "not verified" not in runs["k-fail,k-skip"].stdout
    assert runs["k-pass"].returncode == 0 and "not verified" not in runs["k-pass"].stdout


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    test = textwrap.dedent(f"""
        import subprocess, sys, time
        def test_spawns_and_hangs():
            p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            open({str(pidfile)!r}, "w").write(str(p.pid))
            time.sleep(600)
    """)
    root = make_dataset(tmp_path / "ds", {"k-tree": test})
    # --no-sandbox: the test reports its grandchild's pid in a file outside its work area.
    proc = km("validate", str(root), "--timeout", "3", "--no-sandbox")
    assert validation(root, "k-tree")["outcome"] == "timeout", proc.stdout + proc.stderr
    pid = int(pidfile.read_text())
    deadline = time.time() + 5
    while Path(f"/proc/{pid}").exists() and time.time() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_rerun_skips_finished_kernels_unless_forced_or_changed(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds", {"k-pass": CASES["k-pass"], "k-fail": CASES["k-fail"]})
    assert km("validate", str(root)).returncode == 1
    first = validation(root, "k-pass")["validated_at"], validation(root, "k-pass")["fingerprint"]
    again = km("validate", str(root))
    assert "2 already validated" in again.stdout
    assert again.returncode == 0  # nothing was run this time
    # Fixing the failing test makes exactly that kernel run again.
    (root / "k-fail" / "tests" / "test_case.py").write_text(CASES["k-pass"])
    fixed = km("validate", str(root))
    assert "1 passed" in fixed.stdout and "1 already validated" in fixed.stdout
    assert validation(root, "k-fail")["outcome"] == "passed"
    forced = km("validate", str(root), "--force", "--kernels", "k-p*")
    assert "1 kernels: 1 passed" in forced.stdout
    assert (validation(root, "k-pass")["validated_at"], validation(root, "k-pass")["fingerprint"])[1] == first[1]


def test_killing_validate_keeps_finished_results_and_leaves_no_child(tmp_path: Path) -> None:
    pidfile = tmp_path / "hang.pid"
    hang = f"import os, time\n\ndef test_hang():\n    open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n" \
           "    time.sleep(600)\n"
    root = make_dataset(tmp_path / "ds", {"a-pass": CASES["k-pass"], "b-fail": CASES["k-fail"], "c-hang": hang})
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "miner", "validate", str(root), "--jobs", "1", "--no-sandbox",
                             "--timeout", "300"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    deadline = time.time() + 60
    while not pidfile.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert pidfile.exists(), proc.stderr.read() if proc.poll() is not None else "hang test never started"
    time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert validation(root, "a-pass")["outcome"] == "passed"
    assert validation(root, "b-fail")["outcome"] == "failed"
    assert "validation" not in json.loads((root / "c-hang" / "metadata.json").read_text())
    child = int(pidfile.read_text())
    deadline = time.time() + 5
    while Path(f"/proc/{child}").exists() and time.time() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{child}").exists(), "the hanging test outlived validate"
    # The next run picks up where it stopped.
    rerun = km("validate", str(root), "--timeout", "2", "--no-sandbox")
    assert "2 already validated" in rerun.stdout
    assert validation(root, "c-hang")["outcome"] == "timeout"


def test_bad_inputs_are_one_line_errors(tmp_path: Path) -> None:
    missing = km("validate", str(tmp_path / "nope"))
    assert missing.returncode == 1
    assert missing.stderr.startswith("kernel-miner: error: ") and missing.stderr.count("\n") == 1
    (tmp_path / "empty").mkdir()
    empty = km("validate", str(tmp_path / "empty"))
    assert empty.returncode == 3 and "no kernel folders" in empty.stderr
    bad_jobs = km("validate", str(tmp_path / "empty"), "--jobs", "0")
    assert bad_jobs.returncode == 2 and "Traceback" not in bad_jobs.stderr


def test_broken_metadata_is_an_error_outcome_not_a_crash(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds", {"k-pass": CASES["k-pass"]})
    d = make_kernel(root, "k-weird", CASES["k-pass"])
    (d / "metadata.json").write_text(json.dumps({"id": "k-weird", "instantiations": [{"id": "x"}]}))
    proc = km("validate", str(root))
    assert "Traceback" not in proc.stderr
    assert validation(root, "k-pass")["outcome"] == "passed"
    assert validation(root, "k-weird")["outcome"] in ("build_failed", "error")


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@needs_nvcc
def test_build_failed_and_skip_without_gpu_with_real_nvcc(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    import torch

    root = tmp_path / "ds"
    shutil.copytree(REPO / "tests" / "fixtures" / "faults" / "no-compile", root / "no-compile")
    shutil.copytree(REPO / "tests" / "fixtures" / "faults" / "segv-test", root / "segv-test")
    proc = km("validate", str(root), "--timeout", "60")
    v = validation(root, "no-compile")
    assert v["outcome"] == "build_failed", proc.stdout + proc.stderr
    assert "helper_that_was_not_extracted" in v["reason"] and "undefined" in v["reason"]
    assert v["build"]["failed"] and not v["build"]["built"]
    seg = validation(root, "segv-test")
    assert seg["build"]["compiled"] == ["default"]  # built here, since no library was recorded
    assert (root / "segv-test" / "units" / "default" / "libunit.so").is_file()
    assert (root / "segv-test" / "units" / "default" / "kernel_wrapper.py").is_file()
    if not torch.cuda.is_available():
        assert seg["outcome"] == "skipped" and "no CUDA GPU" in seg["reason"]
    else:
        assert seg["outcome"] == "crashed"


def test_tests_beside_the_source_are_copied_in_and_run(tmp_path: Path) -> None:
    src = tmp_path / "repo" / "ops"
    (src / "tests" / "scale").mkdir(parents=True)
    kernel_text = "__global__ void scale(float* x) { x[0] *= 2; }"
    (src / "scale.cu").write_text("#include <cuda_runtime.h>\n" + kernel_text + "\n")
    (src / "tests" / "scale" / "test_scale.py").write_text(CASES["k-pass"])
    root = make_dataset(tmp_path / "ds", {"k-scale": None, "k-other": None})
    for kid, path in (("k-scale", "ops/scale.cu"), ("k-other", "ops/missing.cu")):
        meta = json.loads((root / kid / "metadata.json").read_text())
        meta.update(name="scale", source={"path": path})
        (root / kid / "metadata.json").write_text(json.dumps(meta))
        (root / kid / "kernel.cu").write_text(kernel_text)
    # --tests-from a folder inside the repo: the source path is found relative to one of its parents.
    proc = km("validate", str(root), "--tests-from", str(src / "tests"))
    # k-other has no tests (skipped): nothing failed, but not everything was verified.
    assert proc.returncode == 7, proc.stdout + proc.stderr
    assert "not verified: 1 kernel(s) skipped" in proc.stdout
    v = validation(root, "k-scale")
    assert v["outcome"] == "passed" and v["test_sources"]["copied"] == ["test_scale.py"]
    assert (root / "k-scale" / "tests" / "test_scale.py").read_text() == CASES["k-pass"]
    assert validation(root, "k-other")["reason"] == "no tests"
    # A newer source test is copied again and reruns the kernel; an edit in the dataset that is newer
    # than the source stays.
    time.sleep(0.05)
    (src / "tests" / "scale" / "test_scale.py").write_text(CASES["k-fail"])
    proc = km("validate", str(root), "--tests-from", str(tmp_path / "repo"))
    assert validation(root, "k-scale")["outcome"] == "failed", proc.stdout + proc.stderr
    time.sleep(0.05)
    (root / "k-scale" / "tests" / "test_scale.py").write_text(CASES["k-pass"])
    km("validate", str(root), "--tests-from", str(tmp_path / "repo"))
    assert validation(root, "k-scale")["outcome"] == "passed"
    # The source file no longer holds the kernel's text: its tests are not for this kernel.
    (src / "scale.cu").write_text("__global__ void scale(float* x) { x[0] *= 3; }\n")
    (root / "k-scale" / "tests" / "test_scale.py").unlink()
    km("validate", str(root), "--tests-from", str(tmp_path / "repo"))
    assert validation(root, "k-scale")["reason"] == "no tests"


def test_extracted_examples_find_their_hand_written_tests(tmp_path: Path) -> None:
    pytest.importorskip("clang.cindex")
    out = tmp_path / "ex"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    subprocess.run([sys.executable, "-m", "miner", "extract", "examples", "-o", str(out), "-q"], cwd=REPO,
                   env=env, check=True, capture_output=True, timeout=300)
    kdirs = {json.loads(p.read_text())["name"]: p.parent for p in out.glob("*/metadata.json")}
    from miner.dataset import load_metadata as load_meta
    from miner.validate.sources import sync_tests

    for name, example in (("saxpy_kernel", "saxpy"), ("roi_pool_forward_kernel", "roi_pool"),
                          ("roi_pool_backward_kernel", "roi_pool")):
        got = sync_tests(kdirs[name], load_meta(kdirs[name]), [REPO])
        assert got is not None and got["dir"] == str(REPO / "examples" / example / "tests" / name)
        assert got["files"] and all((kdirs[name] / "tests" / f).is_file() for f in got["files"])


FAKE_MPS = """#!/bin/sh
# Stands in for nvidia-cuda-mps-control: -d creates the control pipe; 'quit' on stdin removes it.
if [ "$1" = "-d" ]; then
  : > "$CUDA_MPS_PIPE_DIRECTORY/control"; echo started >> "$CUDA_MPS_LOG_DIRECTORY/log"; exit 0
fi
read cmd; echo "$cmd" >> "$CUDA_MPS_LOG_DIRECTORY/log"; [ "$cmd" = quit ] && rm -f "$CUDA_MPS_PIPE_DIRECTORY/control"
exit 0
"""


def test_mps_first_pass_records_passes_and_reruns_the_rest_alone(tmp_path: Path) -> None:
    """--mps: what passed as an MPS client is kept; what did not is run again without MPS and that counts."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nvidia-cuda-mps-control"
    fake.write_text(FAKE_MPS)
    fake.chmod(0o755)
    cases = {
        "k-pass": "import os\n\ndef test_ok():\n    assert os.environ.get('CUDA_MPS_PIPE_DIRECTORY')\n",
        "k-fail": CASES["k-fail"],
        # fails only as an MPS client, as a kernel does when an MPS neighbour faults
        "k-neighbour": "import os\n\ndef test_ok():\n    assert not os.environ.get('CUDA_MPS_PIPE_DIRECTORY')\n",
    }
    root = make_dataset(tmp_path / "ds", cases)
    env = dict(os.environ, PYTHONPATH=str(REPO), PATH=f"{bin_dir}:{os.environ['PATH']}",
               TMPDIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "miner", "validate", str(root), "--jobs", "2", "--timeout", "30",
                           "--mps"], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 1, proc.stderr
    got = {kid: (validation(root, kid)["outcome"], validation(root, kid)["mode"]) for kid in cases}
    assert got == {"k-pass": ("passed", "fork+mps"), "k-fail": ("failed", "fork"), "k-neighbour": ("passed", "fork")}
    assert not list(tmp_path.glob("km-mps-*")), "the daemon's private folder is removed at the end"


def test_mps_without_the_control_daemon_is_a_one_line_usage_error(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds", {"k-pass": CASES["k-pass"]})
    env = dict(os.environ, PYTHONPATH=str(REPO), PATH=str(Path(sys.executable).parent))
    proc = subprocess.run([sys.executable, "-m", "miner", "validate", str(root), "--mps"], capture_output=True,
                          text=True, timeout=300, env=env)
    if shutil.which("nvidia-cuda-mps-control", path=env["PATH"]):
        pytest.skip("this machine has the MPS control daemon")
    assert proc.returncode == 2, proc.stderr
    assert "--mps" in proc.stderr and "nvidia-cuda-mps-control" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_test_processes_get_one_cuda_work_queue_unless_told_otherwise(tmp_path: Path) -> None:
    """--cuda-connections: 1 by default (fast context creation), 0 the driver's default, the user's env wins."""
    seen = "import os\n\ndef test_env():\n    assert os.environ.get('CUDA_DEVICE_MAX_CONNECTIONS') == {want!r}\n"
    env = {k: v for k, v in os.environ.items() if k != "CUDA_DEVICE_MAX_CONNECTIONS"}
    env["PYTHONPATH"] = str(REPO)
    runs = [([], {}, "1"), (["--cuda-connections", "0", "--mode", "spawn"], {}, None),
            (["--cuda-connections", "1"], {"CUDA_DEVICE_MAX_CONNECTIONS": "4"}, "4")]
    for i, (flags, extra, want) in enumerate(runs):
        root = make_dataset(tmp_path / f"ds{i}", {"k-env": seen.format(want=want)})
        proc = subprocess.run([sys.executable, "-m", "miner", "validate", str(root), "--timeout", "60", *flags],
                              capture_output=True, text=True, timeout=300, env={**env, **extra})
        rec = validation(root, "k-env")
        assert (proc.returncode, rec["outcome"], rec["cuda_connections"]) == (0, "passed", want), proc.stderr
    proc = subprocess.run([sys.executable, "-m", "miner", "validate", str(root), "--cuda-connections", "-1"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "--cuda-connections" in proc.stderr
