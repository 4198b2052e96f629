"""The unit shim's c10::BFloat16 and c10::Half compile to the PTX c10's own types compile to: a fixture
kernel of our own over both types, compiled with torch's headers (c10/util/BFloat16.h, Half.h,
ATen/cuda/Atomic.cuh: seconds, not the minutes of torch/extension.h) and with the shim, compared as
`kernel-miner verify` compares them. sm_80+ takes cuda_bf16's conversions, older targets c10's
round-to-nearest-even and ATen's CAS-loop atomicAdd: both are checked. The same for the tensor accessors
(`at::PackedTensorAccessor32/64`, read through `const` parameters, written through others), whose entries
mangle differently (torch 2.13's accessors live in `torch::headeronly::detail`) and are paired by kernel name."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from miner.frontends.config import stub_dir
from miner.verify import original, ptx
from tests.conftest import FIXTURES
from tests.test_build import needs_nvcc

pytestmark = needs_nvcc

SRC = FIXTURES / "verify_shim"


def _listings(path: Path, out: Path, flags: list[str]) -> dict[str, list[str]]:
    r = subprocess.run(["nvcc", "-ptx", "-x", "cu", *flags, str(path), "-o", str(out)],
                       capture_output=True, text=True, timeout=600, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    parsed = ptx.parse(out.read_text(encoding="utf-8"))
    return {e: ptx.listing(parsed, e) for e in parsed.entries}


def _torch_and_shim(tmp_path: Path, arch: str, with_torch: str, with_shim: str
                    ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The PTX listings of a fixture built with torch's headers and of its twin built with the unit's shim."""
    dirs, torch_flags, version = original.torch_setup()
    if not version:
        pytest.skip("torch is not installed (pip install 'kernel-miner[verify]')")
    common = [f"-arch={arch}", *torch_flags]
    theirs = _listings(SRC / with_torch, tmp_path / "torch.ptx", [*common, *(f"-I{d}" for d in dirs)])
    ours = _listings(SRC / with_shim, tmp_path / "shim.ptx",
                     [*common, "-include", str(stub_dir() / "unit" / "km_torch_unit.h")])
    return theirs, ours


@pytest.mark.parametrize("arch", ["compute_90", "compute_75"])
def test_shim_16bit_types_compile_like_c10(tmp_path: Path, arch: str) -> None:
    theirs, ours = _torch_and_shim(tmp_path, arch, "vs_torch.cu", "vs_shim.cu")
    bf16 = "_Z6vs_mixIN3c108BFloat16EEvPKT_S4_PS2_Pfi"
    half = "_Z6vs_mixIN3c104HalfEEvPKT_S4_PS2_Pfi"
    assert set(ours) == set(theirs) == {bf16, half}
    for entry in (bf16, half):
        assert ours[entry] == theirs[entry], "\n".join(ptx.first_difference(theirs[entry], ours[entry]))
    # What the fixture exercises is really there: sm_80+ converts with the native cvt, older targets with
    # the rounding c10 writes out and ATen's 32-bit CAS loop.
    text = "\n".join(ours[bf16])
    if arch == "compute_90":
        assert "cvt.rn.bf16.f32" in text and "atom.add.noftz.bf16" in text
    else:
        assert "cvt.rn.bf16.f32" not in text and "atom.global.cas.b32" in text


@pytest.mark.parametrize("arch", ["compute_90", "compute_75"])
def test_shim_accessors_compile_like_torch(tmp_path: Path, arch: str) -> None:
    theirs, ours = _torch_and_shim(tmp_path, arch, "vs_accessors_torch.cu", "vs_accessors_shim.cu")

    def by_kernel(listings: dict[str, list[str]]) -> dict[str, list[str]]:
        out = {}
        for entry, lines in listings.items():
            m = re.match(r"_Z(\d+)", entry)
            assert m, entry
            out[entry[m.end():m.end() + int(m.group(1))]] = lines
        return out

    theirs, ours = by_kernel(theirs), by_kernel(ours)
    assert set(ours) == set(theirs) == {"va_gather", "va_scale"}
    for name in theirs:
        assert ours[name] == theirs[name], "\n".join(ptx.first_difference(theirs[name], ours[name]))


def test_shim_philox_state_compiles_like_aten(tmp_path: Path) -> None:
    """`at::PhiloxCudaState` by value and `at::cuda::philox::unpack`: the same parameter layout and code."""
    theirs, ours = _torch_and_shim(tmp_path, "compute_90", "vs_philox_torch.cu", "vs_philox_shim.cu")
    entry = "_Z7vp_maskN2at15PhiloxCudaStateEifPKfPf"
    assert set(ours) == set(theirs) == {entry}, (set(ours), set(theirs))
    assert ours[entry] == theirs[entry], "\n".join(ptx.first_difference(theirs[entry], ours[entry]))
