"""Why a kernel has no recorded launch: where else its name is written in the sources the miner read.

A kernel nothing names besides its own definition (and `__global__` declarations of it) is dead code in
the mined sources, or launched from outside them; one that is named somewhere but got no launch is a
launch the miner did not resolve. Metadata says which (`launch_missing`), so the launch figure of a
dataset separates the miner's misses from kernels nobody launches.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from miner import lazy_re
from miner.frontends.common import matching

_COMMENT_OR_STRING = lazy_re.compile(rb'/\*.*?\*/|//[^\n]*|"(?:[^"\\\n]|\\.)*"', re.S)
_STATEMENT_START = lazy_re.compile(rb"[;{}]")
_WORD = lazy_re.compile(rb"\w+")
_EXTERN_C = lazy_re.compile(rb'\bextern\s*"C"')
_EXTERN_C_BLOCK = lazy_re.compile(rb'\bextern\s*"C"\s*\{[^{}]*$')
_BLOCK_OPEN = lazy_re.compile(rb"\s*\{")
# The driver API's (and HIP's) lookups of a kernel in a module by its symbol name.
_LOADS_BY_NAME = lazy_re.compile(rb"\b(?:cuModuleGetFunction|cuLibraryGetKernel|hipModuleGetFunction)\b")
_STATEMENT_END = lazy_re.compile(rb"[;{}]")
# A word that a `(` follows, a `)` possibly between (`(step)(`): a function's declarator.
_CALLED_WORD = lazy_re.compile(rb"\b(\w+)\s*\)?\s*\(")


def _blank(m: re.Match[bytes]) -> bytes:
    # Same length, newlines kept: offsets and line numbers stay those of the file.
    return re.sub(rb"[^\n]", b" ", m.group(0))


class Mentions:
    """Occurrences of a name across the files of one extraction, comments and strings left out."""

    def __init__(self, files: Iterable[tuple[str, bytes]], includes: dict[str, set[str]] | None = None) -> None:
        self._raw = dict(files)
        self._clean: dict[str, bytes] = {}
        # file -> project files it #includes (the include graph's edges): a file that cannot reach the
        # definition's file does not name that kernel, whatever it calls by that name (`Catch::trim` in a
        # vendored test header). Files outside the graph are taken to reach everything.
        self._includes = includes
        self._reach: dict[str, set[str]] = {}
        self._files_of: dict[bytes, list[str]] | None = None
        self._dead: dict[str, list[tuple[int, int]]] = {}
        self._c_names: dict[str, frozenset[bytes]] = {}
        self._loader_names: frozenset[str] | None = None

    @property
    def files(self) -> dict[str, bytes]:
        """path -> raw text of every file of the extraction."""
        return self._raw

    def _with_word(self, word: bytes) -> list[str]:
        """The files whose raw text has `word` (letters, digits, `_`) as a whole word, in file order. A name
        that `uses` matches is one (comments and strings are blanked from a `/` or `"` on, never from a word
        character), so only these files can name it; one index of the words instead of a search of every
        file per name (MMCV: 146 names x 419 files)."""
        if self._files_of is None:
            self._files_of = {}
            for path, raw in self._raw.items():
                for w in set(_WORD.findall(raw)):
                    self._files_of.setdefault(w, []).append(path)
        return self._files_of.get(word, [])

    def _sees(self, path: str, target: str) -> bool:
        if self._includes is None or path not in self._includes or path == target:
            return True
        if path not in self._reach:
            seen, stack = {path}, [path]
            while stack:
                for nxt in self._includes.get(stack.pop(), ()):
                    if nxt not in seen:
                        seen.add(nxt)
                        stack.append(nxt)
            self._reach[path] = seen
        return target in self._reach[path]

    def text(self, path: str) -> bytes:
        """The file's text with comments and strings blanked (same offsets and lines)."""
        return self._text(path) if path in self._raw else b""

    def _text(self, path: str) -> bytes:
        if path not in self._clean:
            self._clean[path] = _COMMENT_OR_STRING.sub(_blank, self._raw[path])
        return self._clean[path]

    def _sees_c_declaration(self, path: str, name: str) -> bool:
        """Whether `path`, or a project file it includes, declares `name` as an `extern "C"` function (alone or
        in an `extern "C" {` block, the name possibly parenthesized: `extern "C" void (step)(float *);`)."""
        word = name.encode()
        if self._includes is None or path not in self._includes:
            return word in self._c_declared(path)
        self._sees(path, "")  # (fills the reach of `path`)
        return any(word in self._c_declared(q) for q in self._reach.get(path, {path}))

    def _c_declared(self, path: str) -> frozenset[bytes]:
        """The names `path` declares `extern "C"`, read once per file: each word followed by `(` (a `)` between
        allowed) in the declaration after an `extern "C"` (up to its `;`, `{` or `}`), or in an `extern "C" {`
        block up to the block's first `}`. A search per name and file instead scanned every block again for
        every kernel of C linkage (quadratic on a driver-API library whose kernels all sit in such blocks)."""
        found = self._c_names.get(path)
        if found is None:
            raw = self._raw.get(path, b"")
            names: set[bytes] = set()
            for m in _EXTERN_C.finditer(raw):
                block = _BLOCK_OPEN.match(raw, m.end())
                if block is not None:
                    close = raw.find(b"}", block.end())
                    region = raw[block.end():len(raw) if close < 0 else close]
                else:
                    start = m.end()
                    stop = _STATEMENT_END.search(raw, start)
                    region = raw[start:len(raw) if stop is None else stop.start()]
                names.update(_CALLED_WORD.findall(region))
            found = self._c_names[path] = frozenset(names)
        return found

    def uses(self, name: str, definition: tuple[str, int, int], c_linkage: bool = False) -> list[tuple[str, int]]:
        """(path, line) of each place that names `name` outside its definition and outside a `__global__`
        declaration (the statement before the name holds `__global__`). A kernel of C linkage (`c_linkage`) is
        also named by a file that cannot reach its definition but declares the name `extern "C"` itself or
        through a header: a host file that takes the kernel's address through a plain C declaration of it
        (`extern "C" void step(float *);` in a header of host declarations, `(const void *)&step` handed to a
        kernel object that launches it later) names the one symbol of that name the program has."""
        pat = re.compile(rb"(?<![\w.>])" + re.escape(name.encode()) + rb"(?!\w)")
        dpath, dstart, dend = definition
        out: list[tuple[str, int]] = []
        word = name.encode()
        paths = (self._with_word(word) if _WORD.fullmatch(word) is not None
                 else [p for p, raw in self._raw.items() if word in raw])
        for path in paths:
            if not self._sees(path, dpath) and not (c_linkage and self._sees_c_declaration(path, name)):
                continue
            text = self._text(path)
            for m in pat.finditer(text):
                if path == dpath and dstart <= m.start() < dend:
                    continue
                head = text[max(0, m.start() - 400):m.start()]
                cut = max((s.end() for s in _STATEMENT_START.finditer(head)), default=0)
                if b"__global__" in head[cut:]:
                    continue
                # (nor the C declaration that lets a host file name it, alone or in an `extern "C" {` block: a
                # declaration launches nothing)
                raw_head = self._raw[path][max(0, m.start() - 400):m.start()]
                if c_linkage and (_EXTERN_C.search(raw_head[cut:]) or _EXTERN_C_BLOCK.search(raw_head)):
                    continue
                out.append((path, text.count(b"\n", 0, m.start()) + 1))
        return out


    def loaded_by_name(self, name: str) -> list[tuple[str, int]]:
        """(path, line) of each string literal `"name"` passed to a call that looks a kernel up in a module by name:
        `cuModuleGetFunction(&f, module, "name")`, or a function of the project whose body makes that lookup
        (`gpu->GetFunction("name")`, `LoadKernel(FUNC_X, "name")`). The driver API loads the kernel from a module
        at run time and launches it through the handle, so the sources name it only in a string, which `uses`
        leaves out."""
        from miner.units import driver_api

        lit = b'"' + name.encode() + b'"'
        loaders = self._loaders()
        out = []
        for path, raw in self._raw.items():
            if lit not in raw:
                continue
            clean = _COMMENT_OR_STRING.sub(lambda m: m.group(0) if m.group(0) == lit else _blank(m), raw)
            at = clean.find(lit)
            while at >= 0:
                call = driver_api.call_around(clean, at)
                if call is not None and call[0] in loaders:
                    out.append((path, clean.count(b"\n", 0, at) + 1))
                at = clean.find(lit, at + 1)
        return out

    def _loaders(self) -> frozenset[str]:
        """The lookup functions: the driver API's, and the project's functions that call one (last name part)."""
        if self._loader_names is None:
            from miner.units import driver_api

            names = {"cuModuleGetFunction", "cuLibraryGetKernel", "hipModuleGetFunction"}
            for raw in self._raw.values():
                if _LOADS_BY_NAME.search(raw) is None:
                    continue
                clean = _COMMENT_OR_STRING.sub(_blank, raw)
                for m in _LOADS_BY_NAME.finditer(clean):
                    if fn := driver_api.enclosing_function(clean, m.start()):
                        names.add(re.split(r"::|->|\.", fn)[-1])
            self._loader_names = frozenset(names)
        return self._loader_names

    def disabled(self, path: str, line: int) -> bool:
        """Whether `line` of `path` lies in code that a literal `#if 0` (or the `#else` of a literal `#if 1`)
        switches off in every configuration: dead code, not a launch the parse missed."""
        if path not in self._dead:
            self._dead[path] = _disabled_lines(self._raw.get(path, b""))
        return any(a <= line <= b for a, b in self._dead[path])

    def _line_of(self, name: str, path: str, line: int) -> tuple[bytes, int, int] | None:
        """The text of `path` (comments and strings blanked) and the offsets of `line` in it, or None where the
        file never names `name` or has no such line."""
        raw = self._raw.get(path)
        if raw is None or name.encode() not in raw:
            return None
        text = self._text(path)
        starts = [0, *(m.end() for m in re.finditer(rb"\n", text))]
        if line - 1 >= len(starts):
            return None
        return text, starts[line - 1], (starts[line] if line < len(starts) else len(text))

    def namesake_call(self, name: str, path: str, line: int) -> bool:
        """Whether every mention of `name` on `line` of `path` is followed by `(`: a call of a function of that
        name or its definition's head, never a launch (a kernel is launched with `<<<...>>>`, or named bare where
        a pointer to it is taken). CudaSift's host `double LowPass(CudaImage &, ...)` wraps the launch of
        another kernel and shares its name with a kernel launched only in the `#else` of an `#if 1`."""
        span = self._line_of(name, path, line)
        if span is None:
            return False
        text, at, nxt = span
        pat = re.compile(rb"(?<![\w.>])" + re.escape(name.encode()) + rb"(?!\w)(\s*\()?")
        found = list(pat.finditer(text, at, nxt))
        return bool(found) and all(m.group(1) for m in found)

    def in_definition_of(self, name: str, path: str, line: int) -> bool:
        """Whether the mention of `name` on `line` of `path` is the head of a function of that name defined at
        namespace scope in that file, or an unqualified call inside the body of one (an overload that
        forwards to another: `void SetData(Ctx c, ...) { SetData(c->stream(), ...); }`). A qualified call
        (`Kernel::run(...)` in a dispatcher's own `run`) calls another class's member: a real use; so is a
        member function's head (`static void run(...)` of the functors such a dispatcher calls, from a header
        the include reach may not count)."""
        span = self._line_of(name, path, line)
        if span is None:
            return False
        text, at, nxt = span
        pat = re.compile(rb"(?<![\w.>:])" + re.escape(name.encode()) + rb"\s*\(")
        heads: list[tuple[int, int, int]] = []  # (name offset, body start, body end) of each definition
        for m in pat.finditer(text, 0, nxt):
            close = matching(text, m.end() - 1, b"(", b")")
            # `) const noexcept -> T {`: the body's brace after the declarator, no `;` between
            tail = re.match(rb"[\s\w:<>,*&\->]*?\{", text[close + 1:close + 400]) if close >= 0 else None
            if tail is not None and _namespace_scope(text, m.start()):
                brace = close + tail.end()
                heads.append((m.start(), brace, matching(text, brace, b"{", b"}")))
        qualified = re.compile(rb"(?:::|\.|->)\s*(?:template\s+)?" + re.escape(name.encode()) + rb"(?!\w)")
        if qualified.search(text, at, nxt):
            return False  # a member of another class or object named here: a real use
        calls = [m.start() for m in pat.finditer(text, at, nxt)]
        if not calls:
            return False
        for pos in calls:
            if any(h == pos for h, _b, _e in heads):
                continue  # a definition's own name
            if not any(b < pos < e for _h, b, e in heads):
                return False  # an unqualified call outside every same-name definition: a real use
        return True

    def macro_at(self, path: str, line: int) -> tuple[str, int, int] | None:
        """(name, start, end offsets) of the `#define` whose body holds that line, if one does."""
        raw = self._raw.get(path)
        if raw is None:
            return None
        starts = [0, *(m.end() for m in re.finditer(rb"\n", raw))]
        i = line - 1
        if i >= len(starts):
            return None
        while i > 0 and raw[starts[i - 1]:starts[i]].rstrip(b"\r\n").endswith(b"\\"):
            i -= 1
        m = _DEFINE.match(raw, starts[i])
        if m is None:
            return None
        end = starts[i]
        while True:
            nl = raw.find(b"\n", end)
            if nl < 0 or not raw[end:nl].rstrip(b"\r").endswith(b"\\"):
                end = len(raw) if nl < 0 else nl
                break
            end = nl + 1
        return (m.group(1).decode(), starts[i], end) if starts[line - 1] < end else None


