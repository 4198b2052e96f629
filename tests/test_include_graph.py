"""miner.source.include_graph: includes resolved among the inputs, -I dirs recovered from path tails."""

from __future__ import annotations

from miner.source.discover import SourceFile
from miner.source.include_graph import build


def test_tail_matches_recover_include_dirs_but_never_for_system_header_names() -> None:
    files = [SourceFile("/r/lib/include/math.h", b"#pragma once\n", False),
             SourceFile("/r/lib/include/helper.h", b"#pragma once\n", False),
             SourceFile("/r/ops/k.cu", b'#include <math.h>\n#include <vector>\n#include "helper.h"\n', False)]
    g = build(files, [])
    assert g.edges["/r/ops/k.cu"] == {"/r/lib/include/helper.h"}
    assert g.auto_include_dirs == ["/r/lib/include"]
    g = build(files[:1] + files[2:], [])
    assert g.edges["/r/ops/k.cu"] == set() and g.auto_include_dirs == []
