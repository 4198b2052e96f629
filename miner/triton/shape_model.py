"""Symbolic tensor shapes: dimensions and shapes as union-find nodes, and the few operations the shape
reader (`miner/triton/shapes.py`) needs to record what a function's source says about its arguments.

A `Dim` is one size (named after the variables bound to it: `B, T, H, K = q.shape` names four); a
`Shape` is a tensor's list of dims, either closed (rank known) or open (only some leading / trailing
dims known: `H, K = g.shape[-2:]` says g is `[..., H, K]`). Unifying two nodes merges what each knew;
when they contradict each other the first fact wins (a function may test several layouts, and the
reader would rather keep one consistent answer than none).
"""

from __future__ import annotations


class Dim:
    def __init__(self, name: str | None = None, value: int | None = None) -> None:
        self.parent: Dim = self
        self.names: list[str] = [name] if name else []
        self.value = value  # fixed by a literal (`assert x.shape == (n, 1)`)
        self.factors: list[Dim] | None = None  # this dim is their product (`seqlen == nchunks * chunk_size`)
        self.multiple_of: list[Dim] = []  # `assert nheads % ngroups == 0`
        self.at_most: int | None = None  # `assert K <= 256`
        self.at_least: int | None = None  # the launch of the kernel under test sits under `if T > 512:`

    def root(self) -> Dim:
        node = self
        while node.parent is not node:
            node.parent = node.parent.parent
            node = node.parent
        return node

    def name(self, n: str) -> None:
        r = self.root()
        if n and n != "_" and n not in r.names:
            r.names.append(n)

    def __repr__(self) -> str:  # for test failures
        r = self.root()
        return f"Dim({'/'.join(r.names) or '?'}{'=' + str(r.value) if r.value is not None else ''})"


def unify(a: Dim, b: Dim) -> None:
    ra, rb = a.root(), b.root()
    if ra is rb or _depends(ra, rb) or _depends(rb, ra):
        return  # `x = x * y` style cycles: the product must not become its own factor
    rb.parent = ra
    ra.names += [n for n in rb.names if n not in ra.names]
    ra.value = ra.value if ra.value is not None else rb.value
    ra.factors = ra.factors if ra.factors is not None else rb.factors
    ra.multiple_of += rb.multiple_of
    if rb.at_most is not None:
        ra.at_most = rb.at_most if ra.at_most is None else min(ra.at_most, rb.at_most)
    if rb.at_least is not None:
        ra.at_least = rb.at_least if ra.at_least is None else max(ra.at_least, rb.at_least)


def _depends(a: Dim, b: Dim, depth: int = 0) -> bool:
    """Is b one of a's factors, transitively?"""
    if depth > 8 or not a.factors:
        return False
    return any(f.root() is b or _depends(f.root(), b, depth + 1) for f in a.factors)


def set_factors(d: Dim, factors: list[Dim]) -> None:
    r = d.root()
    if r.factors is not None and len(r.factors) == len(factors):
        for x, y in zip(r.factors, factors, strict=True):
            unify(x, y)  # `HD = H * X` and later `HD = H * D`: X is D
        return
    if r.factors is None and r.value is None and all(not _depends(f.root(), r) and f.root() is not r
                                                     for f in factors):
        r.factors = factors


def literal(v: int) -> Dim:
    return Dim(value=v)


class Shape:
    def __init__(self) -> None:
        self.parent: Shape = self
        self.rank: int | None = None
        self.dims: list[Dim] = []  # closed: every dim
        self.lead: list[Dim] = []  # open: known leading dims
        self.tail: list[Dim] = []  # open: known trailing dims
        self.evidence: list[str] = []  # where the facts came from: code, hint
        self.peers: list[Shape] = []  # operands of one elementwise op, both unknown at the time

    def root(self) -> Shape:
        node = self
        while node.parent is not node:
            node.parent = node.parent.parent
            node = node.parent
        return node

    @property
    def known(self) -> bool:
        r = self.root()
        return r.rank is not None or bool(r.lead or r.tail)

    def close(self, n: int) -> bool:
        """The rank is n; False when it was known to be something else."""
        r = self.root()
        if r.rank is not None:
            return r.rank == n
        if n < 0 or len(r.lead) > n or len(r.tail) > n:
            return False
        dims: list[Dim | None] = [None] * n
        for i, d in enumerate(r.lead):
            dims[i] = d
        for j, d in enumerate(r.tail):
            pos = n - len(r.tail) + j
            if dims[pos] is None:
                dims[pos] = d
            else:
                unify(dims[pos], d)
        r.rank, r.dims, r.lead, r.tail = n, [d if d is not None else Dim() for d in dims], [], []
        return True

    def at(self, i: int) -> Dim | None:
        r = self.root()
        if r.rank is not None:
            return r.dims[i] if -r.rank <= i < r.rank else None
        if i >= 0:
            while len(r.lead) <= i:
                r.lead.append(Dim())
            return r.lead[i]
        while len(r.tail) < -i:
            r.tail.insert(0, Dim())
        return r.tail[i]

    def __repr__(self) -> str:
        r = self.root()
        if r.rank is not None:
            return f"Shape{r.dims}"
        return f"Shape{r.lead}+[...]+{r.tail}"


