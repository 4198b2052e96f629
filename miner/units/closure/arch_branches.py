"""Names a unit needs for nvcc's host pass: those written only in the branch of an `#if __CUDA_ARCH__` test
that the parse (with `__CUDA_ARCH__=900`) skipped.

nvcc compiles every `__device__` function twice, and in the host pass `__CUDA_ARCH__` is undefined: the
`#else` of `#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800` (a bf16 fallback `bf16hmul(a, b)` beside
`__hmul(a, b)`) must find its names there too, though the parse, and with it the AST closure, saw only the
other branch. The identifiers of such skipped branches inside a closure piece are looked up like names of
a function whose expressions the parse dropped, with the bodies of the project macros they write.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import clang.cindex as ci

from miner import lazy_re
from miner.units.closure.context import _IDENT, _STRING_OR_COMMENT, TUContext, _skipped_ranges
from miner.units.closure.pasted import expansion_names

_DIRECTIVE = lazy_re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b(.*)$", re.M)


def _chain_of(data: bytes, start: int) -> list[tuple[bytes, bytes]]:
    """The directives of the `#if` chain the skipped block at `start` belongs to, as (kind, condition): its own
    first, then the `#elif`s and the `#if` before it in the same chain (empty when none is found)."""
    depth, out = 0, []
    for m in reversed(list(_DIRECTIVE.finditer(data, 0, min(len(data), start + 400)))):
        if m.start() > start + 2:
            continue  # the skipped range begins at its directive (or just before it)
        kind, cond = m.group(1), m.group(2)
        if kind == b"endif" and m.start() < start:
            depth += 1
            continue
        if depth:
            if kind in (b"if", b"ifdef", b"ifndef"):
                depth -= 1
            continue
        out.append((kind, cond))
        if kind in (b"if", b"ifdef", b"ifndef"):
            return out  # the chain's opening directive
    return []


def _arch_test(data: bytes, start: int, depends: Callable[[bytes], bool] | None = None) -> bool:
    """Whether the skipped block at `start` is a branch of an `#if` chain that tests `__CUDA_ARCH__` (its
    own directive, or the `#if`/`#elif`s before it in the same chain), directly or through macros (`depends`:
    arch_dependent)."""
    return any(b"__CUDA_ARCH__" in cond or (depends is not None and depends(cond))
               for _k, cond in _chain_of(data, start))


def _host_takes(data: bytes, start: int) -> bool:
    """Whether nvcc's host pass (`__CUDA_ARCH__` undefined) may compile the skipped block at `start`: not when
    its own condition is false there (`#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000`, `#ifdef
    __CUDA_ARCH__`) or an earlier branch of its chain is true there. The device pass builds for the parse's
    `__CUDA_ARCH__` (miner.targets), whose branch the parse saw; so a block neither pass compiles (a kernel body
    for a newer architecture only) needs none of its names in the unit: they were looked up in any namespace
    and brought unrelated declarations that did not compile there. Unknown conditions count as taken."""
    chain = _chain_of(data, start)
    if not chain:
        return True
    for i, (kind, cond) in enumerate(chain):
        value = _host_value(kind, cond)
        if i == 0 and value is False:
            return False
        if i > 0 and value is True:
            return False
    return True


def _host_value(kind: bytes, cond: bytes) -> bool | None:
    """A directive's condition with `__CUDA_ARCH__` undefined and every other macro unknown: True, False or None."""
    name = cond.split(b"//")[0].strip()
    if kind == b"else":
        return True
    if kind in (b"ifdef", b"ifndef"):
        if name != b"__CUDA_ARCH__":
            return None
        return kind == b"ifndef"
    try:
        value = _Condition(cond.decode("latin-1")).value()
    except (ValueError, IndexError, ZeroDivisionError):
        return None
    return None if value is None else bool(value)


_TOKEN = lazy_re.compile(
    r"\s*(?:(0[xX][0-9a-fA-F]+|\d+)[uUlL]*|([A-Za-z_]\w*)|(&&|\|\||==|!=|<=|>=|<<|>>|[-+*/%<>!()~]))")


