"""An OpenAI-compatible chat-completions server on 127.0.0.1 that replays scripted answers and faults.

Tests start it in a thread (`with FakeLLMServer(rules) as srv:`), point the real `openai` client at
`srv.base_url`, and read `srv.requests` afterwards. A rule is a regex matched against the user
messages of the request plus a list of replies used in turn (the last one repeats). A reply is a string (the
assistant's content) or a `Reply` describing a fault: an HTTP status, a delay, a cut-off answer, a
body that is not JSON at all.
"""

from __future__ import annotations

import json
import keyword
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: str = ""
    status: int = 200
    delay: float = 0.0
    finish_reason: str = "stop"
    raw_body: bytes | None = None  # sent as is, instead of a chat-completion object
    error_message: str = "scripted error"
    prompt_tokens: int = 100
    completion_tokens: int = 50


Answer = str | Reply | Callable[[dict[str, Any]], "str | Reply"]


@dataclass
class Rule:
    pattern: str
    replies: list[Answer]
    used: int = 0
    regex: re.Pattern[str] = field(init=False)

    def __post_init__(self) -> None:
        self.regex = re.compile(self.pattern, re.S)

    def next(self) -> Answer:
        reply = self.replies[min(self.used, len(self.replies) - 1)]
        self.used += 1
        return reply


