"""hipcc (AMD platform) as a Toolchain: each CUDA unit translated into units/<inst>/unit.hip with torch's
hipify mapping, built into libunit_hip.so for --offload-arch gfx targets; resources from clang remarks.

hipcc picks its platform from HIP_PLATFORM and, left alone on a machine with nvcc, would pick NVIDIA:
HIP_PLATFORM=amd is always set for it. No AMD GPU is needed to compile. A ROCm install in a prefix of its own
(--hip-path / $KM_HIP_PATH, rocm_prefix.py) is used whole: its hipcc, headers and device libraries.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from miner import lazy_re
from miner.builder import hip_port, hip_translate, portability
from miner.builder.hip_implied import Implied, identity
from miner.builder.hip_resources import parse_remarks
from miner.builder.toolchain import find_executable
from miner.builder.toolchains import rocm_prefix
from miner.builder.toolchains.base import Toolchain
from miner.builder.unit_split import Unit, split_unit
from miner.dataset import atomic
from miner.errors import UsageError

if TYPE_CHECKING:
    from miner.builder.toolchain import BuildOptions

DEFAULT_HIP_ARCH = "gfx90a"
TRANSLATION_FORMAT = "km-hipify-8"  # bump when translate(), hip_port or the portability scans change
_GFX = lazy_re.compile(r"gfx[0-9a-f]{3,4}(?::(?:xnack|sramecc)[+-])*")


class Hipcc(Toolchain):
    name = "hip"
    compiler = "hipcc"
    key = "build_hip"
    library_name = "libunit_hip.so"
    log_name = "build_hip.log"
    source_suffix = ".hip"
    default_arch = DEFAULT_HIP_ARCH

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.first_arch = DEFAULT_HIP_ARCH
        self.findings: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self.ported: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self.prefix: rocm_prefix.RocmPrefix | None = None
        self.versions: dict[str, Any] = {}
        self.implied: Implied | None = None

    @classmethod
    def find(cls, explicit: str | None = None) -> str:
        path = find_executable("hipcc", explicit, [os.environ.get("ROCM_PATH"), os.environ.get("HIP_PATH"),
                                                   "/opt/rocm"],
                               "install ROCm or Debian's hipcc (apt-get install hipcc), put hipcc on PATH "
                               "or pass --hipcc PATH")
        hip_translate.hipify_version()  # the mapping is part of the toolchain: fail here, in one line, too
        return path

    def locate(self, explicit: str | None = None, home: str | None = None) -> None:
        """--hipcc wins for the executable; a configured prefix (--hip-path, $KM_HIP_PATH) gives its hipcc
        otherwise and, either way, the headers and device libraries that hipcc is run with."""
        self.prefix = rocm_prefix.configured(home)
        if self.prefix is not None and not explicit:
            hip_translate.hipify_version()
            self.path = str(self.prefix.hipcc)
        else:
            self.path = self.find(explicit)

    @classmethod
    def owns_arch(cls, item: str) -> bool:
        return bool(_GFX.fullmatch(item))

    def env(self) -> dict[str, str]:
        return {"HIP_PLATFORM": "amd", **(self.prefix.env() if self.prefix else {})}

    def invocation(self) -> list[str]:
        # The prefix's HIP headers ahead of the host's /usr/include, where a system hipcc's older ones may be:
        # ROCm 7's hipcc no longer adds -isystem $HIP_PATH/include itself (HIP 5.7's perl hipcc did).
        return ["-isystem", str(self.prefix.root / "include")] if self.prefix else []

    def version_id(self) -> str:
        try:
            # With a target named, hipcc does not probe for a GPU (rocm_agent_enumerator) first.
            out = subprocess.run([self.path, f"--offload-arch={DEFAULT_HIP_ARCH}", "--version"], capture_output=True,
                                 text=True, timeout=60, check=False, env=dict(os.environ, **self.env()))
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UsageError(f"cannot run {self.path} --version: {exc}") from None
        if out.returncode != 0 or "HIP version" not in out.stdout:
            raise UsageError(f"{self.path} --version failed: {(out.stderr or out.stdout).strip()[:200]}")
        tool_id = out.stdout.strip() + "\n" + hip_translate.hipify_version()
        if self.prefix is not None and str(self.prefix.root) not in tool_id:
            # The prefix (headers, device libraries, invocation()) is part of what the compiler is; hipcc
            # 5.x's --version names it already (clang's InstalledDir), later ones may not.
            tool_id += f"\nrocm prefix: {self.prefix.root}"
        self.versions = versions(tool_id, self.prefix)
        return tool_id

    @staticmethod
    def release(tool_id: str) -> str:
        m = re.search(r"HIP version: ([\w.-]+)", tool_id)
        return m.group(1) if m else "unknown"

    def flags(self, opts: BuildOptions) -> list[str]:
        items = [a.strip() for a in opts.arch.split(",") if a.strip()]
        if not items:
            raise UsageError("--arch is empty")
        for item in items:
            if not self.owns_arch(item):
                raise UsageError(f"--arch: {item!r} is not a gfx target (e.g. gfx90a, gfx942, gfx90a:xnack-)")
        self.first_arch = items[0]
        # hipcc 5.x adds -std=c++11 unless told otherwise; the units are written for nvcc's default, C++17.
        return ["-shared", "-fPIC", "-std=c++17", *(f"--offload-arch={a}" for a in items),
                "-Rpass-analysis=kernel-resource-usage", *opts.extra_flags]

    def unit_flags(self, flags: list[str]) -> list[str]:
        # nvcc's --expt-* switches mean nothing to clang (it allows constexpr host calls in device code and
        # extended lambdas anyway); the dialect and -D/-U do. A later -std overrides the fixed -std=c++17.
        return [f for f in flags if f.startswith(("-std=", "-D", "-U"))]

    def check(self, opts: BuildOptions, tool_id: str, cache_root: Path) -> None:
        """Every gfx target known to this hipcc: an unknown one would fail every unit with the same error.
        One empty compile, remembered per compiler and target list in the build cache."""
        key = hashlib.sha256(f"{tool_id}\0{opts.arch}".encode()).hexdigest()
        mark = cache_root / "hipify" / f"targets-{key[:24]}.ok"
        if mark.is_file():
            return
        with tempfile.TemporaryDirectory(prefix="km-hip-targets-") as tmp:
            src = Path(tmp) / "empty.hip"
            src.write_text("\n", encoding="utf-8")
            try:
                out = subprocess.run([self.path, *self.invocation(),
                                      *(f"--offload-arch={a}" for a in opts.arch.split(",") if a.strip()),
                                      "-fsyntax-only", str(src)], capture_output=True, text=True, timeout=120,
                                     check=False, env=dict(os.environ, **self.env()), cwd=tmp)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise UsageError(f"cannot run {self.path}: {exc}") from None
        bad = re.search(r"invalid target ID '([^']+)'|[Uu]nsupported (?:CUDA|HIP) gpu architecture:? '?([\w:+-]+)",
                        out.stderr + out.stdout)
        if bad:
            raise UsageError(f"--arch: {bad.group(1) or bad.group(2)} is not a target this hipcc knows "
                             f"(HIP {self.release(tool_id)}); e.g. gfx90a, gfx908, gfx940")
        atomic.write_text(mark, opts.arch + "\n")

    def parse_resources(self, log: str) -> dict[str, dict[str, Any]]:
        return parse_remarks(log, self.first_arch)

    def _translated(self, cuda_text: str, cache_root: Path | None
                    ) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
        """The HIP text, findings and ported constructs (hip_port.py) of a CUDA unit, kept in the build cache
        by content: a warm rebuild reads them instead of running the mapping and the scans again."""
        # The headers nvcc brings with the unit's includes (hip_implied.py) depend on that nvcc too.
        tag = f"{TRANSLATION_FORMAT}\0{hip_translate.hipify_version()}\0{identity()}\0"
        key = hashlib.sha256((tag + cuda_text).encode()).hexdigest()
        path = cache_root / "hipify" / key[:2] / f"{key}.json" if cache_root else None
        if path is not None:
            try:
                rec = json.loads(path.read_text(encoding="utf-8"))
                return rec["hip"], rec["findings"], rec["ported"]
            except (OSError, ValueError, KeyError):
                pass
        hip_text = hip_translate.translate(cuda_text)
        findings = [f.record() for f in portability.find(cuda_text, hip_text, hip_translate.is_mapped)]
        if self.implied is None or self.implied.cache_root != cache_root:
            self.implied = Implied(cache_root)
        hip_text = self.implied.add(cuda_text, hip_text, hip_translate.mapping())
        # Findings are the CUDA constructs' (a ported full-mask shuffle keeps its wave64 finding); the port
        # comes last, since the implied headers need the mapping's line-for-line text.
        hip_text, ported = hip_port.port(cuda_text, hip_text)
        rows = [p.record() for p in ported]
        if path is not None:
            atomic.write_json(path, {"hip": hip_text, "findings": findings, "ported": rows})
        return hip_text, findings, rows

    def prepare(self, units: list[Unit], cache_root: Path | None = None) -> list[Unit]:
        """Translate every CUDA unit into unit.hip beside it (rewritten only when its text changes) and
        note its portability findings."""
        out: list[Unit] = []
        for u in units:
            hip_text, findings, ported = self._translated(u.text, cache_root)
            rel = str(Path(u.rel).with_suffix(".hip"))
            dst = u.kernel_dir / rel
            try:
                same = dst.read_text(encoding="utf-8") == hip_text
            except (OSError, UnicodeDecodeError):
                same = False
            if not same:
                atomic.write_text(dst, hip_text)
            self.findings[(u.kernel_id, u.index)] = findings
            self.ported[(u.kernel_id, u.index)] = ported
            h = Unit(u.kernel_id, u.index, u.inst_id, u.kernel_dir, rel, u.symbol, u.kernel_name, text=hip_text,
                     flags=list(u.flags), compile_flags=list(u.compile_flags), vendored=list(u.vendored))
            split_unit(h)
            out.append(h)
        return out

    def record_extra(self, u: Unit, rec: dict[str, Any], log: str) -> dict[str, Any]:
        found = self.findings.get((u.kernel_id, u.index), [])
        extra: dict[str, Any] = {"unit": u.rel, "hip_version": self.versions.get("hip_version"),
                                 "clang": self.versions.get("clang"), "portability": found,
                                 "ported": self.ported.get((u.kernel_id, u.index), [])}
        if rec["status"] == "ok":
            extra["portable"] = not found
        elif rec["status"] == "failed":
            extra["error_class"] = portability.classify(rec.get("error"), log, found)
        return extra

    def summary_extra(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        # `hipcc` (the HIP release) is already in every summary; the compiler and prefix behind it too:
        return {"clang": self.versions.get("clang"), "rocm_path": self.versions.get("rocm_path"),
                "with_findings": sum(1 for r in records if r.get("status") == "ok" and r.get("portability"))}


def versions(tool_id: str, prefix: rocm_prefix.RocmPrefix | None) -> dict[str, Any]:
    """What a HIP build record says about its compiler: the HIP release, hip-clang's version and the ROCm
    prefix it came from (None: the hipcc found on PATH / $ROCM_PATH)."""
    clang = re.search(r"clang version ([\w.-]+)", tool_id)
    return {"hip_version": Hipcc.release(tool_id), "clang": clang.group(1) if clang else "unknown",
            "rocm_path": str(prefix.root) if prefix else None}
