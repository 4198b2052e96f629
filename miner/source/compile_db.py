"""Per-file flags from a compile_commands.json: include dirs, defines, forced includes, std."""

from __future__ import annotations

import json
import os
import shlex

from miner.errors import UsageError

_KEEP_WITH_VALUE = ("-I", "-D", "-U", "-isystem", "-include", "-iquote", "-std=")


def _entry_args(entry: dict) -> list[str]:
    if "arguments" in entry:
        return list(entry["arguments"])
    return shlex.split(entry.get("command", ""))


def _filter(args: list[str], directory: str) -> list[str]:
    """Keep only what changes how the source parses; make paths absolute."""
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        for flag in _KEEP_WITH_VALUE:
            if a == flag and flag != "-std=" and i + 1 < len(args):
                value = args[i + 1]
                i += 1
                break
            if a.startswith(flag) and len(a) > len(flag):
                value = a[len(flag):]
                break
        else:
            i += 1
            continue
        if flag in ("-I", "-isystem", "-include", "-iquote"):
            value = os.path.normpath(os.path.join(directory, value))
            out += [flag, value] if flag != "-I" else [f"-I{value}"]
        elif flag == "-std=":
            out.append(a)
        else:
            out.append(f"{flag}{value}")
        i += 1
    return out


def load(path: str) -> dict[str, list[str]]:
    try:
        with open(path, encoding="utf-8") as fh:
            entries = json.load(fh)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read compile commands: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not a valid compile_commands.json: {exc}") from None
    if not isinstance(entries, list):
        raise UsageError(f"{path}: not a valid compile_commands.json: expected a list of entries")
    per_file: dict[str, list[str]] = {}
    for entry in entries:
        if not isinstance(entry, dict) or "file" not in entry:
            raise UsageError(f"{path}: not a valid compile_commands.json: entry without 'file'")
        directory = entry.get("directory", os.path.dirname(os.path.abspath(path)))
        file = os.path.realpath(os.path.join(directory, entry["file"]))
        per_file[file] = _filter(_entry_args(entry)[1:], directory)
    return per_file
