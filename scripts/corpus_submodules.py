#!/usr/bin/env python3
"""Fill the git submodules of a corpus checkout at the commits its repository pins, from local mirrors.

A corpus checkout is a `git archive` of one commit: its submodules (tiny-cuda-nn's `dependencies/fmt`,
`dependencies/cutlass`) are empty folders, so an original translation unit that includes their headers does
not compile (`kernel-miner verify` says which submodules are missing), and the parse never saw those headers.
A user's `git clone --recursive` has them. This writes each submodule's tree at the pinned commit (the
gitlink in the superproject's tree) into the checkout, from a bare mirror of the submodule's repository:

    python3 scripts/corpus_submodules.py /work/.mirror/NVlabs+tiny-cuda-nn/repo@6ee3546 \\
        /work/corpora/tiny-cuda-nn-recursive --mirrors /work/.mirror --only-dirs include tools/util/include

Mirrors are looked up as MIRRORS/<owner>+<name>/repo from the submodule's URL; a missing one is named (fetch
it, then run again). Files a mirror lacks (large blobs it did not store) are skipped and counted.
Also writes the superproject's .gitmodules into the checkout. Exit 1 when a submodule could not be filled.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path


def git(gitdir: Path, *args: str, data: bytes | None = None) -> bytes:
    r = subprocess.run(["git", f"--git-dir={gitdir}", *args], input=data, capture_output=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["git failed"])
    return r.stdout


def submodules(gitdir: Path, commit: str) -> list[tuple[str, str, str]]:
    """(path, url, pinned commit) of each submodule of `commit`."""
    text = git(gitdir, "show", f"{commit}:.gitmodules").decode(errors="replace")
    out = []
    for block in re.split(r"^\[submodule ", text, flags=re.M)[1:]:
        path = re.search(r"^\s*path\s*=\s*(.+?)\s*$", block, re.M)
        url = re.search(r"^\s*url\s*=\s*(.+?)\s*$", block, re.M)
        if not (path and url):
            continue
        line = git(gitdir, "ls-tree", commit, "--", path.group(1)).decode().split()
        if len(line) >= 3 and line[1] == "commit":
            out.append((path.group(1), url.group(1), line[2]))
    return out


def mirror_of(url: str, mirrors: Path) -> Path | None:
    m = re.search(r"[:/]([^/:]+)/([^/]+?)(?:\.git)?/?$", url)
    if not m:
        return None
    cand = mirrors / f"{m.group(1)}+{m.group(2)}" / "repo"
    return cand if cand.is_dir() else None


def write_tree(gitdir: Path, commit: str, dest: Path, only: list[str]) -> tuple[int, int]:
    """Every blob of `commit` (under the `only` folders where given) under dest; (written, missing from the
    mirror)."""
    listing = git(gitdir, "ls-tree", "-r", "-z", commit).decode(errors="surrogateescape").split("\0")
    entries = []
    for item in listing:
        if not item:
            continue
        meta, path = item.split("\t", 1)
        mode, kind, sha = meta.split()
        if only and not any(path.startswith(d.rstrip("/") + "/") for d in only):
            continue
        if kind == "blob" and mode != "120000":
            entries.append((path, sha))
    written = missing = 0
    batch = subprocess.Popen(["git", f"--git-dir={gitdir}", "cat-file", "--batch"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    assert batch.stdin and batch.stdout
    for path, sha in entries:
        batch.stdin.write(sha.encode() + b"\n")
        batch.stdin.flush()
        head = batch.stdout.readline().split()
        if len(head) < 3 or head[1] != b"blob":   # `<sha> missing`: a blob the mirror did not store
            missing += 1
            continue
        body = batch.stdout.read(int(head[2]))
        batch.stdout.read(1)   # the newline after the content
        out = dest / path
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(body)
        written += 1
    batch.stdin.close()
    batch.wait()
    return written, missing


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", help="GITDIR@COMMIT: the superproject's bare mirror and the corpus commit")
    ap.add_argument("checkout", type=Path, help="the corpus checkout to fill")
    ap.add_argument("--only-dirs", nargs="+", default=[], metavar="DIR",
                    help="keep only these folders of each submodule (e.g. include: the headers a project includes;"
                         " a library's examples and tests hold kernels of their own that would be mined too)")
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"), help="where mirrors are (owner+name/repo)")
    args = ap.parse_args()
    gitdir_text, _, commit = args.repo.rpartition("@")
    gitdir = Path(gitdir_text)
    if not gitdir.is_dir() or not commit:
        print(f"corpus_submodules: {args.repo}: expected GITDIR@COMMIT", file=sys.stderr)
        return 2
    try:
        subs = submodules(gitdir, commit)
        (args.checkout / ".gitmodules").write_bytes(git(gitdir, "show", f"{commit}:.gitmodules"))
    except RuntimeError as exc:
        print(f"corpus_submodules: {commit}: {exc}", file=sys.stderr)
        return 2
    failed = 0
    for path, url, pinned in subs:
        mirror = mirror_of(url, args.mirrors)
        if mirror is None:
            print(f"{path}: no mirror of {url} under {args.mirrors} (fetch it, then run again)")
            failed += 1
            continue
        try:
            written, missing = write_tree(mirror, pinned, args.checkout / path, args.only_dirs)
        except RuntimeError as exc:
            print(f"{path}: {pinned[:10]} not in {mirror}: {exc}")
            failed += 1
            continue
        print(f"{path}: {url}@{pinned[:10]}: {written} files" + (f", {missing} not in the mirror" if missing else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