class _Condition:
    """A preprocessor condition evaluated in three values (an int, or None for unknown): `__CUDA_ARCH__` and
    `defined(__CUDA_ARCH__)` are 0, any other name or `defined(...)` unknown, a function-like macro call unknown."""

    def __init__(self, text: str) -> None:
        text = re.sub(r"/\*.*?\*/", " ", text.split("//")[0])
        self.toks: list[str] = []
        pos = 0
        while pos < len(text) and text[pos:].strip():
            m = _TOKEN.match(text, pos)
            if m is None:
                raise ValueError(text)
            self.toks.append(m.group(1) if m.group(1) is not None else (m.group(2) or m.group(3)))
            if m.group(1) is not None:
                self.toks[-1] = str(int(m.group(1), 0))
            pos = m.end()
        self.i = 0

    def value(self) -> int | None:
        v = self._binary(0)
        if self.i != len(self.toks):
            raise ValueError("trailing tokens")
        return v

    _LEVELS: tuple[tuple[str, ...], ...] = (("||",), ("&&",), ("==", "!="), ("<", ">", "<=", ">="),
                                            ("<<", ">>"), ("+", "-"), ("*", "/", "%"))

    def _binary(self, level: int) -> int | None:
        if level == len(self._LEVELS):
            return self._unary()
        left = self._binary(level + 1)
        while self.i < len(self.toks) and self.toks[self.i] in self._LEVELS[level]:
            op = self.toks[self.i]
            self.i += 1
            right = self._binary(level + 1)
            left = _apply(op, left, right)
        return left

    def _unary(self) -> int | None:
        tok = self.toks[self.i]
        self.i += 1
        if tok in ("!", "-", "+", "~"):
            v = self._unary()
            return None if v is None else {"!": int(not v), "-": -v, "+": v, "~": ~v}[tok]
        if tok == "(":
            v = self._binary(0)
            if self.toks[self.i] != ")":
                raise ValueError("unbalanced")
            self.i += 1
            return v
        if tok == "defined":
            paren = self.toks[self.i] == "("
            name = self.toks[self.i + 1] if paren else self.toks[self.i]
            self.i += 3 if paren else 1
            return 0 if name == "__CUDA_ARCH__" else None
        if tok.isdigit():
            return int(tok)
        if self.i < len(self.toks) and self.toks[self.i] == "(":  # a function-like macro: its arguments skipped
            depth = 0
            while True:
                t = self.toks[self.i]
                self.i += 1
                depth += {"(": 1, ")": -1}.get(t, 0)
                if depth == 0:
                    return None
        return 0 if tok == "__CUDA_ARCH__" else None


def _apply(op: str, a: int | None, b: int | None) -> int | None:
    if op == "&&":
        return 0 if a == 0 or b == 0 else (None if a is None or b is None else 1)
    if op == "||":
        return 1 if (a is not None and a != 0) or (b is not None and b != 0) else (
            None if a is None or b is None else 0)
    if a is None or b is None:
        return None
    if op in ("/", "%") and b == 0:
        return None
    return {"==": int(a == b), "!=": int(a != b), "<": int(a < b), ">": int(a > b), "<=": int(a <= b),
            ">=": int(a >= b), "<<": a << b if 0 <= b < 64 else None, ">>": a >> b if 0 <= b < 64 else None,
            "+": a + b, "-": a - b, "*": a * b, "/": int(a / b), "%": a % b}[op]


