"""Kernel arguments as the ctypes objects the launcher ABI takes (pointers, ints, floats, 16-bit floats,
structs), with the element-size check of tensors passed for typed pointers."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from miner import lazy_re

_CTYPES: dict[str, Any] = {
    "pointer": ctypes.c_void_p,
    "int8": ctypes.c_int8,
    "int16": ctypes.c_int16,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32,
    "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
    # 16-bit floats travel as their bit pattern: same size and register class in the SysV ABI.
    "half": ctypes.c_uint16,
    "bfloat16": ctypes.c_uint16,
    "bool": ctypes.c_bool,
}

@dataclass
class Param:
    name: str
    type: str
    ctype: str


def _dim3(v: int | Sequence[int], what: str) -> tuple[int, int, int]:
    dims = [int(v)] if isinstance(v, int) else [int(x) for x in v]
    if not 1 <= len(dims) <= 3 or any(d < 0 for d in dims):
        raise ValueError(f"{what} must be an int or 1 to 3 non-negative ints, got {v!r}")
    return (dims + [1, 1])[0], (dims + [1, 1])[1], (dims + [1, 1])[2]


def _convert(value: Any, p: Param) -> Any:
    kind = p.ctype
    if kind == "struct":
        if not isinstance(value, ctypes.Structure | ctypes.Union):
            raise TypeError(f"parameter {p.name} ({p.type}) is a struct: pass a ctypes.Structure")
        return value
    if kind == "pointer":
        if value is None:
            return ctypes.c_void_p(0)
        if hasattr(value, "data_ptr"):
            if getattr(value, "device", None) is not None and value.device.type != "cuda":
                raise ValueError(f"parameter {p.name}: tensor is on {value.device}, not on a CUDA device")
            _check_element_size(value, p)
            return ctypes.c_void_p(value.data_ptr())
        if isinstance(value, int):
            return ctypes.c_void_p(value)
        raise TypeError(f"parameter {p.name} is a pointer: pass a CUDA tensor, an int address or None")
    if kind not in _CTYPES:
        raise TypeError(f"parameter {p.name}: unsupported ctype {kind!r}")
    if hasattr(value, "item"):
        value = value.item()
    if kind == "half":
        return ctypes.c_uint16(struct.unpack("<H", struct.pack("<e", float(value)))[0])
    if kind == "bfloat16":
        bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
        return ctypes.c_uint16((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16)  # round to nearest even
    if kind in ("float32", "float64"):
        return _CTYPES[kind](float(value))
    if kind == "bool":
        return ctypes.c_bool(bool(value))
    if isinstance(value, float) and not value.is_integer():
        raise TypeError(f"parameter {p.name} is {p.type}: got non-integer {value!r}")
    return _CTYPES[kind](int(value))


# Pointee types whose size is certain; a tensor of another element size is a test bug that makes
# the kernel read past the buffer (e.g. float64 boxes for a `const float *`).
_POINTEE_SIZE = {
    "float": 4, "double": 8, "half": 2, "__half": 2, "Half": 2, "__nv_bfloat16": 2, "nv_bfloat16": 2,
    "BFloat16": 2, "__nv_half": 2, "int": 4, "unsigned": 4, "unsigned int": 4, "int32_t": 4, "uint32_t": 4,
    "long long": 8, "unsigned long long": 8, "int64_t": 8, "uint64_t": 8, "long": 8, "unsigned long": 8,
    "size_t": 8, "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2,
}
_QUALIFIERS = lazy_re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict|struct|signed)\b|\b\w+::")


def pointee_size(ctype_text: str) -> int | None:
    """Element size of a single-level pointer type such as `const float* __restrict__`, if known."""
    text = str(ctype_text)
    if text.count("*") != 1 or "[" in text or "(" in text:
        return None
    base = " ".join(_QUALIFIERS.sub(" ", text.replace("*", " ")).split())
    return _POINTEE_SIZE.get(base)


def _check_element_size(value: Any, p: Param) -> None:
    want = pointee_size(p.type)
    have = getattr(getattr(value, "dtype", None), "itemsize", None)
    if want and have and want != have:
        raise TypeError(f"parameter {p.name} is {p.type} ({want}-byte elements) but the tensor is "
                        f"{value.dtype} ({have}-byte elements)")
