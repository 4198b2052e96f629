#!/usr/bin/env python3
"""Write the corpus checkouts that a repository list names, from local bare mirrors.

    python3 scripts/corpus_checkout.py scripts/corpus_repos_blind4.txt [more lists] \\
        [--mirrors /work/.mirror] [--root /work/corpora] [--only DIR ...]

Each list line is `owner/name@commit  checkout-dir  [subdir] [options]` (the format of
scripts/mine_corpus.py). The mirror of owner/name is looked up as MIRRORS/<owner>+<name>/repo or its .git (what the
library's `fetch` writes); the tree at `commit` is written into ROOT/<checkout-dir> (regular files; links and
submodules are left out, see scripts/corpus_submodules.py).
When the mirror lacks that commit, its HEAD is used and the line printed says so, with the commit taken:
figures from such a checkout are not comparable with ones at the listed commit. An existing checkout is left
as it is (remove it to write it again). Files the mirror did not store (blobs of 4 MiB and more) are skipped and
counted.
Exit 1 when any repository could not be written.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path


def git(gitdir: Path, *args: str) -> str:
    r = subprocess.run(["git", f"--git-dir={gitdir}", *args], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError((r.stderr.strip().splitlines() or ["git failed"])[-1])
    return r.stdout.strip()


def entries(lists: list[Path]) -> list[tuple[str, str, str]]:
    """(owner/name, commit, checkout dir) of every line, read as scripts/mine_corpus.py reads them."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from mine_corpus import read_list

    return [(*repo.ident.split("@", 1), repo.checkout) for path in lists for repo in read_list(path)]


def write_tree(gitdir: Path, rev: str, stage: Path) -> int:
    """Write every regular file of `rev` under stage; return how many blobs the mirror lacks.

    Not `git archive`: it stops at the first blob a snapshot did not store (files of 4 MiB and more)."""
    listing = subprocess.run(["git", f"--git-dir={gitdir}", "ls-tree", "-r", "-z", rev],
                             capture_output=True, check=True).stdout
    files = []
    for rec in listing.split(b"\0"):
        if not rec:
            continue
        meta, path = rec.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob" and mode in (b"100644", b"100755"):
            files.append((path.decode("utf-8", "surrogateescape"), sha.decode(), mode == b"100755"))
    batch = subprocess.Popen(["git", f"--git-dir={gitdir}", "cat-file", "--batch"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert batch.stdin and batch.stdout
    skipped = 0
    for path, sha, executable in files:
        batch.stdin.write(sha.encode() + b"\n")
        batch.stdin.flush()
        header = batch.stdout.readline().split()
        if len(header) < 3 or header[1] == b"missing":
            skipped += 1
            continue
        data = batch.stdout.read(int(header[2]))
        batch.stdout.read(1)
        dest = stage / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        if executable:
            dest.chmod(0o755)
    batch.stdin.close()
    batch.wait()
    return skipped


def checkout(name: str, commit: str, target: Path, mirrors: Path) -> str:
    gitdir = mirrors / name.replace("/", "+") / "repo"
    if (gitdir / ".git").is_dir():  # fetch writes a non-bare clone for some repositories
        gitdir = gitdir / ".git"
    if not gitdir.is_dir():
        raise RuntimeError(f"no mirror {gitdir} (fetch github:{name} first)")
    try:
        rev = git(gitdir, "rev-parse", "--verify", f"{commit}^{{commit}}")
        note = f"at {rev[:12]}"
    except RuntimeError:
        rev = git(gitdir, "rev-parse", "HEAD")
        note = f"listed commit {commit[:12]} absent; HEAD {rev[:12]} used"
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{target.name}.") as tmp:
        stage = Path(tmp) / "tree"
        skipped = write_tree(gitdir, rev, stage)
        stage.rename(target)
    if skipped:
        note += f"; {skipped} blob(s) the mirror lacks skipped"
    return note


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("lists", nargs="+", type=Path, help="repository list files")
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--root", type=Path, default=Path("/work/corpora"))
    ap.add_argument("--only", action="append", default=[], help="checkout dir to write (repeatable)")
    args = ap.parse_args()
    failed = 0
    for name, commit, directory in entries(args.lists):
        if args.only and directory not in args.only:
            continue
        target = args.root / directory
        if target.exists():
            print(f"{directory}: exists, left as it is")
            continue
        try:
            print(f"{directory}: {checkout(name, commit, target, args.mirrors)}")
        except (RuntimeError, OSError) as exc:
            failed += 1
            print(f"{directory}: error: {exc}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
