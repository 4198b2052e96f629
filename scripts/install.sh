#!/usr/bin/env bash
# Install kernel-miner from this checkout. Shared by Dockerfile.cuda, Dockerfile.rocm and CI, so the
# images and the bare-runner CI install exactly the same way.
#
# usage: scripts/install.sh [--extras LIST] [--venv DIR] [--python PY] [--editable] [-- PIP_ARGS...]
#
# Environment (flags win over the environment):
#   KM_EXTRAS    comma-separated extras from pyproject.toml, e.g. "test" or "test,torch" (default: none).
#                "torch" resolves to the pinned torch==2.13.0; the core install never pulls torch.
#                "hip" (build --toolchain hip) is the same pinned torch, for its hipify mapping, plus hipcc
#                from apt (see KM_APT).
#   KM_VENV      create this virtual environment if it does not exist and install into it
#                (default: install into the interpreter given by KM_PYTHON).
#   KM_PYTHON    interpreter used to create the venv or to install into (default: python3).
#   KM_EDITABLE  1 for an editable install (development only; images use the default, a real install).
#   KM_PIP_ARGS  extra words passed to `pip install` (e.g. "--no-deps --no-build-isolation").
#   KM_APT       with the "hip" extra: 1 (default) installs hipcc with apt-get when it is missing and this
#                runs as root on an apt system (Debian/Ubuntu `hipcc`: HIP for gfx targets, no GPU needed);
#                0 never touches system packages.
#   KM_HIP       with the "hip" extra: a Debian suite (e.g. "trixie": HIP 5.7, clang 17) whose hipcc is
#                unpacked, not installed, into KM_HIP_PREFIX (default /opt/rocm-SUITE) beside the system's
#                (scripts/install_rocm_debian.sh; bookworm's own hipcc is HIP 5.2, without hip/hip_bf16.h).
#                Then build with `--hip-path /opt/rocm-SUITE` or KM_HIP_PATH=/opt/rocm-SUITE. Default: none.
#
# Idempotent: running it twice leaves the same installed package.
set -euo pipefail

die() { echo "install.sh: error: $*" >&2; exit 2; }

repo_root="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)"
[[ -f "$repo_root/pyproject.toml" ]] || die "no pyproject.toml in $repo_root"

extras="${KM_EXTRAS:-}"
venv="${KM_VENV:-}"
python="${KM_PYTHON:-python3}"
editable="${KM_EDITABLE:-0}"
apt="${KM_APT:-1}"
hip_suite="${KM_HIP:-}"
read -r -a pip_args <<<"${KM_PIP_ARGS:-}"

while (($#)); do
  case "$1" in
    --extras) (($# >= 2)) || die "--extras needs a value"; extras="$2"; shift 2 ;;
    --extras=*) extras="${1#*=}"; shift ;;
    --venv) (($# >= 2)) || die "--venv needs a value"; venv="$2"; shift 2 ;;
    --venv=*) venv="${1#*=}"; shift ;;
    --python) (($# >= 2)) || die "--python needs a value"; python="$2"; shift 2 ;;
    --python=*) python="${1#*=}"; shift ;;
    --editable) editable=1; shift ;;
    -h|--help) sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; pip_args+=("$@"); break ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
done

# Extras are interpolated into a pip requirement: allow only names pip would accept.
extras="${extras// /}"
[[ "$extras" =~ ^[A-Za-z0-9_,.-]*$ ]] || die "bad KM_EXTRAS/--extras value: $extras"

command -v "$python" >/dev/null 2>&1 || die "python interpreter not found: $python"
"$python" - <<'EOF' || die "kernel-miner needs Python >= 3.10"
import sys
sys.exit(0 if sys.version_info >= (3, 10) else 1)
EOF

if [[ -n "$venv" ]]; then
  if [[ ! -x "$venv/bin/python" ]]; then
    "$python" -m venv "$venv" || die "could not create venv $venv (is python3-venv installed?)"
  fi
  python="$venv/bin/python"
fi
# Absolute, so the checks below can run from / whatever was passed in.
python="$("$python" -c 'import sys; print(sys.executable)')"

spec_suffix=""
[[ -n "$extras" ]] && spec_suffix="[$extras]"

if [[ "$editable" == 1 ]]; then
  "$python" -m pip install "${pip_args[@]}" -e "$repo_root$spec_suffix"
else
  # Build from a clean copy: setuptools reuses build/lib inside the source tree, so an in-tree build
  # can ship modules that were deleted since the last build, and a read-only checkout could not build.
  src="$(mktemp -d "${TMPDIR:-/tmp}/kernel-miner-src.XXXXXX")"
  trap 'rm -rf -- "$src"' EXIT
  tar -C "$repo_root" \
    --exclude=./.git --exclude=./build --exclude=./dist --exclude='*.egg-info' \
    --exclude=./.venv --exclude='__pycache__' --exclude=./.pytest_cache --exclude=./.ruff_cache \
    --exclude=./extracted --exclude=./out \
    -cf - . | tar -C "$src" -xf -
  "$python" -m pip install "${pip_args[@]}" "$src$spec_suffix"
fi

# Fail here, not at first use, if the console script or the packaged data did not make it.
bindir="$("$python" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
[[ -x "$bindir/kernel-miner" ]] || die "kernel-miner was not installed into $bindir"
(cd / && "$python" - <<'EOF') || die "installed package is missing its data files"
from importlib.resources import files
import sys
need = [
    files("miner.frontends") / "include" / "km_cuda_parse.h",
    files("miner.metadata"),
    files("miner.templates"),
]
missing = [str(p) for p in need if not (p.is_file() or p.is_dir())]
if missing:
    print("missing:", *missing, file=sys.stderr)
    sys.exit(1)
EOF
# build --toolchain hip needs hipcc: a system package, so pip cannot bring it.
if [[ ",$extras," == *,hip,* ]] && ! command -v hipcc >/dev/null 2>&1 && ! [[ -x /opt/rocm/bin/hipcc ]]; then
  if [[ "$apt" == 1 && "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "install.sh: installing hipcc with apt-get (KM_APT=0 to skip)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends hipcc >/dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends hipcc >/dev/null; } \
      || echo "install.sh: warning: apt-get could not install hipcc; build --toolchain hip will say so" >&2
  else
    echo "install.sh: note: no hipcc found; install ROCm or 'apt-get install hipcc' for build --toolchain hip" >&2
  fi
fi
if [[ ",$extras," == *,hip,* && -n "$hip_suite" ]]; then
  bash "$repo_root/scripts/install_rocm_debian.sh" "$hip_suite" "${KM_HIP_PREFIX:-/opt/rocm-$hip_suite}" \
    || die "KM_HIP=$hip_suite: the $hip_suite HIP prefix could not be made (see above)"
fi
echo "kernel-miner installed: $bindir/kernel-miner"