_DEFINE = lazy_re.compile(rb"[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)")
_CONDITIONAL = lazy_re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b[ \t]*([^\n]*)", re.M)


def _disabled_lines(raw: bytes) -> list[tuple[int, int]]:
    """(first, last) line ranges a literal `#if 0` / `#if false` (or the `#else` of `#if 1`) switches off."""
    out: list[tuple[int, int]] = []
    # Per open conditional: whether the branch now open is dead, where it began, whether its #else is dead.
    stack: list[tuple[bool, int, bool]] = []
    for m in _CONDITIONAL.finditer(raw):
        kind, cond = m.group(1), m.group(2).split(b"//")[0].split(b"/*")[0].strip()
        line = raw.count(b"\n", 0, m.start()) + 1
        literal = cond if kind == b"if" else None
        if kind in (b"if", b"ifdef", b"ifndef"):
            stack.append((literal in (b"0", b"false"), line, literal in (b"1", b"true")))
            continue
        if not stack:
            continue
        dead, start, else_dead = stack.pop()
        if dead:
            out.append((start, line))
        if kind == b"else":
            stack.append((else_dead, line, False))
        elif kind == b"elif":  # (not a literal condition: what follows is left alone)
            stack.append((False, line, False))
    return out


_SCOPE_OPENER = lazy_re.compile(rb"(?:\bnamespace\b[\w\s:]*|\bextern\s*\"C\+*\"\s*)$")


