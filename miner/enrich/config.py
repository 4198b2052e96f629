"""Enrichment settings from CLI flags, a TOML file and the environment (in that order of precedence)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from miner.errors import UsageError

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

STAGES = ("analysis", "tests", "describe")


@dataclass
class EnrichConfig:
    model: str = "gpt-4o-mini"
    base_url: str | None = None
    # repr=False: a config printed in a log or a traceback never shows the key.
    api_key: str | None = field(default=None, repr=False)
    concurrency: int = 4
    max_attempts: int = 3
    stages: tuple[str, ...] = STAGES
    max_requests: int | None = None
    max_tokens: int | None = None
    timeout: float = 120.0
    kernels: tuple[str, ...] = ()
    temperature: float = 0.0
    completion_tokens: int = 4096
    retries: int = 5
    retry_initial: float = 1.0
    retry_max_wait: float = 30.0
    test_timeout: float = 300.0
    force: bool = False
    sandbox: bool = True  # False: --no-sandbox, generated tests run with the user's own rights
    # Files a generated test must not read (the --config file, which may hold the key): hidden in its sandbox.
    secret_files: tuple[str, ...] = field(default=(), repr=False)

    def request_params(self) -> dict[str, Any]:
        """Parameters that change the answer, hence part of the cache key."""
        return {"temperature": self.temperature, "max_tokens": self.completion_tokens}


_FILE_KEYS = {f.name for f in fields(EnrichConfig)} - {"secret_files"}


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UsageError(f"config file not found: {path}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"config file {path} is not valid TOML: {exc}") from exc
    # Accept either a top-level table or an [enrich] section, so one file can hold all commands.
    table = data.get("enrich", data)
    unknown = sorted(set(table) - _FILE_KEYS)
    if unknown:
        raise UsageError(f"config file {path}: unknown key(s): {', '.join(unknown)}")
    return dict(table)


def parse_stages(text: str) -> tuple[str, ...]:
    names = tuple(s.strip() for s in text.split(",") if s.strip())
    bad = [s for s in names if s not in STAGES]
    if bad or not names:
        raise UsageError(f"--stages: unknown stage(s) {', '.join(bad) or '(none)'}; "
                         f"choose from {','.join(STAGES)}")
    # Stages run in pipeline order whatever order the user typed them in.
    return tuple(s for s in STAGES if s in names)


def build_config(cli: dict[str, Any], config_path: str | None,
                 env: dict[str, str] | None = None) -> EnrichConfig:
    """Merge defaults < environment < config file < CLI flags (None in `cli` means not given)."""
    env = os.environ if env is None else env
    merged: dict[str, Any] = {}
    if env.get("OPENAI_API_KEY"):
        merged["api_key"] = env["OPENAI_API_KEY"]
    if env.get("OPENAI_BASE_URL"):
        merged["base_url"] = env["OPENAI_BASE_URL"]
    if env.get("OPENAI_MODEL"):
        merged["model"] = env["OPENAI_MODEL"]
    if config_path:
        merged.update(_read_toml(Path(config_path)))
        merged["secret_files"] = (str(Path(config_path).resolve()),)
    merged.update({k: v for k, v in cli.items() if v is not None})
    if isinstance(merged.get("stages"), str):
        merged["stages"] = parse_stages(merged["stages"])
    elif "stages" in merged:
        merged["stages"] = parse_stages(",".join(merged["stages"]))
    if isinstance(merged.get("kernels"), str):
        merged["kernels"] = tuple(k.strip() for k in merged["kernels"].split(",") if k.strip())
    elif "kernels" in merged:
        merged["kernels"] = tuple(merged["kernels"])
    try:
        cfg = EnrichConfig(**merged)
    except TypeError as exc:
        raise UsageError(f"bad enrich configuration: {exc}") from exc
    _check(cfg)
    return cfg


def _check(cfg: EnrichConfig) -> None:
    if not cfg.api_key:
        raise UsageError("no API key: set OPENAI_API_KEY or api_key in the --config file")
    if not cfg.model:
        raise UsageError("no model given: use --model")
    for name in ("concurrency", "max_attempts", "completion_tokens"):
        if int(getattr(cfg, name)) < 1:
            raise UsageError(f"{name.replace('_', '-')} must be at least 1")
    for name in ("max_requests", "max_tokens"):
        value = getattr(cfg, name)
        if value is not None and int(value) < 0:
            raise UsageError(f"--{name.replace('_', '-')} must not be negative")
    if cfg.timeout <= 0 or cfg.test_timeout <= 0:
        raise UsageError("timeouts must be positive")
