#!/usr/bin/env bash
# Put a newer Debian HIP (hipcc, hip-clang, HIP headers, AMDGPU device libraries) into a prefix of its own,
# beside the system's packages, for `kernel-miner build --toolchain hip --hip-path PREFIX` ($KM_HIP_PATH).
#
# usage: scripts/install_rocm_debian.sh [SUITE [PREFIX]]     (default: trixie /opt/rocm-trixie)
#
# Nothing of the system changes: apt runs on a private sources list, state and cache (a temporary folder),
# `apt-get download` fetches the packages and `dpkg-deb -x` unpacks them into PREFIX; nothing is installed.
# The suite's binaries need a newer glibc than the host's (trixie's libLLVM-17 wants GLIBC_2.38, bookworm
# has 2.36), so the suite's own libc6/libstdc++6/... are unpacked too and every executable is pointed at
# them with patchelf (interpreter + RPATH; libraries whose RUNPATH is $ORIGIN/../lib get the prefix's
# folders as well, since a RUNPATH hides the executable's RPATH from their own dependencies).
# The host still provides /usr/bin/ld (binutils) and its C++ headers and crt files (libstdc++-dev,
# libc6-dev) for the host half of each HIP unit, and perl for hipcc.
#
# Environment: KM_DEBIAN_MIRROR (default http://deb.debian.org/debian).
# Idempotent: PREFIX is rebuilt in PREFIX.new and swapped in only when its hipcc compiled a test kernel.
set -euo pipefail

die() { echo "install_rocm_debian.sh: error: $*" >&2; exit 2; }

