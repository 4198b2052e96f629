"""End-to-end `kernel-miner enrich` runs against a local OpenAI-compatible server (tests/fake_llm_server.py).

The real `openai` client talks HTTP to the server; faults (429, 500, slow answers, malformed and
truncated JSON, answers inside prose, a refused key) are scripted per kernel and stage.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fake_llm_server import FakeLLMServer, Reply, Rule, fence, kernel_brain

from miner.enrich.prompts import load_prompt

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-test-DO-NOT-LEAK-0123456789abcdef"

KERNELS = {
    "scale_kernel": ("__global__ void scale_kernel(float* out, const float* x, float alpha, int n)",
                     "{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = alpha * x[i];\n}\n"),
    "add_kernel": ("__global__ void add_kernel(float* c, const float* a, const float* b, int n)",
                   "{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) c[i] = a[i] + b[i];\n}\n"),
    "relu_kernel": ("__global__ void relu_kernel(float* y, const float* x, int n)",
                    "{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;\n}\n"),
}


def make_dataset(root: Path, names: list[str] | None = None) -> Path:
    """A dataset folder as extract + render write it: metadata.json, kernel.cu, one unit per kernel."""
    for name in names or list(KERNELS):
        sig, body = KERNELS[name]
        kdir = root / f"{name}-000000000000"
        (kdir / "units" / "default").mkdir(parents=True)
        params = []
        for part in sig[sig.index("(") + 1 : sig.rindex(")")].split(","):
            ctype, pname = part.strip().rsplit(" ", 1)
            params.append({"name": pname, "type": ctype, "pointer": "*" in ctype, "const": "const" in ctype,
                           "restrict": False})
        (kdir / "kernel.cu").write_text(sig + "\n" + body)
        launcher_params = [{"name": p["name"], "type": p["type"],
                            "ctype": "pointer" if p["pointer"] else ("float32" if "float" in p["type"] else "int32")}
                           for p in params]
        (kdir / "units" / "default" / "unit.cu").write_text(
            "#include <cuda_runtime.h>\n" + sig + "\n" + body)
        meta = {"id": kdir.name, "name": name, "signature": sig, "params": params, "template_params": [],
                "instantiations": [{"id": "default", "template_args": [], "origin": "explicit",
                                    "unit": "units/default/unit.cu",
                                    "launcher": {"symbol": name, "params": launcher_params}}],
                "launches": [{"grid": "(n + 255) / 256", "block": "256", "smem": "0"}]}
        (kdir / "metadata.json").write_text(json.dumps(meta, indent=2))
    return root


def write_config(path: Path, base_url: str, **extra: Any) -> Path:
    settings = {"base_url": base_url, "retry_initial": 0.01, "retry_max_wait": 0.05, "retries": 4, **extra}
    lines = ["[enrich]", *(f"{k} = {json.dumps(v)}" for k, v in settings.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def enrich(dataset: Path, *args: str, key: str | None = KEY, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["PYTHONPATH"] = str(ROOT)
    if key:
        env["OPENAI_API_KEY"] = key
    return subprocess.run([sys.executable, "-m", "miner", "enrich", str(dataset), *args], env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False)


def records(dataset: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.parent.name: json.loads(p.read_text()) for p in dataset.glob("*/enrich/record.json")}


def statuses(dataset: Path) -> dict[str, dict[str, str]]:
    return {k: {s: v["status"] for s, v in r["stages"].items()} for k, r in records(dataset).items()}


def assert_no_key_anywhere(dataset: Path, *texts: str) -> None:
    for text in texts:
        assert KEY not in text and KEY[:12] not in text
    for path in dataset.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert KEY.encode() not in data and KEY[:12].encode() not in data, path


def assert_complete(dataset: Path) -> None:
    for kdir in sorted(p for p in dataset.iterdir() if (p / "metadata.json").exists()):
        rec = json.loads((kdir / "enrich" / "record.json").read_text())
        assert {s: v["status"] for s, v in rec["stages"].items()} == {
            "analysis": "ok", "tests": "unverified", "describe": "ok"}, kdir.name
        analysis = json.loads((kdir / "enrich" / "analysis.json").read_text())
        assert analysis["analysis"]["core_function"]
        assert analysis["meta"]["prompt_version"] == load_prompt("analysis").version
        assert analysis["meta"]["model"] == "fake-model" and analysis["meta"]["prompt_tokens"] > 0
        assert "def test_" in (kdir / "tests" / "test_generated.py").read_text()
        desc = json.loads((kdir / "enrich" / "description.json").read_text())
        assert desc["complete"].startswith("/**") and desc["instruct"].startswith("Write a CUDA kernel that ")
        assert desc["meta"]["prompt_version"] == load_prompt("describe").version
        md = json.loads((kdir / "metadata.json").read_text())
        assert md["enrichment"]["stages"]["tests"]["status"] == "unverified"


def test_full_enrich_retries_faults_and_reruns_for_free(tmp_path: Path) -> None:
    data = make_dataset(tmp_path / "ds")
    rules = [
        Rule(r"Analyse the CUDA kernel `scale_kernel`", [Reply(status=429), Reply(status=500), kernel_brain]),
        Rule(r"Analyse the CUDA kernel `add_kernel`", [Reply(delay=3.0), kernel_brain]),  # past --timeout 1
        Rule(r"documentation of the CUDA kernel `relu_kernel`",
             [lambda body: "Certainly! The JSON you asked for:\n\n" + kernel_brain(body) + "\n\nLet me know."]),
    ]
    with FakeLLMServer(rules, default=kernel_brain) as srv:
        cfg = write_config(tmp_path / "km.toml", srv.base_url, model="fake-model")
        first = enrich(data, "--config", str(cfg), "--timeout", "1", "--concurrency", "2")
        assert first.returncode == 0, first.stderr
        assert "Traceback" not in first.stderr
        # 3 analyses (+2 retries for 429/500, +1 for the timeout), 3 tests, 3 describes.
        assert srv.count == 12
        assert f"Bearer {KEY}" in srv.authorization  # the key was really sent, over HTTP
        assert_complete(data)
        again = enrich(data, "--config", str(cfg))
        assert again.returncode == 0 and srv.count == 12  # finished stages are skipped
        forced = enrich(data, "--config", str(cfg), "--force")
        assert forced.returncode == 0, forced.stderr
        assert srv.count == 12  # every answer comes from the cache: zero HTTP requests
        run = json.loads((data / "enrich_run.json").read_text())
        assert run["http_requests"] == 0 and run["cache_hits"] == 9
    assert_no_key_anywhere(data, first.stdout, first.stderr, forced.stdout, forced.stderr)


def test_bad_answers_are_recorded_failures_never_crashes(tmp_path: Path) -> None:
    data = make_dataset(tmp_path / "ds")
    truncated = '{"core_function": "Scales x.", "contract": "out == alpha * x", "params": [{"name": "out"'
    rules = [
        # Malformed JSON, then (after the format follow-up) truncated JSON: a recorded failure.
        Rule(r"Analyse the CUDA kernel `scale_kernel`", ["{'core_function': 'single quotes'}", truncated]),
        # Always 500: retried until the retry limit, then recorded.
        Rule(r"Analyse the CUDA kernel `add_kernel`", [Reply(status=500)]),
        # The model stops at its token limit.
        Rule(r"documentation of the CUDA kernel `relu_kernel`",
             [Reply(content='{"summary": "Applies', finish_reason="length")]),
    ]
    with FakeLLMServer(rules, default=kernel_brain) as srv:
        cfg = write_config(tmp_path / "km.toml", srv.base_url, model="fake-model", retries=2)
        proc = enrich(data, "--config", str(cfg))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    st = statuses(data)
    assert st["scale_kernel-000000000000"] == {"analysis": "failed", "tests": "blocked", "describe": "blocked"}
    assert st["add_kernel-000000000000"]["analysis"] == "failed"
    assert st["relu_kernel-000000000000"] == {"analysis": "ok", "tests": "unverified", "describe": "failed"}
    recs = records(data)
    assert "truncated JSON" in recs["scale_kernel-000000000000"]["stages"]["analysis"]["error"]
    assert "HTTP 500" in recs["add_kernel-000000000000"]["stages"]["analysis"]["error"]
    assert "gave up after 3 tries" in recs["add_kernel-000000000000"]["stages"]["analysis"]["error"]
    assert "finish_reason=length" in recs["relu_kernel-000000000000"]["stages"]["describe"]["error"]
    assert not (data / "relu_kernel-000000000000" / "enrich" / "description.json").exists()


def test_non_json_http_body_is_a_recorded_failure(tmp_path: Path) -> None:
    data = make_dataset(tmp_path / "ds", ["relu_kernel"])
    with FakeLLMServer([Rule("Analyse", [Reply(raw_body=b"<html>gateway hiccup</html>")])]) as srv:
        # short retry waits: the default backoff (1 s doubling, 5 retries) only made this test take 30 s
        cfg = write_config(tmp_path / "km.toml", srv.base_url, model="fake-model")
        proc = enrich(data, "--config", str(cfg), "--stages", "analysis")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert statuses(data)["relu_kernel-000000000000"]["analysis"] == "failed"


BROKEN_IMPORT = """\
from pathlib import Path