def host_pass_names(ctx: TUContext, cur: ci.Cursor) -> list[str]:
    """Identifiers in the skipped `__CUDA_ARCH__` branches inside `cur`'s text, comments and strings left out."""
    e = cur.extent
    if e.start.file is None:
        return []
    path = ctx.norm(e.start.file.name)
    cache = ctx.__dict__.setdefault("_skipped_of", {})
    if path not in cache:
        cache[path] = _skipped_ranges(ctx.tu, ctx.files.get(path))
    inside = [(s, t) for s, t in cache[path] if e.start.offset <= s and t <= e.end.offset]
    if not inside:
        return []
    data = ctx.read(path)
    names: list[str] = []
    for s, t in inside:
        if _arch_test(data, s, arch_dependent(ctx)) and _host_takes(data, s):
            text = _STRING_OR_COMMENT.sub(" ", data[s:t].decode("utf-8", "replace"))
            names += [n for n in _IDENT.findall(text) if n not in ("if", "ifdef", "ifndef", "elif", "else", "endif",
                                                                   "defined", "__CUDA_ARCH__")]
    # A project macro written there (`TRACE();` on the host side) expands in the host pass: what its body names
    # (`ns::trace_domain`) is needed too, though no cursor of the parse points at it.
    todo, seen = list(dict.fromkeys(names)), set(names)
    while todo:
        for m in ctx.active_defs(todo.pop()):
            for n in _IDENT.findall(_STRING_OR_COMMENT.sub(" ", m.body)):
                if n not in seen:
                    seen.add(n)
                    names.append(n)
                    todo.append(n)
    return list(dict.fromkeys(names))


_DEFINE_OF = lazy_re.compile(rb"^[ \t]*#[ \t]*define[ \t]+(\w+)")


def arch_dependent(ctx: TUContext) -> Callable[[bytes], bool]:
    """Whether an `#if` condition tests `__CUDA_ARCH__` through the project's macros: `#if LIB_IS_DEVICE_CODE`,
    where `LIB_IS_DEVICE_CODE` expands (pastes included, closure.pasted) to a macro that `#if
    defined(__CUDA_ARCH__)` / `#else` defines to 1 or 0, or to a text that names `__CUDA_ARCH__`. The parse
    decides it for the device side; nvcc's host pass takes the other branch."""
    def depends(cond: bytes) -> bool:
        text = _STRING_OR_COMMENT.sub(" ", cond.decode("utf-8", "replace"))
        if not any(ctx.active_macro(n) for n in _IDENT.findall(text)):
            return False
        names = expansion_names(text, ctx.macro_lookup)
        return "__CUDA_ARCH__" in names or any(
            arch_chain(ctx.read(m.path), m.start, n, memo) is not None for n in names for m in ctx.active_defs(n))
    cache: dict[bytes, bool] = {}

    def memo(cond: bytes) -> bool:
        if cond not in cache:
            cache[cond] = False  # (a condition whose macros lead back to it)
            cache[cond] = depends(cond)
        return cache[cond]
    return ctx.memo("arch_dependent", lambda: memo)


# What the compiler itself answers, differently in the parse (libclang, claiming GCC 4.2) and in nvcc's passes (g++ on
# the host, EDG in g++ mode on the device): clang's feature-test operators, which g++ lacks or answers otherwise, and
# the compilers' identities and versions.
COMPILER_TESTS = lazy_re.compile(
    rb"\b(?:__has_feature|__has_extension|__has_builtin|__has_attribute|__has_cpp_attribute|"
                            rb"__has_declspec_attribute|__is_identifier|__clang__|__clang_major__|__clang_minor__|"
                            rb"__clang_version__|__CUDA__|__GNUC__|__GNUC_MINOR__|__GNUC_PATCHLEVEL__)\b")


