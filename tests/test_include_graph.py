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


def _write(root, rel: str, text: str) -> SourceFile:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return SourceFile(str(path), text.encode(), False)


def test_an_include_a_known_folder_answers_on_disk_is_not_guessed_by_its_tail(tmp_path) -> None:
    """The mined folder is `src/kernel`, its headers include `"kernel/..."` from `src/` (found by tail: `src` becomes
    an include dir). A host header taken as context, `src/scene/film.h`, includes `"util/colorspace.h"`: the real
    file is `src/util/colorspace.h`, which no input includes, and `src/kernel/util/colorspace.h` matched the tail.
    `src/kernel` became an include dir of every parse, and its `features.h` shadowed the C library's. The include
    is answered on disk through `src`, and no folder is added for it."""
    src = tmp_path / "src"
    (src / "util").mkdir(parents=True)
    (src / "util" / "colorspace.h").write_text("#pragma once\n")
    files = [_write(src, "kernel/device/k.cu", '#include "kernel/film/read.h"\n'),
             _write(src, "kernel/film/read.h", '#pragma once\n#include "scene/film.h"\n'),
             _write(src, "kernel/util/colorspace.h", "#pragma once\n"),
             _write(src, "kernel/features.h", "#pragma once\n"),
             _write(src, "scene/film.h", '#pragma once\n#include "util/colorspace.h"\n'),
             _write(src, "kernel/device/k2.cu", '#include "kernel/film/read.h"\n')]
    g = build(files, [])
    assert g.auto_include_dirs == [str(src)], g.auto_include_dirs
    assert g.edges[str(src / "scene" / "film.h")] == set()
    # (a file read that the known folder answers keeps its edge: the translation unit still reaches its kernels)
    assert g.edges[str(src / "kernel" / "device" / "k2.cu")] == {str(src / "kernel" / "film" / "read.h")}


def test_a_wrapper_of_a_system_header_never_answers_that_header(tmp_path) -> None:
    """`src/util/windows.h` wraps the system's `<windows.h>` (`#ifdef _WIN32 #include <windows.h>`), and a
    vendored `atomic_ops_msvc.h` includes `<windows.h>` too. Both were matched by tail to the wrapper, and `src/util`
    (whose `math.h` and `string.h` are the project's) became an include dir of every parse. An angle include of a
    name whose only match includes that same name itself means the system header: no folder is added."""
    files = [_write(tmp_path, "src/util/windows.h", "#pragma once\n#ifdef _WIN32\n#  include <windows.h>\n#endif\n"),
             _write(tmp_path, "src/util/math.h", "#pragma once\n"),
             _write(tmp_path, "third_party/atomic/atomic_ops_msvc.h", "#pragma once\n#include <windows.h>\n"),
             _write(tmp_path, "src/kernel/k.cu", '#include "../util/windows.h"\n#include "../util/helper.h"\n'),
             _write(tmp_path, "src/tools/helper_user.cu", '#include <helper.h>\n'),
             _write(tmp_path, "src/util/helper.h", "#pragma once\n")]
    g = build(files, [])
    assert str(tmp_path / "src" / "util") in g.auto_include_dirs  # (a real tail match still adds its folder)
    assert g.edges[str(tmp_path / "third_party" / "atomic" / "atomic_ops_msvc.h")] == set()
    assert g.edges[str(tmp_path / "src" / "util" / "windows.h")] == set()
    assert g.dirs_of.get(str(tmp_path / "third_party" / "atomic" / "atomic_ops_msvc.h")) is None
    assert g.dirs_of.get(str(tmp_path / "src" / "util" / "windows.h")) is None
