"""Content-addressed PTX compiles: a key (source text, the project headers it reaches, flags, nvcc and
torch versions) seen before needs no nvcc call. A failed compile is kept too, so a rerun of a TU
that does not build costs nothing."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from miner import lazy_re
from miner.builder.compiler import Compiler
from miner.dataset import atomic

FORMAT = "km-verify-1"
_MISSING_HEADER = lazy_re.compile(r"fatal error: .*: No such file or directory|cannot open source file")
LOG_LIMIT = 20000


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernel-miner" / "verify"


@dataclass
class PtxResult:
    ok: bool
    ptx: str          # the PTX text ("" when the compile failed)
    log: str
    seconds: float
    cached: bool
    timed_out: bool = False


class PtxStore:
    def __init__(self, root: Path, nvcc: str, timeout: float) -> None:
        self.root = root
        self.nvcc, self.timeout = nvcc, timeout
        (root / "tmp").mkdir(parents=True, exist_ok=True)
        self.calls = 0

    def _paths(self, key: str) -> tuple[Path, Path]:
        d = self.root / key[:2]
        return d / f"{key}.json", d / f"{key}.ptx"

    def get(self, key: str) -> PtxResult | None:
        meta_path, ptx_path = self._paths(key)
        try:
            rec = json.loads(meta_path.read_text(encoding="utf-8"))
            ptx = ptx_path.read_text(encoding="utf-8") if rec["ok"] else ""
        except (OSError, json.JSONDecodeError, KeyError):
            return None
        return PtxResult(rec["ok"], ptx, rec.get("log", ""), rec.get("seconds", 0.0), True)

    def compile(self, key: str, source: Path | None, text: str | None, flags: list[str], cwd: Path,
                force: bool = False) -> PtxResult:
        """PTX of `source` (a file compiled where it lies) or of `text` (written to a temp file)."""
        if not force and (hit := self.get(key)) is not None:
            return hit
        tmp = Path(tempfile.mkdtemp(prefix="v-", dir=self.root / "tmp"))
        try:
            src = source
            if src is None:
                src = tmp / "source.cu"
                src.write_text(text or "", encoding="utf-8")
            out = tmp / "out.ptx"
            self.calls += 1
            res = Compiler(self.nvcc, flags, self.timeout).compile(str(src), out, cwd, tmp)
            ok = res.rc == 0 and out.is_file()
            ptx = out.read_text(encoding="utf-8", errors="replace") if ok else ""
            log = res.log[-LOG_LIMIT:] if res.rc is not None else f"timed out after {self.timeout:g} s"
            meta_path, ptx_path = self._paths(key)
            if ok:
                atomic.write_text(ptx_path, ptx)
            # Not kept: a timeout (it may be the machine's load) and a missing header (an install fixes it).
            if res.rc is not None and (ok or not _MISSING_HEADER.search(log)):
                atomic.write_json(meta_path, {"format": FORMAT, "ok": ok, "log": log,
                                              "seconds": round(res.seconds, 2)})
            return PtxResult(ok, ptx, log, res.seconds, False, timed_out=res.rc is None)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
