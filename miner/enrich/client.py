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

# 429, 5xx, timeouts and dropped connections are worth another try; 4xx other than 429 are not.
RETRYABLE = (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError,
             openai.APIConnectionError)


class LLMError(Exception):
    """A request failed for good (after retries, or a non-retryable status); message is redacted."""


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
            return Completion(hit["content"], hit.get("finish_reason"), int(hit.get("prompt_tokens", 0)),
                              int(hit.get("completion_tokens", 0)), True, key)
        tries = 0

        def once() -> Any:
            nonlocal tries
            self.budget.reserve()
            tries += 1
            with self._lock:
                self.http_requests += 1
            return self._client.chat.completions.create(model=self.cfg.model, messages=messages, **params)

        retrying = Retrying(
            retry=retry_if_exception_type(RETRYABLE),
            stop=stop_after_attempt(self.cfg.retries + 1),
            wait=wait_exponential_jitter(initial=self.cfg.retry_initial, max=self.cfg.retry_max_wait,
                                         jitter=self.cfg.retry_initial / 2),
            reraise=False,
        )
        try:
            resp = retrying(once)
        except RetryError as exc:
            last = exc.last_attempt.exception()
            raise LLMError(self.redact.text(f"gave up after {tries} tries: {_describe(last)}")) from None
        except openai.AuthenticationError as exc:
            raise AuthError(self.redact.text(f"authentication failed: {_describe(exc)}")) from None
        except openai.APIError as exc:
            raise LLMError(self.redact.text(_describe(exc))) from None
        completion = self._parse(resp, key, tries)
        if completion.finish_reason != "length":
            # A cut-off answer is not cached: a rerun with a larger --max-tokens should ask again.
            self.cache.put(key, {"model": self.cfg.model, "content": completion.content,
                                 "finish_reason": completion.finish_reason,
                                 "prompt_tokens": completion.prompt_tokens,
                                 "completion_tokens": completion.completion_tokens,
                                 "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        return completion

    def _parse(self, resp: Any, key: str, tries: int) -> Completion:
        usage = getattr(resp, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        self.budget.charge(prompt_tokens + completion_tokens)
        choices = getattr(resp, "choices", None) or []
        if not choices:
            raise LLMError("the answer has no choices")
        choice = choices[0]
        content = getattr(choice.message, "content", None) or ""
        return Completion(content, getattr(choice, "finish_reason", None), prompt_tokens, completion_tokens,
                          False, key, tries)


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    msg = str(exc).splitlines()[0] if str(exc) else ""
    return f"{name}{f' (HTTP {status})' if status else ''}: {msg}"[:500]