class FakeLLMServer:
    def __init__(self, rules: list[Rule] | None = None, default: Answer | None = None) -> None:
        self.rules = rules or []
        self.default = default
        self.requests: list[dict[str, Any]] = []
        self.authorization: set[str] = set()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> FakeLLMServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> str:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = server._answer(self.path, body, self.headers.get("Authorization", ""))
                server._send(self, reply, body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self.base_url

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    # ------------------------------------------------------------------ behaviour
    def _answer(self, path: str, body: dict[str, Any], auth: str) -> Reply:
        messages = body.get("messages") or []
        last_user = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
        # Rules see every user turn, so a follow-up ("answer again...") still matches its kernel's rule.
        users = "\n".join(m.get("content", "") for m in messages if m.get("role") == "user")
        with self._lock:
            self.requests.append({"path": path, "body": body, "last_user": last_user, "time": time.time()})
            self.authorization.add(auth)
            if not path.rstrip("/").endswith("/chat/completions"):
                return Reply(status=404, error_message=f"no route {path}")
            answer: Answer | None = None
            for rule in self.rules:
                if rule.regex.search(users):
                    answer = rule.next()
                    break
            if answer is None:
                answer = self.default
        if answer is None:
            return Reply(status=400, error_message="no scripted answer for this request")
        if callable(answer):
            answer = answer(body)
        return Reply(content=answer) if isinstance(answer, str) else answer

    def _send(self, handler: BaseHTTPRequestHandler, reply: Reply, body: dict[str, Any]) -> None:
        if reply.delay:
            time.sleep(reply.delay)
        if reply.raw_body is not None:
            payload = reply.raw_body
        elif reply.status != 200:
            payload = json.dumps({"error": {"message": reply.error_message, "type": "scripted",
                                            "code": str(reply.status)}}).encode()
        else:
            payload = json.dumps({
                "id": f"chatcmpl-fake-{len(self.requests)}", "object": "chat.completion",
                "created": int(time.time()), "model": body.get("model", "fake"),
                "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                             "message": {"role": "assistant", "content": reply.content}}],
                "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                          "total_tokens": reply.prompt_tokens + reply.completion_tokens},
            }).encode()
        try:
            handler.send_response(reply.status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up first (a timeout fault): nothing to deliver


# ---------------------------------------------------------------------- a generic scripted "model"

_NAME = re.compile(r"CUDA kernel `([^`]+)`")
_SIG = re.compile(r"Signature:\s*```cuda\n(.*?)```", re.S)


def signature_params(signature: str) -> list[tuple[str, str]]:
    """(name, type) of each parameter of a kernel signature, split at top-level commas."""
    inner = signature[signature.find("(") + 1 : signature.rfind(")")]
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    out = []
    for part in parts:
        part = part.split("=")[0].strip()
        m = re.search(r"([A-Za-z_]\w*)\s*(\[[^\]]*\])?$", part)
        if m:
            out.append((m.group(1), part[: m.start()].strip() or "int"))
    return out


def _role(ctype: str) -> str:
    if "*" in ctype:
        return "input" if "const" in ctype else "output"
    return "size" if "int" in ctype or "size_t" in ctype else "scalar"


def analysis_answer(name: str, params: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "core_function": f"Computes the output of {name} element by element.",
        "contract": "out == f(x)",
        "params": [{"name": n, "role": _role(t), "dtype": t.replace("*", "").replace("const", "").strip(),
                    "shape": "[n]" if "*" in t else "scalar", "description": f"the {n} argument"}
                   for n, t in params],
        "shape_relations": ["numel(out) == n"],
        "memory_access": {"pattern": "elementwise", "description": "one element per thread",
                          "uses_shared_memory": False, "uses_atomics": False, "grid_stride_loop": False},
        "launch": {"grid": "ceil(n / 256)", "block": "256", "dynamic_shared_memory": "0"},
        "assumptions": [],
    }


def describe_answer(name: str, params: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "summary": f"Computes {name} over a vector.",
        "details": "Each thread handles one element; threads past the end do nothing.",
        "parameters": [{"name": n, "dtype": t, "shape": "[n]" if "*" in t else "scalar", "role": _role(t),
                        "description": f"the {n} argument"} for n, t in params],
        "returns": "The output buffer holds the result",
        "launch": {"grid": "ceil(n / 256)", "block": "256", "dynamic_shared_memory": "0", "notes": ""},
        "example": "unit = load_unit(kernel_dir)\nunit.launch(4, 256, out, x, 1000)",
    }


GOOD_TEST = '''\
from pathlib import Path

import pytest

from miner.harness import load_unit

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
KERNEL_DIR = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("n", [1, 7, 256, 1000, 1 << 16])
def test_{name}(n):
    unit = load_unit(KERNEL_DIR)
    x = torch.rand(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    expected = x * 2
    unit.launch((n + 255) // 256, 256, out, x, n)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
'''


_ANALYSIS = re.compile(r"Analysis of the kernel[^\n]*:\n```json\n(.*?)```", re.S)
# What miner's tests and repair prompts state about the kernel (templates/prompts/kernel_facts.j2): its
# parameters in launch order (the first instantiation's launcher) and the ones it writes. A model is meant to
# follow these facts; guessing outputs from a `*` misses tensor accessors, which are passed by value.
_LAUNCHER = re.compile(r"^- `[^`]*`: template arguments .*; launcher parameters (\[.*\])\s*$", re.M)
_WRITES = re.compile(r"^Parameters the kernel writes \([^)]*\): (.*)$", re.M)
# Names the test file itself binds: a kernel parameter with one of these names (or a Python keyword, as
# CUDA's `in`) gets a trailing underscore so the test stays valid Python and nothing is shadowed.
_TEST_NAMES = {"n", "torch", "pytest", "unit", "expected", "Path", "load_unit", "KERNEL_DIR"}


def _py_name(name: str) -> str:
    return name + "_" if keyword.iskeyword(name) or name in _TEST_NAMES else name


def prompt_params(prompt: str) -> list[dict[str, Any]]:
    """The kernel's parameters with a role each, from the facts of a tests or repair prompt: every parameter
    listed as written is an output, other pointers and structs (tensor accessors) are inputs, integers are
    sizes. Falls back to the analysis' parameters (the tests prompt shows it) where no launcher is listed."""
    launcher = _LAUNCHER.search(prompt)
    writes = _WRITES.search(prompt)
    written = {w.strip() for w in writes.group(1).split(",")} if writes else set()
    if launcher:
        try:
            listed = json.loads(launcher.group(1))
        except ValueError:
            listed = []
        params = []
        for p in listed:
            ctype = str(p.get("ctype", ""))
            role = ("output" if p.get("name") in written else "input" if ctype in ("pointer", "struct")
                    else "size" if "int" in ctype or "int" in str(p.get("type", "")) else "scalar")
            params.append({"name": str(p.get("name")), "role": role})
        if params:
            return params
    analysis = _ANALYSIS.search(prompt)
    try:
        described = json.loads(analysis.group(1))["params"] if analysis else []
    except (ValueError, KeyError, TypeError):
        return []
    return [{**p, "role": "output"} if p.get("name") in written else p for p in described]


def generic_test(name: str, params: list[dict[str, Any]]) -> str:
    """GOOD_TEST's shape for any signature: a buffer per pointer in the kernel's order (outputs poisoned),
    the first output compared with a reference computed from the first input before the launch."""
    if not any(p.get("role") in ("output", "inout") for p in params):
        return GOOD_TEST.replace("{name}", name)
    lines, args = [], []
    first_in = next((_py_name(p["name"]) for p in params if p.get("role") == "input"), None)
    first_out = next(_py_name(p["name"]) for p in params if p.get("role") in ("output", "inout"))
    for p in params:
        var = _py_name(p["name"])
        if p.get("role") == "input":
            lines.append(f"    {var} = torch.rand(n, device=\"cuda\")")
        elif p.get("role") in ("output", "inout"):
            lines.append(f"    {var} = torch.full((n,), float(\"nan\"), device=\"cuda\")")
        args.append(var if p.get("role") in ("input", "output", "inout") else
                    ("n" if p.get("role") == "size" else "1.5"))
    lines.append(f"    expected = {first_in} * 2" if first_in else "    expected = torch.zeros(n, device=\"cuda\")")
    body = "\n".join(lines)
    head = GOOD_TEST.split("@pytest.mark.parametrize")[0]
    return (head + "@pytest.mark.parametrize(\"n\", [1, 7, 256, 1000, 1 << 16])\n"
            f"def test_{name}(n):\n    unit = load_unit(KERNEL_DIR)\n{body}\n"
            f"    unit.launch((n + 255) // 256, 256, {', '.join(args)})\n    torch.cuda.synchronize()\n"
            f"    torch.testing.assert_close({first_out}, expected, rtol=1e-5, atol=1e-5)\n")


def fence(lang: str, body: str) -> str:
    return f"```{lang}\n{body}```\n"


def kernel_brain(body: dict[str, Any]) -> str:
    """Answers any enrich prompt for any kernel with well-formed (if generic) content."""
    messages = body.get("messages") or []
    user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    first_user = next((m["content"] for m in messages if m.get("role") == "user"), "")
    m = _NAME.search(first_user)
    name = m.group(1) if m else "kernel"
    sig = _SIG.search(first_user)
    params = signature_params(sig.group(1)) if sig else []
    if not params:
        params = [(n, "float*") for n in re.findall(r'"name": "(\w+)", "role"', first_user)]
    if first_user.startswith("Analyse"):
        return "Here is the analysis.\n" + fence("json", json.dumps(analysis_answer(name, params), indent=1))
    if first_user.startswith("Write the complete documentation"):
        return json.dumps(describe_answer(name, params))
    # The repair prompt has no analysis but the same facts, so a repair writes a test for the same signature.
    described = prompt_params(first_user)
    test = generic_test(re.sub(r"\W", "_", name), described) if described else GOOD_TEST.replace(
        "{name}", re.sub(r"\W", "_", name))
    if "did not pass" in user:
        reflection = {"reflection": "The test had a syntax error; fixed it.", "blame": "test", "confidence": 0.9}
        return json.dumps(reflection) + "\n\n" + fence("python", test)
    return "The test:\n" + fence("python", test)