import pytest

from miner.harness import load_unit, launch_everything

torch = pytest.importorskip("torch")
KERNEL_DIR = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("n", [1, 7, 256, 1000, 4096])
def test_relu(n):
    unit = load_unit(KERNEL_DIR)
    x = torch.randn(n, device="cuda")
    y = torch.full_like(x, float("nan"))
    unit.launch((n + 255) // 256, 256, y, x, n)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.relu(x))
"""


@pytest.mark.parametrize("broken, first_outcome, evidence", [
    (BROKEN_IMPORT, "error", "launch_everything"),
    (BROKEN_IMPORT.replace("def test_relu(n):", "def test_relu(n)"), "rejected", "syntax error"),
], ids=["import-error", "syntax-error"])
def test_repair_loop_fixes_a_broken_test_in_one_round(tmp_path: Path, broken: str, first_outcome: str,
                                                       evidence: str) -> None:
    data = make_dataset(tmp_path / "ds", ["relu_kernel"])
    rules = [Rule(r"Write a pytest file that tests the CUDA kernel `relu_kernel`",
                  ["Here:\n" + fence("python", broken)])]
    with FakeLLMServer(rules, default=kernel_brain) as srv:
        proc = enrich(data, "--base-url", srv.base_url, "--model", "fake-model", "--max-attempts", "3")
        repairs = [r for r in srv.requests if "did not pass" in r["last_user"]]
    assert proc.returncode == 0, proc.stderr
    assert len(repairs) == 1
    assert evidence in repairs[0]["last_user"]  # the error went back to the model with the code
    kdir = data / "relu_kernel-000000000000"
    memory = json.loads((kdir / "enrich" / "attempts.json").read_text())
    first, second = memory["attempts"]
    assert first["outcome"] == first_outcome and evidence in first["error"]
    assert first["candidate"] == broken
    assert first["reflection"] and first["blame_model"] == "test" and first["blame_heuristic"] == "test"
    assert second["outcome"] == "skipped"  # sound now; no GPU here to run it
    final = memory["final"]
    assert {k: final[k] for k in ("status", "outcome", "attempts", "blame", "repaired")} == {
        "status": "unverified", "outcome": "skipped", "attempts": 2, "blame": None, "repaired": True}
    # Not judged here: no GPU, so neither the kernel nor its mutants ran.
    assert final["mutation"]["status"] == "not_run" and final["mutation"]["score"] is None
    assert "launch_everything" not in (kdir / "tests" / "test_generated.py").read_text()


def test_repair_gives_up_after_max_attempts_and_keeps_the_history(tmp_path: Path) -> None:
    data = make_dataset(tmp_path / "ds", ["relu_kernel"])
    answer = '{"reflection": "still guessing", "blame": "test"}\n' + fence("python", BROKEN_IMPORT)
    rules = [Rule(r"CUDA kernel `relu_kernel` did not pass", [answer]),
             Rule(r"Write a pytest file", [fence("python", BROKEN_IMPORT)])]
    with FakeLLMServer(rules, default=kernel_brain) as srv:
        proc = enrich(data, "--base-url", srv.base_url, "--model", "m", "--max-attempts", "2")
    assert proc.returncode == 1
    kdir = data / "relu_kernel-000000000000"
    memory = json.loads((kdir / "enrich" / "attempts.json").read_text())
    assert [a["outcome"] for a in memory["attempts"]] == ["error", "error"]
    assert memory["final"]["status"] == "failed" and memory["final"]["blame"] == "test"
    # A test believed wrong is kept out of tests/ so validate does not run it.
    assert not (kdir / "tests" / "test_generated.py").exists()
    assert (kdir / "enrich" / "test_generated.failed.py").exists()


def test_budget_stops_cleanly_and_a_rerun_resumes(tmp_path: Path) -> None:
    data = make_dataset(tmp_path / "ds")
    with FakeLLMServer(default=kernel_brain) as srv:
        proc = enrich(data, "--base-url", srv.base_url, "--model", "m", "--concurrency", "1",
                      "--max-requests", "3")
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert "stopped early: budget exhausted" in proc.stderr
        assert srv.count == 3
        st = statuses(data)
        assert sum(v == "pending" for s in st.values() for v in s.values()) == 1
        resumed = enrich(data, "--base-url", srv.base_url, "--model", "m")
        assert resumed.returncode == 0, resumed.stderr
        assert srv.count == 9  # nothing asked twice


def test_kill_mid_run_loses_nothing_recorded(tmp_path: Path) -> None:
    data = make_dataset(tmp_path / "ds")
    slow = lambda body: Reply(content=kernel_brain(body), delay=0.4)  # noqa: E731
    with FakeLLMServer(default=slow) as srv:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        env.update(PYTHONPATH=str(ROOT), OPENAI_API_KEY=KEY, OPENAI_BASE_URL=srv.base_url)
        proc = subprocess.Popen([sys.executable, "-m", "miner", "enrich", str(data), "--concurrency", "1",
                                 "--model", "m"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (data / "add_kernel-000000000000" / "enrich" /
                                                   "analysis.json").exists():
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for path in data.rglob("*.json"):
            json.loads(path.read_text())  # every file written is whole
        before = srv.count
        resumed = enrich(data, "--base-url", srv.base_url, "--model", "m")
        assert resumed.returncode == 0, resumed.stderr
        # At most the one request in flight at the kill is asked again.
        assert srv.count <= 9 + 1 and srv.count - before < 9
    assert_complete_stages(data)


def assert_complete_stages(data: Path) -> None:
    for st in statuses(data).values():
        assert st == {"analysis": "ok", "tests": "unverified", "describe": "ok"}


def test_refused_key_stops_with_one_line_and_no_key_echo(tmp_path: Path) -> None:
    data = make_dataset(tmp_path / "ds")
    refused = Reply(status=401, error_message=f"Incorrect API key provided: {KEY}. Check your key.")
    with FakeLLMServer(default=refused) as srv:
        proc = enrich(data, "--base-url", srv.base_url, "--model", "m", "--concurrency", "1")
        assert srv.count == 1  # 401 is not retried, and stops the whole run
    assert proc.returncode == 2
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("kernel-miner: error:")]
    assert len(errors) == 1 and "authentication failed" in errors[0] and "***" in errors[0]
    assert "Traceback" not in proc.stderr
    assert_no_key_anywhere(data, proc.stdout, proc.stderr)


@pytest.mark.parametrize("args, config, key, message, code", [
    ([], None, None, "no API key", 2),
    (["--stages", "analysis,poems"], None, KEY, "unknown stage(s) poems", 2),
    (["--concurrency", "0"], None, KEY, "concurrency must be at least 1", 2),
    ([], "this is = not [toml", KEY, "not valid TOML", 2),
    ([], "[enrich]\ncolour = 'blue'\n", KEY, "unknown key(s): colour", 2),
    (["--kernels", "nope"], None, KEY, "matched no kernel", 3),  # nothing to do
])
def test_configuration_errors_are_one_line(tmp_path: Path, args: list[str], config: str | None,
                                           key: str | None, message: str, code: int) -> None:
    data = make_dataset(tmp_path / "ds", ["relu_kernel"])
    if config is not None:
        (tmp_path / "bad.toml").write_text(config)
        args = [*args, "--config", str(tmp_path / "bad.toml")]
    proc = enrich(data, "--base-url", "http://127.0.0.1:9/v1", *args, key=key)
    assert proc.returncode == code
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith("kernel-miner: error:") and message in proc.stderr


def test_key_and_endpoint_from_config_file_alone(tmp_path: Path) -> None:
    data = make_dataset(tmp_path / "ds", ["relu_kernel"])
    with FakeLLMServer(default=kernel_brain) as srv:
        cfg = write_config(tmp_path / "km.toml", srv.base_url, api_key=KEY, model="fake-model")
        proc = enrich(data, "--config", str(cfg), "--stages", "describe,analysis", key=None)
        assert proc.returncode == 0, proc.stderr
        assert srv.count == 2 and f"Bearer {KEY}" in srv.authorization
    assert statuses(data)["relu_kernel-000000000000"] == {"analysis": "ok", "describe": "ok"}
    assert_no_key_anywhere(data, proc.stdout, proc.stderr)


@pytest.mark.slow  # one generated-test child per kernel, each importing torch (~3 s on 2 cores)
def test_full_enrich_over_the_extracted_fixture_corpus(tmp_path: Path) -> None:
    out = tmp_path / "extracted"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    ex = subprocess.run([sys.executable, "-m", "miner", "extract", str(ROOT / "tests" / "fixtures" / "corpus"),
                         "--output-dir", str(out)], env=env, capture_output=True, text=True, timeout=300)
    assert ex.returncode in (0, 1), ex.stderr
    kernels = [p for p in out.iterdir() if (p / "metadata.json").exists()]
    assert len(kernels) >= 10
    faults = [Rule(r"Analyse the CUDA kernel `relu_kernel`", [Reply(status=429), kernel_brain])]
    with FakeLLMServer(faults, default=kernel_brain) as srv:
        cfg = write_config(tmp_path / "km.toml", srv.base_url, model="fake-model")
        proc = enrich(out, "--config", str(cfg), "--concurrency", "4", timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        first = srv.count
        assert first == 3 * len(kernels) + 1
        again = enrich(out, "--config", str(cfg), timeout=600)
        assert again.returncode == 0 and srv.count == first
    assert_complete(out)
