"""Request and token budget shared by all worker threads; exhaustion stops new requests cleanly."""

from __future__ import annotations

import threading


class BudgetExhausted(Exception):
    """Raised before a request that the budget no longer allows; the run stops scheduling work."""


class Budget:
    def __init__(self, max_requests: int | None = None, max_tokens: int | None = None) -> None:
        self.max_requests = max_requests
        self.max_tokens = max_tokens
        self.requests = 0
        self.tokens = 0
        self._lock = threading.Lock()

    def reserve(self) -> None:
        """Count one HTTP request about to be sent, or refuse it."""
        with self._lock:
            if self.max_requests is not None and self.requests >= self.max_requests:
                raise BudgetExhausted(f"request budget of {self.max_requests} spent")
            # Tokens are known only after an answer, so the token budget refuses the next request.
            if self.max_tokens is not None and self.tokens >= self.max_tokens:
                raise BudgetExhausted(f"token budget of {self.max_tokens} spent ({self.tokens} used)")
            self.requests += 1

    def charge(self, tokens: int) -> None:
        with self._lock:
            self.tokens += max(0, int(tokens))

    @property
    def exhausted(self) -> bool:
        with self._lock:
            return bool(
                (self.max_requests is not None and self.requests >= self.max_requests)
                or (self.max_tokens is not None and self.tokens >= self.max_tokens)
            )

    def summary(self) -> dict[str, int | None]:
        with self._lock:
            return {"requests": self.requests, "tokens": self.tokens,
                    "max_requests": self.max_requests, "max_tokens": self.max_tokens}
