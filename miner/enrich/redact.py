"""Keep the API key out of every log line, record and error message we write."""

from __future__ import annotations

from typing import Any

MASK = "***"


class Redactor:
    def __init__(self, *secrets: str | None) -> None:
        # Longest first so a secret containing another is masked whole.
        self._secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self._secrets:
            value = value.replace(secret, MASK)
            # Providers echo a key partly ("sk-abc...wxyz"): mask its long prefix too.
            if len(secret) >= 12:
                value = value.replace(secret[:8], MASK)
        return value

    def obj(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self.obj(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.obj(v) for v in value]
        return value
