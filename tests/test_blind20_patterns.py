"""`extract --build` on tests/fixtures/blind20: patterns found on the twentieth set of repositories (issue 14,
scripts/corpus_repos_blind20.txt, measured before any change in session 20), each reproduced by code of our own and
judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from miner.builder.ill_formed import ill_formed_kernel
from tests.conftest import build_statuses, extract_and_build, load_dataset, only_meta, run_miner, unit_texts

_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def anon_redeclared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind20/anon_redeclared")


@_nvcc
@pytest.mark.parametrize(("name", "inst"), [("markVisible", "default"), ("scaleEntries", "true")])
def test_a_kernel_declared_ahead_in_an_anonymous_namespace_is_defined_in_it(anon_redeclared: dict[str, Any],
                                                                            name: str, inst: str) -> None:
    """The closure copies the kernel's declaration in its `namespace {`; the unit defines the kernel in that
    namespace too (not at global scope, where it would be a second function and the launcher's call of the name
    ambiguous: "more than one instance of overloaded function ... matches the argument list")."""
    m = only_meta(anon_redeclared, name)
    assert build_statuses(m) == {inst: "ok"}, build_statuses(m)
    [text] = unit_texts(anon_redeclared, m)
    body = text.split("// the kernel,", 1)
    assert body[0].rstrip().endswith("namespace  {"), text


@_nvcc
def test_a_kernel_defined_in_its_anonymous_namespace_verifies_identical(anon_redeclared: dict[str, Any]) -> None:
    """Both sides now define the kernel in an anonymous namespace: verify finds the original's entry and the
    PTX of each unit is the original's."""
    proc = run_miner("verify", anon_redeclared["out"], "-j", "1", "-q", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = {m["name"]: [i["fidelity"]["status"] for i in m["instantiations"]]
             for m in load_dataset(anon_redeclared["out"])}
    assert found == {"markVisible": ["identical"], "scaleEntries": ["identical"]}, found



@pytest.fixture(scope="module")
def kernel_object(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind20/kernel_object")


def test_a_c_kernel_named_through_a_plain_c_declaration_is_named(kernel_object: dict[str, Any]) -> None:
    """A host file that never reaches the kernel's `.cu` takes its address through a header's `extern "C"` plain
    declaration and hands it to a kernel object: the kernel is named there (not "named nowhere", which would
    call it dead code), and the declarations themselves (alone, or in an `extern "C" {` block) name nothing.
    Since session 21 the object's storing call is the kernel's launch (launches.stored, below)."""
    m = only_meta(kernel_object, "scale_rows")
    assert "launch_missing" not in m, m["launch_missing"]
    [launch] = m["launches"]
    assert (launch["path"], launch["line"], launch["declaration"]) == ("load.cpp", 6, "host_decls.h:3"), launch
    unused = only_meta(kernel_object, "retired_rows")["launch_missing"]
    assert unused["reason"] == "not_referenced", unused


def test_a_kernel_handed_to_an_object_that_launches_it_later_is_launched(kernel_object: dict[str, Any]) -> None:
    """`obj.create("scale_rows", (const void *)&scale_rows)` in a host file with no launch of its own: the method
    stores the address in a member another method hands to cudaLaunchKernel. The storing call is the launch (its
    file is parsed for it), of the launching method's kind; the grid and block, set on the object at run time,
    are stated unread with the member and the launching method."""
    [launch] = only_meta(kernel_object, "scale_rows")["launches"]
    assert (launch["kind"], launch["launcher"]) == ("cudaLaunchKernel", "load_kernels"), launch
    why = launch["config_unread"]
    assert why["grid"].startswith("stored_pointer: the kernel is kept in the member fn_ of kernel_object, "
                                  "launched by execute"), why
    assert why["block"].startswith("stored_pointer:"), why


@pytest.fixture(scope="module")
def stored_kernel(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind20/stored_kernel")


def test_a_kernel_bound_to_a_typed_member_takes_the_bound_instantiation(stored_kernel: dict[str, Any]) -> None:
    """`a.bind(stride_rows<3>)` stores a typed pointer that `go` launches with `body_<<<...>>>`; `p.attach(...,
    (const void *)&stride_rows<5>)` one that `fire` hands to cudaLaunchKernel with a fixed grid and block. Each
    storing call is a launch with the instantiation its address names; the fixed configuration is read, the one
    made of the object's members is stated unread."""
    m = only_meta(stored_kernel, "stride_rows")
    assert "launch_missing" not in m, m["launch_missing"]
    got = {(lc["kind"], lc["line"], tuple(lc["template_args"])): lc for lc in m["launches"]}
    assert set(got) == {("<<<>>>", 18, ("3",)), ("cudaLaunchKernel", 20, ("5",))}, sorted(got)
    chevron, api = got[("<<<>>>", 18, ("3",))], got[("cudaLaunchKernel", 20, ("5",))]
    assert chevron["config_unread"]["grid"].startswith("stored_pointer: the kernel is kept in the member body_ of "
                                                       "row_task, launched by go"), chevron
    assert (api["config"]["grid"], api["config"]["block"]) == ("dim3(32)", "dim3(64)"), api
    assert "config_unread" not in api, api
    assert {i["id"] for i in m["instantiations"]} == {"3", "5"}
    neg = only_meta(stored_kernel, "negate_rows")
    assert [lc["line"] for lc in neg["launches"]] == [19], neg.get("launch_missing")


def test_a_stale_c_declaration_still_names_the_one_c_kernel(stored_kernel: dict[str, Any]) -> None:
    """setup.cpp hands `(const void *)&shift_rows` to the object through a C declaration one parameter behind the
    kernel's definition: C linkage has one symbol per name, so the launch is the only C kernel of that name's."""
    [launch] = only_meta(stored_kernel, "shift_rows")["launches"]
    assert (launch["path"], launch["line"], launch["declaration"]) == ("setup.cpp", 6, "c_decls.h:3"), launch


@_nvcc
def test_kernels_launched_through_stored_members_build(stored_kernel: dict[str, Any]) -> None:
    assert build_statuses(only_meta(stored_kernel, "stride_rows")) == {"3": "ok", "5": "ok"}
    assert build_statuses(only_meta(stored_kernel, "negate_rows")) == {"default": "ok"}


@pytest.fixture(scope="module")
def orphan_header(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind20/orphan_header")


@_nvcc
def test_a_header_no_file_includes_fails_on_its_includers_names_with_a_stated_reason(
        orphan_header: dict[str, Any]) -> None:
    """A kernel header the project no longer includes uses a class its includers brought in first; mined as its
    own translation unit, its unit stops on that name as the header alone does, and the build says why (the
    declaring file named). Its sibling, which a `.cu` includes after the class, builds."""
    assert build_statuses(only_meta(orphan_header, "seed_a")) == {"default": "ok"}
    [inst] = only_meta(orphan_header, "seed_b")["instantiations"]
    assert inst["build"]["status"] == "failed", inst["build"]
    why = inst["build"].get("toolkit_removed") or ""
    assert why.startswith("variant_b/kernels.cuh is included by no file of the project"), inst["build"]
    assert "hash_keys in common/keys.h" in why, why


@pytest.fixture(scope="module")
def loop_redeclared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind20/loop_redeclared")


@_nvcc
def test_a_kernel_that_redeclares_its_loop_variable_fails_with_a_stated_reason(loop_redeclared: dict[str, Any]) -> None:
    """The kernel's body redeclares the loop's variable: nvcc rejects the definition itself (instantiated or not),
    so the original fails as the unit does; the build says so with the source line. The well-formed neighbour
    builds."""
    assert build_statuses(only_meta(loop_redeclared, "count_pairs")) == {"1024": "ok"}
    [inst] = only_meta(loop_redeclared, "move_pairs")["instantiations"]
    assert inst["build"]["status"] == "failed", inst["build"]
    why = inst["build"].get("toolkit_removed") or ""
    assert why.startswith("the kernel's own text is ill-formed as written"), inst["build"]
    assert "at bucket.cu:11)" in why, why


_UNIT_TEXT = """// km:body-begin
// function_decl helper from h.cuh:3
__device__ int helper(int i) {{ for (int i = 0; i < 2; i++) {{ int i = 1; }} return 0; }}
// the kernel, src/k.cu:{start}
__global__ void k(int *a, int n)
{{
  for (int i = 0; i < n; i++) {{ int i = 0; a[i] = 1; }}
}}
extern "C" int km_launch_0(void) {{ return 0; }}
"""


@pytest.mark.parametrize(("line", "stated"), [(7, "src/k.cu:39"), (3, None), (9, None)])
def test_only_an_error_on_the_kernels_own_lines_is_stated(line: int, stated: str | None) -> None:
    """The statement names the source line of an error inside the kernel's text; the same error in a piece the
    closure copied (line 3) or in the launcher (line 9) is not the kernel's as written."""
    text = _UNIT_TEXT.format(start=37)
    error = (f'units/x/unit.cu({line}): error: "i", declared in for-loop initialization, may not be redeclared '
             "in this scope")
    why = ill_formed_kernel(text, error)
    assert (why is None) == (stated is None), why
    if stated:
        assert f"at {stated})" in why, why
    assert ill_formed_kernel(text, f'units/x/unit.cu({line}): error: identifier "q" is undefined') is None


@pytest.fixture(scope="module")
def typed_pointer(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind20/typed_pointer")


def test_a_kernel_stored_in_a_pointer_typedef_is_launched_where_that_type_is(typed_pointer: dict[str, Any]) -> None:
    """Kernels chosen into `row_scorer` variables travel through a parameter and a context struct to a worker
    function that launches `scorer<<<BLOCKS, THREADS>>>` and `fast<<<...>>>`: each kernel stored in a
    `row_scorer` gets those launches (configuration read, matched by the pointer type, as `through` says); a kernel
    of the same signature never stored in one gets none."""
    for name in ("score_fwd", "score_rev", "score_wide"):
        m = only_meta(typed_pointer, name)
        assert "launch_missing" not in m, (name, m["launch_missing"])
        lines = sorted(lc["line"] for lc in m["launches"])
        assert lines == [48, 50], (name, lines)
        for lc in m["launches"]:
            assert (lc["values"]["grid"], lc["values"]["block"]) == (120, 64), lc
            assert lc["config"]["through"].startswith("a row_scorer pointer"), lc
    spare = only_meta(typed_pointer, "score_spare")
    assert spare["launch_missing"]["reason"] == "not_referenced", spare


@pytest.fixture(scope="module")
def make_cmdline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind20/make_cmdline")


@_nvcc
def test_a_macro_only_makes_command_line_gives_is_stated_as_such(make_cmdline: dict[str, Any]) -> None:
    """The Makefile passes `-DBLOCK_ROWS=$(BLOCK_ROWS)` and leaves `BLOCK_ROWS=` empty (`make BLOCK_ROWS=64`): a
    kernel using it fails as the original does without the value, and the build says that (not "declared nowhere"
    left unstated, nor blamed on a header by an absolute path that another name of the unit needs); `TILE ?= 8`, a
    default, is not such a value."""
    [fill] = only_meta(make_cmdline, "fill_rows")["instantiations"]
    why = fill["build"].get("toolkit_removed") or ""
    assert fill["build"]["status"] == "failed", fill["build"]
    assert why.startswith("BLOCK_ROWS, PAD_VALUE are given on make's command line: Makefile passes "
                          "-DBLOCK_ROWS=$(BLOCK_ROWS), -DPAD_VALUE=$(PAD_VALUE)"), why
    assert "TILE" not in why, why
    [scale] = only_meta(make_cmdline, "scale_rows")["instantiations"]
    why = scale["build"].get("toolkit_removed") or ""
    assert why.startswith("BLOCK_ROWS is given on make's command line"), why
    assert "; SCALE_FACTOR is declared in no file the translation unit reaches, which includes " \
           "</opt/nowhere-sdk-9.9/include/scale_defs.h>" in why, why
    # (beside that header, with no other name missing: the make value alone, not "the operators it declares")
    [clear] = only_meta(make_cmdline, "clear_rows")["instantiations"]
    why = clear["build"].get("toolkit_removed") or ""
    assert why.startswith("BLOCK_ROWS is given on make's command line") and ";" not in why, why


@pytest.fixture(scope="module")
def old_branch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind20/old_branch")


@_nvcc
def test_an_older_kernel_under_if_0_takes_its_namesakes_closure(old_branch: dict[str, Any]) -> None:
    """An `#if 0` version of a kernel with other parameters than the one built (tree-sitter's only): it takes the
    closure of its namesake in the parsed branch (the file's device helpers it calls), not its launch, and builds;
    before, it had no closure ("identifier unit_noise is undefined")."""
    metas = {m["frontend"]: m for m in old_branch["metas"] if m["name"] == "tint_points"}
    old = metas["treesitter"]
    assert build_statuses(old) == {"default": "ok"}, build_statuses(old)
    assert old["launches"] == [] and old["launch_missing"]["reason"] == "no_ast", old.get("launch_missing")
    assert [lc["line"] for lc in metas["clang"]["launches"]] == [33]


@pytest.fixture(scope="module")
def tcu_spaced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind20/tcu_spaced")


@_nvcc
def test_spaced_chevrons_in_an_included_template_file_are_launches(tcu_spaced: dict[str, Any]) -> None:
    """`ray_device<TVoxel, BlockHash, true> << <grid, block >> >(...)` in a `.tcu` that a `.cu` includes, inside a
    host function template: the file is an input (it launches with chevrons), so its spaced chevrons are joined
    for the parse and both launches are found, with the instantiations the explicit class instantiation gives
    (before: no launch, and an inferred `float, int` that cannot build)."""
    m = only_meta(tcu_spaced, "ray_device")
    assert "launch_missing" not in m, m["launch_missing"]
    assert build_statuses(m) == {"Voxel_s_BlockHash_true": "ok", "Voxel_s_BlockHash_false": "ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def ctor_stored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind20/ctor_stored")


def test_a_kernel_a_constructor_keeps_is_launched_at_the_construction(ctor_stored: dict[str, Any]) -> None:
    """`launch_props<count_fn> count_props(count_pass<tile_policy<4> >, 128)`: the class template's constructor
    keeps the kernel in a member (`fn(fn)`), and another function launches `count_props.fn<<<grid,
    count_props.threads>>>` on the object it is handed. The construction is the launch, with the instantiation the
    address names; the launching function's grid and block are stated (not taken for the kernel: `count_props`,
    a parameter there, is no launch helper's kernel)."""
    for name, line, policy in (("count_pass", 34, "tile_policy<4>"), ("scatter_pass", 35, "tile_policy<2>")):
        m = only_meta(ctor_stored, name)
        assert "launch_missing" not in m, (name, m["launch_missing"])
        [launch] = m["launches"]
        assert (launch["line"], launch["template_args"]) == (line, [policy]), launch
        why = launch["config_unread"]["block"]
        assert why.startswith("stored_pointer: the kernel is kept in the member fn of launch_props, launched by "
                              "run_passes (grid grid, block count_props.threads)"), why


@pytest.fixture(scope="module")
def local_alias_member(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind20/local_alias_member")


@_nvcc
def test_a_member_type_of_a_local_typedef_in_launch_arguments_is_resolved(local_alias_member: dict[str, Any]) -> None:
    """`mesh_blocks<VD, typename ID::Data><<<...>>>` with `typedef multi_index<BlockIndex> ID;` in the method of a
    class partial specialization: the qualifier is the local typedef's type (before, `typename ID::Data` stayed in
    the unit: "a class or namespace qualified name is required")."""
    m = only_meta(local_alias_member, "mesh_blocks")
    assert build_statuses(m) == {"multi_voxel_voxel_f_multi_index_BlockIndex_Data": "ok"}, build_statuses(m)


@_nvcc
def test_a_construction_the_parse_leaves_without_initializer_is_read_from_its_text(
        ctor_stored: dict[str, Any]) -> None:
    """In a member function template, `launch_props<rank_fn> rank_props(rank_pass<typename
    DevicePolicy::RankPolicy>, 64)`: the argument depends on the template, and libclang shows the variable with no
    initializer; its written arguments are read from the text, and the constructor that stores the kernel makes it
    a launch in that template, resolved through its instantiation (`rank_device_policy`)."""
    m = only_meta(ctor_stored, "rank_pass")
    assert "launch_missing" not in m, m["launch_missing"]
    [launch] = m["launches"]
    assert launch["line"] == 30, launch
    assert list(build_statuses(m).values()) == ["ok"], build_statuses(m)
    assert "rank_device_policy" in m["instantiations"][0]["id"], m["instantiations"]


@pytest.fixture(scope="module")
def sibling_partial(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind20/sibling_partial")


@_nvcc
def test_an_unselected_partial_specialization_takes_its_siblings_class_argument(
        sibling_partial: dict[str, Any]) -> None:
    """`template class fuser<TheVoxel, TheIndex>;` with the configuration's typedef choosing `BlockIndex`: the
    `fuser<TVoxel, PlainIndex>` specialization is instantiated by nothing here, and its launches' `TVoxel` took the
    scalar default (`float`, "expression must have class type"). It now takes the class's instantiation's argument
    at that position (`voxel_s`), still marked inferred; the selected specialization's stay the program's."""
    plain = only_meta(sibling_partial, "fuse_plain")
    assert {i["id"]: (i["origin"], i["build"]["status"]) for i in plain["instantiations"]} == {
        "voxel_s_true": ("inferred", "ok"), "voxel_s_false": ("inferred", "ok")}, plain["instantiations"]
    block = only_meta(sibling_partial, "fuse_block")
    assert {i["id"]: i["origin"] for i in block["instantiations"]} == {
        "voxel_s_true": "host_template", "voxel_s_false": "host_template"}


@_nvcc
def test_a_member_launched_on_an_object_of_dependent_type_is_found(ctor_stored: dict[str, Any]) -> None:
    """`props.fn<<<grid, props.threads>>>` in a method of a class template whose `props` is a
    `launch_props<bucket_fn> &` with `bucket_fn` the class's own typedef: libclang resolves no member (nor spells
    it); the member is looked up by name in the class template, so the construction in `dispatch` is a launch."""
    m = only_meta(ctor_stored, "bucket_pass")
    assert "launch_missing" not in m, m["launch_missing"]
    assert [lc["line"] for lc in m["launches"]] == [31], m["launches"]
    assert list(build_statuses(m).values()) == ["ok"], build_statuses(m)
