"""The mutation check: a generated test is kept only if it passes on the real unit and fails on each mutant.

`judge_test(kernel_dir, test_path, timeout)` makes the mutants of the kernel (miner.enrich.mutants for
CUDA, miner.triton.mutants for `language: triton`), writes each as a copy of the kernel folder under a
temporary dataset, builds them all with the build stage (CUDA: miner.builder, batched, cached, a mutant
that does not compile is bisected out and left aside; Triton: miner.triton.build's AOT compile where
triton is installed, else a parse), and runs the test against every mutant that built, through the
same child-process runner as the real run. A mutant is killed when the test fails on it in any way
(assertion, error, crash, CUDA error, timeout); it survives when the test passes or skips there.

The score is killed / mutants the test ran on (every built one, unless stopped at the first
survivor). The test is accepted when every built mutant is killed; a survivor goes
back to the model in the repair loop with what the mutant changed.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from miner import dataset

KILLED = ("failed", "error", "timeout", "crashed", "cuda_error")
# Build outputs and earlier stages' records are not part of a mutant; tests are copied in one by one.
_IGNORE = shutil.ignore_patterns("tests", "enrich", "*.so", "build.log", "__pycache__", ".pytest_cache")

Runner = Callable[[Path, Path, float], tuple[str, str]]


@dataclass
class MutantResult:
    name: str
    kind: str
    description: str
    build: str = "not_built"   # ok | failed | timeout | skipped | not_built
    outcome: str | None = None  # the test's outcome on this mutant, when it ran

    @property
    def killed(self) -> bool:
        return self.outcome in KILLED


@dataclass
class MutationReport:
    status: str                 # passed | survived | unavailable
    reason: str = ""
    mutants: list[MutantResult] = field(default_factory=list)

    @property
    def built(self) -> list[MutantResult]:
        return [m for m in self.mutants if m.build == "ok"]

    @property
    def ran(self) -> list[MutantResult]:
        return [m for m in self.built if m.outcome is not None]

    @property
    def survivors(self) -> list[MutantResult]:
        return [m for m in self.ran if not m.killed]

    def score(self) -> float | None:
        ran = self.ran
        return round(sum(m.killed for m in ran) / len(ran), 4) if ran else None

    def record(self) -> dict[str, Any]:
        """The `mutation` block of the tests stage (enrich/record.json, metadata enrichment)."""
        return {"status": self.status, "score": self.score(), "made": len(self.mutants),
                "built": len(self.built), "ran": len(self.ran), "killed": sum(m.killed for m in self.ran),
                "survivors": [m.name for m in self.survivors], "reason": self.reason,
                "mutants": [asdict(m) for m in self.mutants]}

    def feedback(self) -> str:
        """What a repair prompt needs: which bugs the test let through."""
        lines = [f"The test passed on the real kernel but also on {len(self.survivors)} of {len(self.ran)} "
                 "deliberately broken copies of it (mutants), so it would not notice these bugs:"]
        lines += [f"- {m.name}: {m.description} (outcome on the mutant: {m.outcome})" for m in self.survivors]
        lines.append("Strengthen the test so that it fails on each of them: read every output element, "
                     "compare values against an independent reference with tight tolerances, use inputs "
                     "where every term of the computation matters (no zeros or ones only).")
        return "\n".join(lines)


def not_run(reason: str) -> dict[str, Any]:
    return {"status": "not_run", "score": None, "made": 0, "built": 0, "ran": 0, "killed": 0, "survivors": [],
            "reason": reason, "mutants": []}


def _mutant_folder_name(kind_name: str, kernel_id: str) -> str:
    # The dataset's id pattern (name-hash12), so every stage reads a mutant folder like a kernel's.
    suffix = kernel_id.rsplit("-", 1)[-1] if "-" in kernel_id else "000000000000"
    return f"{kind_name.replace('.', '_')}-{suffix}"


def prepare_mutants(kernel_dir: Path, root: Path, per_kind: int = 2) -> dict[str, tuple[MutantResult, Path]]:
    """Copy the kernel folder once per mutant under `root`, every unit of the kernel mutated alike, and
    list them in `root/<kernel id>.mutants.json` (so building and running them needs no parser)."""
    from miner.enrich.mutants import Mutant

    meta = dataset.load_metadata(kernel_dir)
    name = str(meta.get("name", ""))
    language = str(meta.get("language") or "cuda")
    if language == "triton":
        from miner.triton.mutants import make_mutants  # Python's ast: no tree-sitter needed
    else:
        from miner.enrich.mutants import make_mutants  # tree-sitter: only where CUDA mutants are made
    # The kernel's own AOT result: a Triton mutant that fails to compile counts as unbuilt only if the
    # kernel itself compiled (a guessed signature failing both says nothing about the mutant).
    reference_build = next(((i.get("build") or {}).get("status", "not_built")
                            for i in meta.get("instantiations") or []), "not_built")
    units: dict[str, str] = {}
    for inst in meta.get("instantiations") or []:
        rel = inst.get("unit")
        if rel and (kernel_dir / rel).is_file():
            units[rel] = (kernel_dir / rel).read_text(encoding="utf-8", errors="replace")
    per_unit = {rel: {m.name: m for m in make_mutants(text, name, per_kind)} for rel, text in units.items()}
    names: list[str] = []
    for found in per_unit.values():
        names += [n for n in found if n not in names]
    out: dict[str, tuple[MutantResult, Path]] = {}
    for mname in names:
        folder = root / _mutant_folder_name(mname, kernel_dir.name)
        shutil.copytree(kernel_dir, folder, ignore=_IGNORE)
        first: Mutant | None = None
        for rel, found in per_unit.items():
            if mname in found:
                (folder / rel).write_text(found[mname].source, encoding="utf-8")
                first = first or found[mname]
        clean = {k: v for k, v in meta.items() if k not in ("build", "validation", "enrichment")}
        clean["id"] = folder.name
        clean["instantiations"] = [{k: v for k, v in i.items() if k != "build"}
                                   for i in meta.get("instantiations") or []]
        (folder / dataset.METADATA).write_text(json.dumps(clean, indent=1), encoding="utf-8")
        assert first is not None
        out[mname] = (MutantResult(mname, first.kind, first.description), folder)
    manifest = {n: {"kind": m.kind, "description": m.description, "folder": f.name, "language": language,
                    "reference_build": reference_build} for n, (m, f) in out.items()}
    (root / f"{kernel_dir.name}.mutants.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return out


def load_mutants(root: Path, kernel_id: str) -> dict[str, tuple[MutantResult, Path]]:
    """The mutants `prepare_mutants` wrote for `kernel_id` under `root`."""
    manifest = json.loads((root / f"{kernel_id}.mutants.json").read_text(encoding="utf-8"))
    return {n: (MutantResult(n, m["kind"], m["description"]), root / m["folder"]) for n, m in manifest.items()}


def _arch(meta: dict[str, Any]) -> str | None:
    for inst in meta.get("instantiations") or []:
        arch = (inst.get("build") or {}).get("arch")
        if arch:
            return str(arch)
    return None


def build_mutants(root: Path, arch: str | None) -> dict[str, str]:
    """Build every mutant folder under `root` with its language's build stage; {folder name: best unit status}.

    CUDA mutants go through miner.builder (nvcc). A Triton mutant is built when its AOT compile succeeds
    (miner.triton.build, where triton is installed): one that does not compile would fail any test at its
    first launch and pass for "killed". Where the kernel itself did not compile ahead of time (a guessed
    signature) or triton is absent, a Triton mutant that parses counts as built: Triton compiles at launch."""
    manifests: dict[str, dict[str, Any]] = {}
    for path in root.glob("*.mutants.json"):
        for entry in json.loads(path.read_text(encoding="utf-8")).values():
            manifests[entry["folder"]] = entry
    triton, cuda = [], []
    for kdir in dataset.kernel_dirs(root):
        (triton if dataset.load_metadata(kdir).get("language") == "triton" else cuda).append(kdir)
    status: dict[str, str] = {}
    if cuda:
        from miner.builder.driver import build_dataset
        from miner.builder.toolchain import BuildOptions, find_nvcc

        jobs = max(1, min(8, (os.cpu_count() or 2) // 2))
        opts = BuildOptions(jobs=jobs) if arch is None else BuildOptions(arch=arch, jobs=jobs)
        build_dataset(root, opts, find_nvcc())
        for kdir in cuda:
            got = [(i.get("build") or {}).get("status", "not_built")
                   for i in dataset.load_metadata(kdir).get("instantiations") or []]
            status[kdir.name] = "ok" if "ok" in got else (got[0] if got else "not_built")
    if triton:
        status.update(_build_triton(root, triton, arch, manifests))
    return status


def _parses(kdir: Path) -> bool:
    import ast

    try:
        for inst in dataset.load_metadata(kdir).get("instantiations") or []:
            ast.parse((kdir / inst["unit"]).read_text(encoding="utf-8"))
    except (OSError, KeyError, SyntaxError, ValueError):
        return False
    return True


def _build_triton(root: Path, kdirs: list[Path], arch: str | None,
                  manifests: dict[str, dict[str, Any]]) -> dict[str, str]:
    import importlib.util

    status = {k.name: "ok" if _parses(k) else "failed" for k in kdirs}
    if importlib.util.find_spec("triton") is None:
        return status
    from miner.targets import SM
    from miner.triton.build import build_dataset as build_triton

    jobs = max(1, min(4, (os.cpu_count() or 2) // 2))
    build_triton(root, arch=arch or SM, jobs=jobs)  # it takes only the Triton folders
    for kdir in kdirs:
        got = next(((i.get("build") or {}).get("status", "not_built")
                    for i in dataset.load_metadata(kdir).get("instantiations") or []), "not_built")
        if (manifests.get(kdir.name) or {}).get("reference_build", "ok") == "ok" or got == "ok":
            status[kdir.name] = got if status[kdir.name] == "ok" else "failed"
    return status


def judge_test(kernel_dir: Path, test_path: Path, timeout: float, run: Runner,
               per_kind: int = 2, work: Path | None = None) -> MutationReport:
    """Run `test_path` (a test of `kernel_dir`, already passed there) against every mutant of the kernel."""
    with tempfile.TemporaryDirectory(prefix="km-mutants-", dir=work) as tmp:
        root = Path(tmp)
        try:
            prepared = prepare_mutants(kernel_dir, root, per_kind)
        except (OSError, ValueError, ImportError) as exc:
            return MutationReport("unavailable", f"mutants could not be made: {exc}")
        if not prepared:
            return MutationReport("unavailable", "the kernel's definition was not found in its units")
        try:
            built = build_mutants(root, _arch(dataset.load_metadata(kernel_dir)))
        except Exception as exc:  # noqa: BLE001 - a missing nvcc or a builder fault: no verdict, recorded
            return MutationReport("unavailable", f"mutants could not be built: {type(exc).__name__}: {exc}",
                                  [m for m, _ in prepared.values()])
        return run_mutants(prepared, built, test_path, timeout, run)


def run_mutants(prepared: dict[str, tuple[MutantResult, Path]], built: dict[str, str], test_path: Path,
                timeout: float, run: Runner, stop_at_survivor: bool = False) -> MutationReport:
    """Run the test on every built mutant (a copy of it in the mutant's tests/); the verdict.

    stop_at_survivor: stop at the first mutant the test does not kill (enough to refuse the test)."""
    results = [m for m, _ in prepared.values()]
    for m, folder in prepared.values():
        m.build, m.outcome = built.get(folder.name, "not_built"), None
        if m.build != "ok":
            continue
        (folder / "tests").mkdir(exist_ok=True)
        target = folder / "tests" / test_path.name
        shutil.copyfile(test_path, target)
        try:
            m.outcome, _ = run(folder, target, timeout)
        finally:
            target.unlink(missing_ok=True)
        if stop_at_survivor and not m.killed:
            break
    report = MutationReport("passed", "", results)
    if not report.built:
        report.status, report.reason = "unavailable", "no mutant built"
    elif report.survivors:
        report.status = "survived"
        report.reason = "passed on " + ", ".join(m.name for m in report.survivors)
    return report
