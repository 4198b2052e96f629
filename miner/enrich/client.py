"""One chat call: cache lookup, budget, HTTP through the `openai` package, retries with backoff."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import openai
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)

from miner.enrich.budget import Budget
from miner.enrich.cache import ResponseCache, request_key
from miner.enrich.config import EnrichConfig
from miner.enrich.redact import Redactor
from miner.errors import LLMError

# One answer may hold at most this many characters: a test file or an analysis is a few thousand; a
# larger answer is a runaway or hostile endpoint, and everything of it would be forwarded into prompts.
MAX_ANSWER_CHARS = 100_000


class MalformedResponse(LLMError):
    """The HTTP body is not a chat completion (an HTML page with status 200, `choices` not a list, a body
    nested past any sane depth): retried like a 5xx, then a recorded failure of the stage."""


class AnswerTooLarge(LLMError):
    """The answer is longer than MAX_ANSWER_CHARS: not cached, not forwarded, a failure of the stage."""


# 429, 5xx, timeouts, dropped connections and malformed bodies are worth another try; other 4xx are not.
RETRYABLE = (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError,
             openai.APIConnectionError, MalformedResponse)


class AuthError(LLMError):
    """The endpoint refused the key: no kernel can succeed, so the whole run stops."""


@dataclass
class Completion:
    content: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    cached: bool
    key: str
    http_attempts: int = 0

    def meta(self) -> dict[str, Any]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "finish_reason": self.finish_reason, "cached": self.cached, "request_key": self.key}


class LLMClient:
    def __init__(self, cfg: EnrichConfig, cache: ResponseCache, budget: Budget, redactor: Redactor) -> None:
        self.cfg = cfg
        self.cache = cache
        self.budget = budget
        self.redact = redactor
        # The SDK's own retries are off: tenacity owns retrying so every try is counted and bounded.
        self._client = openai.OpenAI(api_key=cfg.api_key, base_url=cfg.base_url,
                                     timeout=cfg.timeout, max_retries=0)
        self._lock = threading.Lock()
        self.http_requests = 0
        self.cache_hits = 0

    def close(self) -> None:
        self._client.close()

    def chat(self, messages: list[dict[str, str]]) -> Completion:
        params = self.cfg.request_params()
        key = request_key(self.cfg.model, messages, params)
        hit = self.cache.get(key)
        if hit is not None:
            with self._lock:
                self.cache_hits += 1
            return Completion(clean_text(str(hit["content"])), hit.get("finish_reason"),
                              _count(hit.get("prompt_tokens")), _count(hit.get("completion_tokens")), True, key)
        tries = 0

        def once() -> Any:
            nonlocal tries
            self.budget.reserve()
            tries += 1
            with self._lock:
                self.http_requests += 1
            try:
                resp = self._client.chat.completions.create(model=self.cfg.model, messages=messages, **params)
            except (ValueError, RecursionError, UnicodeError) as exc:  # JSONDecodeError is a ValueError
                raise MalformedResponse(f"the body is not JSON: {type(exc).__name__}: {str(exc)[:120]}") from None
            return self._parse(resp, key, tries)

        retrying = Retrying(
            retry=retry_if_exception_type(RETRYABLE),
            stop=stop_after_attempt(self.cfg.retries + 1),
            wait=wait_exponential_jitter(initial=self.cfg.retry_initial, max=self.cfg.retry_max_wait,
                                         jitter=self.cfg.retry_initial / 2),
            reraise=False,
        )
        try:
            completion = retrying(once)
        except RetryError as exc:
            last = exc.last_attempt.exception()
            raise LLMError(self.redact.text(f"gave up after {tries} tries: {_describe(last)}")) from None
        except openai.AuthenticationError as exc:
            raise AuthError(self.redact.text(f"authentication failed: {_describe(exc)}")) from None
        except openai.APIError as exc:
            raise LLMError(self.redact.text(_describe(exc))) from None
        except LLMError as exc:  # AnswerTooLarge: not retried
            raise type(exc)(self.redact.text(str(exc))) from None
        if completion.finish_reason != "length":
            # A cut-off answer is not cached: a rerun with a larger --max-tokens should ask again. The cache
            # is redacted like every record: an endpoint that echoes the key does not leave it on disk.
            self.cache.put(key, self.redact.obj({
                "model": self.cfg.model, "content": completion.content,
                "finish_reason": completion.finish_reason, "prompt_tokens": completion.prompt_tokens,
                "completion_tokens": completion.completion_tokens,
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
            completion.content = self.redact.text(completion.content)
        return completion

    def _parse(self, resp: Any, key: str, tries: int) -> Completion:
        """The first choice's text, or MalformedResponse for anything that is not a chat completion."""
        usage = getattr(resp, "usage", None)
        prompt_tokens = _count(getattr(usage, "prompt_tokens", 0))
        completion_tokens = _count(getattr(usage, "completion_tokens", 0))
        self.budget.charge(prompt_tokens + completion_tokens)
        choices = getattr(resp, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise MalformedResponse(f"the answer has no list of choices (got {type(choices).__name__})")
        choice = choices[0]
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None)
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise MalformedResponse(f"the answer's content is a {type(content).__name__}, not text")
        if len(content) > MAX_ANSWER_CHARS:
            raise AnswerTooLarge(f"the answer has {len(content)} characters (limit {MAX_ANSWER_CHARS})")
        finish = getattr(choice, "finish_reason", None)
        return Completion(clean_text(content), finish if isinstance(finish, str) else None, prompt_tokens,
                          completion_tokens, False, key, tries)


def clean_text(text: str) -> str:
    """The text with lone surrogates (invalid in UTF-8, fatal to every file write) replaced by U+FFFD."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace") if any(
        "\ud800" <= ch <= "\udfff" for ch in text) else text


def _count(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError, OverflowError):
        return 0


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    msg = str(exc).splitlines()[0] if str(exc) else ""
    return f"{name}{f' (HTTP {status})' if status else ''}: {msg}"[:500]
