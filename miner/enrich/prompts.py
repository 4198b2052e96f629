"""Load the versioned jinja2 prompt templates and render chat messages from them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from miner import lazy_re
from miner.resources import data_dir, template_env

_VERSION = lazy_re.compile(r"\{#-?\s*version:\s*(\S+)\s*-?#\}")
_SPLIT = "=== user ==="


def prompts_dir() -> Path:
    return data_dir("templates") / "prompts"


@dataclass(frozen=True)
class Prompt:
    name: str
    version: str
    template: jinja2.Template

    def messages(self, **context: Any) -> list[dict[str, str]]:
        """Render to [system, user]; the template separates the two with a `=== user ===` line."""
        text = self.template.render(**context)
        system, sep, user = text.partition(_SPLIT)
        if not sep:
            return [{"role": "user", "content": text.strip() + "\n"}]
        return [{"role": "system", "content": system.strip() + "\n"},
                {"role": "user", "content": user.strip() + "\n"}]


def load_prompt(name: str, language: str | None = None) -> Prompt:
    """Template `name`; for a language with its own templates (prompts/triton/), that one when it exists."""
    root = prompts_dir()
    if language and language != "cuda" and (root / language / f"{name}.j2").is_file():
        name = f"{language}/{name}"
    source = (root / f"{name}.j2").read_text(encoding="utf-8")
    m = _VERSION.search(source)
    if not m:
        raise ValueError(f"prompt template {name}.j2 has no '{{# version: ... #}}' header")
    return Prompt(name, m.group(1), template_env().get_template(f"prompts/{name}.j2"))
