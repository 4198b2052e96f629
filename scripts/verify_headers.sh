#!/usr/bin/env bash
# Headers that originals include and an nvcc-only CUDA toolkit lacks (cuBLAS, cuSPARSE, cuSOLVER, cuDNN and its
# C++ frontend, NVRTC, NCCL, nvFatbin), taken from NVIDIA's PyPI wheels (headers only, no libraries: verify
# compiles to PTX and links nothing), for `verify -X=-I...`.
# Usage: scripts/verify_headers.sh DIR   -> writes DIR/<wheel>/... and prints the -X flags to pass.
# MPI: `apt-get install libmpich-dev` puts mpi.h under /usr/include/x86_64-linux-gnu/mpich.
set -euo pipefail
dest=${1:?usage: scripts/verify_headers.sh DIR}
mkdir -p "$dest"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
wheels=(nvidia-cublas nvidia-cusparse nvidia-cusolver nvidia-cudnn-cu13 nvidia-cudnn-frontend
        nvidia-cuda-nvrtc nvidia-nccl-cu13 nvidia-nvfatbin)
for w in "${wheels[@]}"; do
  pip download --no-deps --only-binary=:all: -q "$w" -d "$tmp/$w" >/dev/null
  python3 - "$tmp/$w" "$dest/$w" <<'PY'
import glob, sys, zipfile
src, out = sys.argv[1], sys.argv[2]
for whl in glob.glob(f"{src}/*.whl"):
    z = zipfile.ZipFile(whl)
    z.extractall(out, members=[n for n in z.namelist() if "include/" in n and n.endswith((".h", ".hpp", ".cuh", ".inl"))])
PY
done
flags=()
while IFS= read -r d; do flags+=("-X=-I$d"); done < <(find "$dest" -type d -name include -not -path '*/include/*' | sort)
[ -d /usr/include/x86_64-linux-gnu/mpich ] && flags+=("-X=-I/usr/include/x86_64-linux-gnu/mpich")
echo "${flags[@]}"