suite="${1:-trixie}"
prefix="${2:-/opt/rocm-$suite}"
mirror="${KM_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
[[ "$suite" =~ ^[a-z]+$ ]] || die "bad suite name: $suite"
[[ "$prefix" == /* ]] || die "PREFIX must be an absolute path: $prefix"
for tool in apt-get apt-cache dpkg-deb; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found: this needs a Debian/Ubuntu system"
done
# The host half of a HIP unit is compiled against the host's C++ library and linked by its ld.
command -v ld >/dev/null 2>&1 && command -v perl >/dev/null 2>&1 && compgen -G '/usr/include/c++/*/vector' >/dev/null \
  || die "needs the host's ld, perl and C++ headers first (apt-get install g++ perl)"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[[ -f "$keyring" ]] || die "$keyring missing (apt-get install debian-archive-keyring)"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/km-rocm-$suite.XXXXXX")"
trap 'rm -rf -- "$tmp"' EXIT
mkdir -p "$tmp"/{lists/partial,cache/archives/partial,parts,prefs,debs}
echo "deb [signed-by=$keyring] $mirror $suite main" >"$tmp/sources.list"
apt_opts=(-o "Dir::Etc::sourcelist=$tmp/sources.list" -o "Dir::Etc::sourceparts=$tmp/parts"
          -o "Dir::Etc::preferencesparts=$tmp/prefs" -o "Dir::State::Lists=$tmp/lists"
          -o "Dir::Cache=$tmp/cache" -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
apt-get "${apt_opts[@]}" -qq update || die "apt-get update for $suite failed ($mirror)"
known() { apt-cache "${apt_opts[@]}" show "$1" >/dev/null 2>&1; }
pick() { local n; for n in "$@"; do known "$n" && { echo "$n"; return; }; done; die "$suite has none of: $*"; }
depends() {  # the package names a package depends on (first of each alternative)
  apt-cache "${apt_opts[@]}" depends --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
    --no-enhances "$1" | sed -n 's/^ *|\{0,1\}Depends: <\{0,1\}\([^ >]*\)>\{0,1\}$/\1/p'
}

known hipcc || die "$suite has no hipcc package"
llvm="$(apt-cache "${apt_opts[@]}" show hipcc | sed -n 's/^Depends:.*clang-\([0-9][0-9]*\).*/\1/p' | head -1)"
[[ -n "$llvm" ]] || die "cannot tell which clang $suite's hipcc uses"
hip_version="$(apt-cache "${apt_opts[@]}" show hipcc | sed -n 's/^Version: //p' | head -1)"
echo "install_rocm_debian.sh: $suite hipcc $hip_version (clang $llvm) -> $prefix"
stamp="$suite hipcc $hip_version"
if [[ "$(cat "$prefix/.km-rocm-debian" 2>/dev/null)" == "$stamp" && -x "$prefix/usr/bin/hipcc" ]]; then
  echo "install_rocm_debian.sh: already there: export KM_HIP_PATH=$prefix"
  exit 0
fi

# The compiler side (what `hipcc -shared --offload-arch=...` runs: clang, lld, clang-offload-bundler, the
# resource headers, compiler-rt builtins, device bitcode), HIP's headers and the libraries it links.
libllvm="$(pick "libllvm${llvm}t64" "libllvm$llvm")"
pkgs=(hipcc "clang-$llvm" "clang-tools-$llvm" "lld-$llvm" "llvm-$llvm-linker-tools"
      "libclang-common-$llvm-dev" "libclang-rt-$llvm-dev" "$(pick "rocm-device-libs-$llvm" rocm-device-libs)"
      "$libllvm" "$(pick "libclang-cpp${llvm}t64" "libclang-cpp$llvm")"
      "$(pick "libclang1-${llvm}t64" "libclang1-$llvm")" libamdhip64-dev)
for dev in libamdhip64-dev libamd-comgr-dev libhsa-runtime-dev; do
  known "$dev" || continue
  [[ " ${pkgs[*]} " == *" $dev "* ]] || pkgs+=("$dev")
  while read -r dep; do [[ "$dep" =~ ^lib(amdhip64|hiprtc|amd-comgr|hsa-runtime) ]] && pkgs+=("$dep"); done < <(depends "$dev")
done
# The suite's C/C++ runtime and what libLLVM needs, followed through their dependencies.
mapfile -t queue < <(printf '%s\n' libc6 libstdc++6 libgcc-s1; depends "$libllvm")
declare -A seen=()
while ((${#queue[@]})); do
  p="${queue[0]}"; queue=("${queue[@]:1}")
  [[ -n "${seen[$p]:-}" || "$p" == *-dev || "$p" =~ ^(libllvm|libclang|gcc-|perl|debconf) ]] && continue
  seen[$p]=1; pkgs+=("$p")
  mapfile -t more < <(depends "$p"); queue+=("${more[@]}")
done
mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
(cd "$tmp/debs" && apt-get "${apt_opts[@]}" -qq download "${pkgs[@]}" patchelf) \
  || die "apt-get download failed: ${pkgs[*]}"

new="$prefix.new"
rm -rf -- "$new"
mkdir -p "$new"
for deb in "$tmp"/debs/*.deb; do
  [[ "$deb" == */patchelf_* ]] || dpkg-deb -x "$deb" "$new"
done
loader="$(find "$new/usr/lib" -maxdepth 2 -name 'ld-linux*.so.*' -type f | head -1)"
[[ -n "$loader" ]] || die "no dynamic loader in $suite's libc6"
libdir="$(dirname "$loader")"
rpath="${libdir/#$new/$prefix}:$prefix/usr/lib/llvm-$llvm/lib"
# patchelf: the host's, else the suite's own, run through the suite's loader (it needs the newer glibc too).
if command -v patchelf >/dev/null 2>&1; then
  patchelf_cmd=(patchelf)
else
  dpkg-deb -x "$tmp"/debs/patchelf_*.deb "$tmp/patchelf"
  patchelf_cmd=("$loader" --library-path "$libdir" "$tmp/patchelf/usr/bin/patchelf")
fi
n=0
while IFS= read -r -d '' f; do
  [[ "$(head -c4 "$f")" == $'\x7fELF' ]] || continue
  # Executables only: libc.so.6 has an interpreter too, and is the one patchelf itself may be running on.
  if [[ "$f" == */bin/* ]] && "${patchelf_cmd[@]}" --print-interpreter "$f" >/dev/null 2>&1; then
    "${patchelf_cmd[@]}" --set-interpreter "${loader/#$new/$prefix}" --force-rpath --set-rpath "$rpath" "$f"
    n=$((n + 1))
  elif [[ "$("${patchelf_cmd[@]}" --print-rpath "$f" 2>/dev/null)" == *'$ORIGIN/../lib'* ]]; then
    "${patchelf_cmd[@]}" --force-rpath --set-rpath "$rpath" "$f"
  fi
done < <(find "$new/usr/bin" "$new/usr/lib" -type f \( -perm -u+x -o -name '*.so*' \) -print0)
echo "install_rocm_debian.sh: $n executables pointed at $suite's loader"

# Swap in, then prove it: a HIP kernel with a header the older HIP lacks, for gfx90a, run as the miner runs
# a prefix's hipcc (rocm_prefix.py: its environment, and its include folder ahead of the host's /usr/include,
# where a system hipcc's older HIP headers may be).
rm -rf -- "$prefix.old"
[[ -e "$prefix" ]] && mv -- "$prefix" "$prefix.old"
mv -- "$new" "$prefix"
cat >"$tmp/t.hip" <<'EOF'
#include <hip/hip_runtime.h>
#include <hip/hip_bf16.h>
__global__ void km_smoke(float *x) { x[threadIdx.x] = __shfl_down(x[threadIdx.x], 1); }
EOF
device_libs="$(find "$prefix/usr" -path '*amdgcn/bitcode/ockl.bc' | head -1)"
if ! (cd "$tmp" && HIP_PLATFORM=amd HIP_PATH="$prefix/usr" ROCM_PATH="$prefix/usr" \
      DEVICE_LIB_PATH="$(dirname "$device_libs")" "$prefix/usr/bin/hipcc" -isystem "$prefix/usr/include" \
      --offload-arch=gfx90a -c t.hip -o t.o); then
  rm -rf -- "$prefix"
  [[ -e "$prefix.old" ]] && mv -- "$prefix.old" "$prefix"
  die "$suite's hipcc in $prefix could not compile a test kernel (see above); nothing was changed"
fi
rm -rf -- "$prefix.old"
echo "$stamp" >"$prefix/.km-rocm-debian"
echo "install_rocm_debian.sh: ok: export KM_HIP_PATH=$prefix (or kernel-miner build --hip-path $prefix)"