def arch_chain(data: bytes, offset: int, name: str, depends: Callable[[bytes], bool] | None = None,
               compiler: bool = False) -> str | None:
    """The whole `#ifdef __CUDA_ARCH__` / `#define NAME a` / `#else` / `#define NAME b` / `#endif` chain around
    the definition of macro NAME at `offset`, when its branches hold nothing but definitions of NAME: the parse
    (with `__CUDA_ARCH__`) chose one, but nvcc's host pass takes the other, so a unit that copied only the
    device one (`constexpr int arch = __CUDA_ARCH__;`) failed there with `__CUDA_ARCH__` undefined. None when
    the definition sits in no such chain. `depends` (arch_dependent) also counts a condition that tests
    `__CUDA_ARCH__` through macros (`#if LIB_IS_DEVICE_CODE` / `#define LIB_CODE LIB_CODE_DEVICE` / `#else` /
    `#define LIB_CODE LIB_CODE_HOST`). With `compiler`, a chain testing what the compiler answers (COMPILER_TESTS:
    `#ifdef __has_feature` / `#define HAS_FEATURE(x) __has_feature(x)` / `#else` / `#define HAS_FEATURE(x) 0`)
    counts too: the parse took the clang branch, and a copy of it alone stopped g++'s host pass wherever the macro
    reached an `#if` ("missing binary operator before token \"(\""); with its chain, each of nvcc's passes takes
    the branch it takes in the original."""
    def tests(cond: bytes) -> bool:
        return b"__CUDA_ARCH__" in cond or (compiler and COMPILER_TESTS.search(cond) is not None) or (
            depends is not None and depends(cond))
    stack: list[tuple[int, bool]] = []  # open #if chains: (start of the #if line, tests __CUDA_ARCH__)
    branch: list[tuple[bytes, bytes]] = []  # each open chain's current branch: (kind, condition)
    found: tuple[int, bool, int] | None = None  # the innermost chain around `offset`, and its depth
    outer: list[tuple[bytes, bytes]] = []  # the branches of the chains around that one, outermost first
    for m in _DIRECTIVE.finditer(data):
        if found is None and m.start() > offset and stack:
            found = (*stack[-1], len(stack))
            outer = branch[:-1]
        kind = m.group(1)
        if kind in (b"if", b"ifdef", b"ifndef"):
            stack.append((m.start(), tests(m.group(2))))
            branch.append((kind, m.group(2)))
        elif kind in (b"elif", b"else") and stack:
            branch[-1] = (kind, m.group(2))
            if tests(m.group(2)):
                stack[-1] = (stack[-1][0], True)
        elif kind == b"endif" and stack:
            start, arch = stack.pop()
            branch.pop()
            if found is not None and len(stack) + 1 == found[2]:
                if not (arch or found[1]) or start != found[0]:
                    return None
                end = data.find(b"\n", m.end())
                chain = data[start:len(data) if end < 0 else end]
                text = _only_defines_of(chain, name)
                return _under_parser_branches(text, outer) if text and compiler else text
        if found is None and m.start() > offset:
            return None
    return None


def _under_parser_branches(text: str, outer: list[tuple[bytes, bytes]]) -> str:
    """`text` (a compiler-test chain) inside the first branches of the chains around it that test what only the
    parser defines (`#if defined(__clang__)` / `#if __has_feature(x)` / `#define HAS_X 1` / `#endif` / `#elif
    defined(__GNUC__)` ...): the parse is clang, so it took that branch, and the inner chain copied alone asked g++'s
    preprocessor for clang's `__has_feature` ("missing binary operator before token \"(\""). Written under the same
    condition, each of nvcc's passes skips it as it skips the original's clang branch."""
    for kind, cond in reversed(outer):
        c = re.sub(rb"/\*.*?\*/", b" ", cond.split(b"//")[0]).strip()
        if kind == b"ifdef" and PARSER_ONLY.fullmatch(c.decode("latin-1")):
            c = b"defined(" + c + b")"
        elif kind != b"if":
            continue
        words = re.findall(r"[A-Za-z_]\w*", c.decode("latin-1"))
        # (only a condition of nothing but the parser's names: `defined(__clang__) && !defined(__CUDA__)`)
        if words and any(PARSER_ONLY.fullmatch(w) for w in words) and \
                all(w == "defined" or PARSER_ONLY.fullmatch(w) for w in words):
            text = f"#if {c.decode('latin-1')}\n{text}#endif\n"
    return text


def _only_defines_of(chain: bytes, name: str) -> str | None:
    """The chain's text when every line outside its own directives defines `name` (continuations, comments and
    blank lines aside), else None."""
    lines = chain.split(b"\n")
    depth, cont = 0, False
    for ln in lines:
        if cont:
            cont = ln.rstrip().endswith(b"\\")
            continue
        d = _DIRECTIVE.match(ln)
        if d is not None:
            depth += {b"if": 1, b"ifdef": 1, b"ifndef": 1, b"endif": -1}.get(d.group(1), 0)
            if depth > 1:
                return None  # a nested #if: more than this macro's choice
            continue
        m = _DEFINE_OF.match(ln)
        if m is not None:
            if m.group(1).decode() != name:
                return None
            cont = ln.rstrip().endswith(b"\\")
            continue
        if ln.strip() and not ln.strip().startswith((b"//", b"/*", b"*")):
            return None
    return chain.decode("utf-8", "replace") + "\n"