def unify_shapes(a: Shape, b: Shape) -> None:
    ra, rb = a.root(), b.root()
    if ra is rb:
        return
    if ra.rank is None and rb.rank is not None:
        ra, rb = rb, ra
    if ra.rank is not None:
        if not rb.close(ra.rank):
            return  # two layouts: keep the first
        for x, y in zip(ra.dims, rb.dims, strict=True):
            unify(x, y)
    else:
        for i in range(min(len(ra.lead), len(rb.lead))):
            unify(ra.lead[i], rb.lead[i])
        ra.lead += rb.lead[len(ra.lead):]
        for i in range(1, min(len(ra.tail), len(rb.tail)) + 1):
            unify(ra.tail[-i], rb.tail[-i])
        if len(rb.tail) > len(ra.tail):
            ra.tail = rb.tail[:len(rb.tail) - len(ra.tail)] + ra.tail
    rb.parent = ra
    ra.evidence += [e for e in rb.evidence if e not in ra.evidence]
    ra.peers += rb.peers


def broadcast(a: Shape | None, b: Shape | None) -> Shape | None:
    """The shape of `a op b`. Aligned trailing dims are unified unless one is a literal 1; two operands
    nothing is known about are taken to be the same shape (elementwise references)."""
    if a is None or b is None:
        return a or b
    ra, rb = a.root(), b.root()
    if ra is rb:
        return ra
    if not ra.known or not rb.known:
        if ra.known:
            ra, rb = rb, ra
        if rb.rank is not None and any(d.root().value == 1 for d in rb.dims):
            # `x * s` with s reduced to `[..., 1]`: x has the full size where s has a 1
            unify_shapes(ra, closed([Dim() if d.root().value == 1 else d for d in rb.dims]))
            return ra.root()
        if rb.rank is None and any(d.root().value == 1 for d in rb.tail):
            full = Shape()
            full.tail = [Dim() if d.root().value == 1 else d for d in rb.tail]
            unify_shapes(ra, full)
            return ra.root()
        if not ra.known and not rb.known:
            # nothing known of either yet: likely one shape (elementwise), but a layout documented or
            # read later for one of them must still apply to it alone; decided at the end (peers)
            ra.peers.append(rb)
            rb.peers.append(ra)
            return ra
        unify_shapes(ra, rb)
        return ra.root()
    if (ra.rank is None) != (rb.rank is None):
        # a closed operand and one whose trailing sizes only are known: a reference's operands have
        # one rank far more often than not (`s[..., None] * v`)
        (rb if rb.rank is None else ra).close((ra if ra.rank is not None else rb).rank or 0)
        ra, rb = ra.root(), rb.root()
    da = ra.dims if ra.rank is not None else ra.tail
    db = rb.dims if rb.rank is not None else rb.tail
    out: list[Dim] = []
    for i in range(1, min(len(da), len(db)) + 1):
        x, y = da[-i].root(), db[-i].root()
        if x.value != 1 and y.value != 1:
            unify(x, y)
        out.insert(0, y if x.value == 1 else x)
    if ra.rank is not None and rb.rank is not None:
        longer = da if len(da) >= len(db) else db
        return closed(longer[:len(longer) - len(out)] + out)
    if ra.rank is not None and (rb.rank is None or ra.rank >= rb.rank):
        return ra
    return rb if rb.rank is not None else ra


def closed(dims: list[Dim]) -> Shape:
    s = Shape()
    s.rank, s.dims = len(dims), list(dims)
    return s