def _namespace_scope(text: bytes, pos: int) -> bool:
    """Whether `pos` lies at namespace scope: every brace open there opens a namespace or `extern "C"`."""
    stack: list[bool] = []
    for m in re.finditer(rb"[{}]", text[:pos]):
        if m.group(0) == b"{":
            stack.append(bool(_SCOPE_OPENER.search(text[max(0, m.start() - 200):m.start()].rstrip())))
        elif stack:
            stack.pop()
    return all(stack)


def launch_missing(name: str, uses: list[tuple[str, int]], references: int, frontend: str,
                   rel: Callable[[str], str], other_launch: bool = False, disabled: bool = False,
                   namesakes: list[tuple[str, int]] = (), skipped: list[str] = ()) -> dict[str, Any]:
    """The `launch_missing` block of a kernel without a recorded launch; `rel` maps a path for display.
    `other_launch`: every use is a launch the AST resolved to another kernel of the same name; `disabled`: every
    use lies in code a literal `#if 0` switches off, or is one of `namesakes` (calls or definitions of a function
    of the same name: Mentions.namesake_call); `skipped`: where every use not so explained lies in a branch the
    parse's preprocessor skipped (`path:line under #ifdef X`), none of them being a literal `#if 0`."""
    where = [f"{rel(p)}:{line}" for p, line in uses[:5]]
    calls = [f"{rel(p)}:{line}" for p, line in namesakes[:5]]
    if frontend == "clang" and uses and not references and namesakes and (disabled or len(namesakes) == len(uses)):
        dead = [w for w in where if w not in calls]
        said = (f"in code a literal `#if 0` (or the `#else` of an `#if 1`) switches off ({', '.join(dead)}) and "
                if dead else "")
        return {"reason": "disabled_code" if dead else "other_definition",
                "detail": f"{name} is named only {said}as a function of that name called or defined "
                f"({', '.join(calls)}), which is no launch (a kernel is launched with <<<...>>>): nothing that is "
                "compiled launches it", "mentions": where}
    if frontend != "clang":
        return {"reason": "no_ast", "detail": f"{name} was found by the {frontend} frontend only (an inactive "
                "#if branch): launches are read from the AST", "mentions": where}
    if not uses:
        return {"reason": "not_referenced", "detail": f"{name} is named nowhere in the mined sources and the "
                "project files used as context besides its definition: nothing there launches it", "mentions": []}
    if other_launch and not references:
        return {"reason": "other_definition", "detail": f"{name} is named only at launches of another kernel of "
                f"that name (an overload, or a same-name kernel elsewhere): {', '.join(where)}", "mentions": where}
    if skipped and not references:
        also = (f"; elsewhere the name is a function of that name called or defined ({', '.join(calls)}), no launch"
                if calls else "")
        return {"reason": "configuration_skipped", "detail": f"{name} is launched only in code the preprocessor "
                f"skips in the configuration mined ({', '.join(skipped[:5])}){also}: its launch belongs to a build "
                "that defines otherwise", "mentions": where}
    if disabled and not references:
        return {"reason": "disabled_code", "detail": f"{name} is named only in code a literal `#if 0` switches "
                f"off ({', '.join(where)}): nothing that is compiled launches it", "mentions": where}
    if references:
        return {"reason": "referenced_only", "detail": f"{name} is named (function pointer, kernel table) "
                "but launched through it where the launch names no kernel", "mentions": where}
    return {"reason": "unresolved", "detail": f"{name} is named at {', '.join(where)} but no launch of it was "
            "resolved", "mentions": where}