# Names a guard may test and still mean the same in the unit: the compiler's, and the runtime's version (every unit
# that uses the CUDA runtime includes it).
_GUARD_NAMES = lazy_re.compile(r"defined|__CUDA_ARCH__|__CUDA_ARCH_FEAT_\w+|__CUDACC__|__NVCC__|__CUDACC_VER_\w+__|"
                          r"CUDART_VERSION|__clang__|__clang_major__|__clang_minor__|__CUDA__")
# What the parse defines because libclang is the parser (nvcc defines none of them): a branch testing them holds
# code for clang's CUDA mode only (a helper nvcc's headers already declare), whatever `__CUDA_ARCH__` says.
PARSER_ONLY = lazy_re.compile(r"\b(?:__clang__|__clang_major__|__clang_minor__|__CUDA__)\b")


def chains_open_at(data: bytes, offset: int) -> list[list[tuple[bytes, bytes]]]:
    """The `#if` chains open at `offset`, outermost first: each chain's branches (kind, condition) so far."""
    stack: list[list[tuple[bytes, bytes]]] = []
    for m in _DIRECTIVE.finditer(data, 0, offset):
        kind, cond = m.group(1), m.group(2)
        if kind in (b"if", b"ifdef", b"ifndef"):
            stack.append([(kind, cond)])
        elif kind in (b"elif", b"else") and stack:
            stack[-1].append((kind, cond))
        elif kind == b"endif" and stack:
            stack.pop()
    return stack


def arch_guards(data: bytes, start: int, end: int) -> list[str]:
    """The `#if` conditions of the chains around the declaration at [start, end) that test `__CUDA_ARCH__` in a
    single branch which nvcc's host pass skips (`#if __CUDA_ARCH__ >= 530` ... `#endif` around a specialization that
    uses `__hmul2` on a member which is `__half2` only there): the parse took that branch, so the closure copied
    the declaration bare, and the unit's host pass compiled it against the other type of the member ("no instance
    of overloaded function"). The unit writes the declaration under the same conditions; so too under a test of
    what only the parser defines (`#if defined(__clang__) && defined(__CUDA__)`: a helper clang's CUDA mode lacks,
    which nvcc declares, so a bare copy was "more than one instance of overloaded function"). A chain with another
    branch (the host's alternative), or a condition naming other macros, gives nothing (the declaration is copied
    as before)."""
    stack = chains_open_at(data, start)
    if not stack:
        return []
    # Whether each open chain closes after the declaration with no other branch: scan on from its end.
    open_chains = list(range(len(stack)))
    alone = [len(branches) == 1 for branches in stack]
    depth = 0
    for m in _DIRECTIVE.finditer(data, end):
        if not open_chains:
            break
        kind = m.group(1)
        if kind in (b"if", b"ifdef", b"ifndef"):
            depth += 1
        elif kind == b"endif":
            if depth:
                depth -= 1
            else:
                open_chains.pop()
        elif depth == 0:
            alone[open_chains[-1]] = False
    out = []
    for idx, (branches, single) in enumerate(zip(stack, alone, strict=True)):
        kind, cond = branches[0]
        cond = re.sub(rb"/\*.*?\*/", b" ", cond.split(b"//")[0]).strip()
        if kind == b"ifdef" and cond in (b"__CUDA_ARCH__", b"__clang__", b"__CUDA__"):
            cond = b"defined(" + cond + b")"
        elif kind != b"if":
            continue
        text = cond.decode("latin-1")
        parser_only = PARSER_ONLY.search(text) is not None
        if not single or idx in open_chains or not (parser_only or "__CUDA_ARCH__" in text) or \
                any(not _GUARD_NAMES.fullmatch(w) for w in re.findall(r"[A-Za-z_]\w*", text)) or \
                not parser_only and _host_value(b"if", cond) is not False:
            continue
        out.append(text)
    return out
