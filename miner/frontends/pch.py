"""A precompiled parse prefix (stub + torch shim) for translation units that include torch headers.

The torch shim brings the C++ standard library a torch extension sees; parsing it again for every
file was most of the extract time on torch repos. It is built once per run with the run's flags.
"""

from __future__ import annotations

import os
import re

from miner.frontends.config import ParseConfig, clang_args, stub_dir

_TORCH_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"](ATen|torch|c10|THC)/', re.M)


def includes_torch(data: bytes) -> bool:
    return _TORCH_INCLUDE.search(data) is not None


def build(config: ParseConfig, folder: str) -> str | None:
    """Write the precompiled prefix under `folder`; None when libclang cannot (the plain parse is used)."""
    try:
        import clang.cindex as ci
    except ImportError:
        return None
    prefix = os.path.join(folder, "km_prefix.h")
    with open(prefix, "w", encoding="utf-8") as fh:
        fh.write(f'#include "{stub_dir() / "km_cuda_parse.h"}"\n#include <km_torch_parse.h>\n')
    out = os.path.join(folder, "km_prefix.pch")
    try:
        tu = ci.Index.create().parse(prefix, args=clang_args(config, prefix, prefix=False),
                                     # KeepGoing | ForSerialization | DetailedPreprocessingRecord: the units'
                                     # parses ask for the record, and under -std=c++20 libclang 18 refuses
                                     # a prefix saved without it ("Error parsing translation unit").
                                     options=0x200 | 0x10 | 0x1)
        if any(d.severity >= ci.Diagnostic.Error for d in tu.diagnostics):
            return None
        tu.save(out)
    except (ci.TranslationUnitLoadError, ci.TranslationUnitSaveError, OSError):
        return None
    return out
