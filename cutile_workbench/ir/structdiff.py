"""Structural Tile IR diff: match ops by structure and dataflow, render side by side, rank hunks.

Contract (anchors: LLVM's ``llvm-diff``, which matches instructions by structure and the values
they use, and GumTree, which matches identical subtrees first and then recovers the rest):
- Both texts are parsed into op graphs (:mod:`cutile_workbench.ir.graph`). A value is named by what
  defines it: op kind + normalized attributes/types + the names of its operands (a Merkle name),
  never by its SSA spelling, so renumbered/renamed values and reordered independent ops match.
- Matching is per region pair (top level, then the bodies of matched ``entry``/``for``/``if``/
  ``reduce`` ops): identical names first, regardless of order (a hash table); then, in reference
  order, each remaining op takes the nearest unmatched generated op of its kind in that region
  whose operands are all its own (found through the users of those values, a hashed lookup),
  else, among the :data:`MAX_CANDIDATES` nearest of its kind, the one whose operands correspond
  best (dataflow), with attribute similarity and position as tie-breakers. Every match makes its
  results (and region arguments) one value on both sides, which lets its users match in turn.
  No step compares all ops with all ops: a 10k-line pair is built in linear time.
- Rows are emitted in reference order (matched pairs side by side; unmatched generated ops right
  after the generated op they follow). Both sides are printed with one shared value naming
  (``%v0``, ``%v1``… in order of appearance), so an ``equal`` row is textually identical and a
  ``replace`` row differs only where the programs differ. Line numbers are the source lines.
- Each changed row gets a :class:`Category` (perf relevance rank); a hunk is a run of changed
  rows of one category; :attr:`StructDiff.hunks` is in rank order (tile/CTA shape first, cosmetic
  last; cosmetic hunks have ``cosmetic=True``) and each names the ``diff_ir.sh``-parity audit
  check it belongs to (``tile_shapes``, ``num_cta``, ``mma_acc``, ``for``, ``load_view_tko``…).
- :attr:`StructDiff.verdict` is ``equivalent`` only when no row changed, both sides parsed fully
  and both name the same kernel; else ``different`` or ``not fully parsed`` (unknown ops,
  truncated text, another dialect spelling: those lines are matched as plain text, listed in
  :attr:`StructDiff.fallback` with their line numbers, and their rows carry the category
  ``unparsed (text diff)``).
Pure; no I/O, no Textual; never raises on odd text.
"""

from __future__ import annotations

import bisect
import contextlib
import difflib
import functools
import gc
import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from cutile_workbench.ir.diffmodel import intraline_spans
from cutile_workbench.ir.graph import IRGraph, Op, normalize_shape, parse_ir

RowKind = Literal["equal", "replace", "insert", "delete"]
Span = tuple[int, int]

#: replaced rows whose intraline spans are computed eagerly; later ones on demand (:meth:`StructDiff.spans`)
MAX_EAGER_SPANS = 1_000
#: fuzzy candidates looked at per op (closest by relative position); keeps 10k-line pairs linear
MAX_CANDIDATES = 24


@dataclass(frozen=True)
class Category:
    rank: int
    name: str
    cosmetic: bool = False


TILE = Category(0, "tile/CTA shape")
MMA = Category(1, "mma shape / accumulator dtype")
LOOP = Category(2, "loop structure")
MEMORY = Category(3, "memory op / hints / latency")
VIEW = Category(4, "TMA / tensor-view vs pointer path")
HINTS = Category(5, "optimization hints")
EXTRA = Category(6, "extra loads / stores / casts")
UNPARSED = Category(7, "unparsed (text diff)")
OTHER = Category(8, "other op")
COSMETIC = Category(9, "cosmetic (constants, assume chains, dead ops)", cosmetic=True)
CATEGORIES = (TILE, MMA, LOOP, MEMORY, VIEW, HINTS, EXTRA, UNPARSED, OTHER, COSMETIC)

_LOOP_OPS = frozenset({"for", "loop", "if", "continue", "yield", "break"})
_MEM_OPS = frozenset(
    {"load_view_tko", "store_view_tko", "load_ptr_tko", "store_ptr_tko", "atomic_cas_tko", "atomic_rmw_tko"}
)
_VIEW_OPS = frozenset(
    {
        "make_tensor_view",
        "make_partition_view",
        "offset",
        "get_index_space_shape",
        "get_tensor_shape",
        "int_to_ptr",
        "ptr_to_int",
        "ptr_to_ptr",
    }
)
_CAST_OPS = frozenset({"ftof", "itof", "ftoi", "exti", "trunci", "bitcast"})
_PURE_COSMETIC = frozenset({"constant", "assume", "make_token"})
#: op rows of the diff_ir.sh audit table (a hunk of one of these kinds names that row)
_AUDIT_OPS = frozenset(
    {
        "load_ptr_tko",
        "store_ptr_tko",
        "load_view_tko",
        "store_view_tko",
        "reduce",
        "exp",
        "exp2",
        "rsqrt",
        "fma",
        "for",
        "addf",
        "subf",
        "mulf",
        "divf",
        "maxf",
        "minf",
        "select",
        "iota",
        "cmpi",
        "ftof",
        "itof",
        "exti",
    }
)
#: tile dimensions only (``tile<128x64xf16>`` → ``128x64x``, ``tile=(64x512)``): a dtype change is not a shape change
_TILE_SHAPE = re.compile(r"tile<((?:\d+x)+)[A-Za-z]|tile=\(([0-9x]+)\)")
_NUM_CTA = re.compile(r"num_cta_in_cga = \d+")
_OCCUPANCY = re.compile(r"occupancy = \d+")
_HINTS = re.compile(r"optimization_hints=<.*?\}>")
_TYPES_OF_MMA = re.compile(r":\s*(.*)$")
_VALUE = re.compile(r"%[A-Za-z0-9_$.]+(?:#\d+)?(?::\d+)?")
_KERNEL_TAIL = re.compile(r"_Kt\d.*$|_entry$")


@dataclass(frozen=True)
class SRow:
    """One side-by-side row; line numbers are 1-based source lines (None on the absent side)."""

    kind: RowKind
    left_no: int | None
    right_no: int | None
    left: str
    right: str
    left_spans: tuple[Span, ...] = ()
    right_spans: tuple[Span, ...] = ()
    op: str = ""  # op kind of the row (``}``/``else`` rows: the region op's kind)
    category: Category | None = None  # changed rows only
    hunk: int = -1  # index into StructDiff.hunks (rank order); -1 for equal rows


@dataclass(frozen=True)
class Hunk:
    """A run of changed rows of one category: rows[start:end]."""

    start: int
    end: int
    category: Category
    audit_check: str | None  # the diff_ir.sh-parity audit row it belongs to (None: no such row)
    summary: str  # one line: what changed, reference → generated

    @property
    def cosmetic(self) -> bool:
        return self.category.cosmetic


@dataclass(frozen=True)
class Fallback:
    side: Literal["reference", "generated"]
    line: int
    text: str
    reason: str


@dataclass
class StructDiff:
    rows: list[SRow]
    hunks: list[Hunk]  # rank order
    fallback: list[Fallback]
    notes: list[str] = field(default_factory=list)
    same_kernel: bool = True
    _lazy: dict[int, tuple[tuple[Span, ...], tuple[Span, ...]]] = field(default_factory=dict, repr=False)

    def spans(self, i: int) -> tuple[tuple[Span, ...], tuple[Span, ...]]:
        """Intraline spans of row ``i`` (computed on first use past the eager budget)."""
        r = self.rows[i]
        if r.kind != "replace" or r.left_spans or r.right_spans:
            return r.left_spans, r.right_spans
        got = self._lazy.get(i)
        if got is None:
            got = self._lazy[i] = intraline_spans(r.left, r.right)
        return got

    @property
    def changed_rows(self) -> int:
        return sum(1 for r in self.rows if r.kind != "equal")

    @property
    def verdict(self) -> Literal["equivalent", "different", "not fully parsed"]:
        if self.fallback:
            return "not fully parsed"
        if self.changed_rows:
            return "different"
        return "equivalent"

    @property
    def equivalent(self) -> bool:
        return self.verdict == "equivalent"

    def stats(self) -> dict[str, int]:
        out = {"equal": 0, "replace": 0, "insert": 0, "delete": 0}
        for r in self.rows:
            out[r.kind] += 1
        return out

    def fallback_rows(self) -> list[SRow]:
        """The labelled text diff of what was not parsed: the unparsed lines of the reference against
        those of the generated side (normalized spacing, difflib), with their source line numbers.
        An ``equal`` row here is the same text on both sides, still not parsed (no claim is made)."""
        ref = [f for f in self.fallback if f.side == "reference"]
        gen = [f for f in self.fallback if f.side == "generated"]
        a = [normalize_shape(f.text) for f in ref]
        b = [normalize_shape(f.text) for f in gen]
        out: list[SRow] = []
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            if tag == "equal" or tag == "replace":
                for k in range(max(i2 - i1, j2 - j1)):
                    li, gj = i1 + k, j1 + k
                    has_l, has_r = li < i2, gj < j2
                    kind: RowKind = tag if has_l and has_r else ("delete" if has_l else "insert")
                    out.append(
                        SRow(
                            kind,
                            ref[li].line if has_l else None,
                            gen[gj].line if has_r else None,
                            a[li] if has_l else "",
                            b[gj] if has_r else "",
                            op="?",
                            category=UNPARSED,
                        )
                    )
            elif tag == "delete":
                out += [
                    SRow("delete", ref[k].line, None, a[k], "", op="?", category=UNPARSED)
                    for k in range(i1, i2)
                ]
            else:
                out += [
                    SRow("insert", None, gen[k].line, "", b[k], op="?", category=UNPARSED)
                    for k in range(j1, j2)
                ]
        return out

    def fallback_ranges(self, side: str) -> str:
        """``5, 9-12`` for the unparsed lines of one side."""
        return _ranges(sorted({f.line for f in self.fallback if f.side == side}))


def _ranges(nums: list[int]) -> str:
    out: list[str] = []
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ", ".join(out)


def kernel_base(symbol: str) -> str:
    """``_static_persistent_matmul_kernel_Kt1_…`` and ``static_persistent_matmul_kernel_entry`` → one name."""
    return _KERNEL_TAIL.sub("", symbol).lstrip("_")


def _same_family(ref_kernels: list[str], gen_kernels: list[str]) -> bool:
    """Entry names of one kernel family (``matmul_kernel`` / ``non_persistent_matmul_kernel``,
    ``softmax_row_kernel`` / ``softmax_persistent_kernel``): one contains the other or both start
    with the same word."""
    for a in ref_kernels:
        for b in gen_kernels:
            if a in b or b in a or a.split("_")[0] == b.split("_")[0]:
                return True
    return False


# ----------------------------------------------------------------------------- value naming
class _Side:
    """Merkle names of one graph's values (ints), computed once in program order."""

    def __init__(self, g: IRGraph, tag: str) -> None:
        self.g = g
        self.sig: list[int] = [0] * len(g.ops)
        self.names: dict[str, int] = {}
        self.free = 0
        self.tag = tag
        for op in g.ops:
            self.sig[op.index] = hash((op.kind, op.shape, tuple(self.name(v) for v in op.operands)))
            if op.kind == "assume" and len(op.results) == 1 and op.operands:
                # ``assume`` returns its operand with a fact attached: its users see that operand,
                # so two printers' different assume chains do not hide what the value is
                self.names[op.results[0]] = self.name(op.operands[-1])
                continue
            for k, r in enumerate(op.results):
                self.names[r] = hash(("r", self.sig[op.index], k))
            for rk, args in enumerate(op.region_args):
                for k, a in enumerate(args):
                    self.names[a] = hash(("a", self.sig[op.index], rk, k))
        n = len(g.ops)
        self.rel = [i / max(n - 1, 1) for i in range(n)]
        self.uses: dict[str, int] = {}
        for op in g.ops:
            for v in op.operands:
                self.uses[v] = self.uses.get(v, 0) + 1

    def name(self, v: str) -> int:
        got = self.names.get(v)
        if got is None:
            # used but never defined here (or before its definition): an input of unknown origin,
            # named by the order in which the program first uses it (not by its spelling)
            self.free += 1
            got = hash(("free", self.free))
            self.names[v] = got
        return got


class _Matcher:
    def __init__(self, ref: _Side, gen: _Side) -> None:
        self.ref, self.gen = ref, gen
        self.parent: dict[int, int] = {}
        self.pair: dict[int, int] = {}  # ref op index → gen op index
        self.rpair: dict[int, int] = {}
        self.tied: set[int] = set()
        self.tied_to: dict[int, int] = {}  # reference name → the generated name tied to it
        self.users: dict[tuple[int, str], list[int]] = {}  # see match_region
        self.a_sigs: set[int] = set()
        self.b_sigs: set[int] = set()
        self.ref_names = set(ref.names.values())
        self.gen_names = set(gen.names.values())

    def find(self, x: int) -> int:
        p = self.parent.get(x)
        if p is None:
            return x
        root = self.find(p)
        self.parent[x] = root
        return root

    def union(self, gen_name: int, ref_name: int) -> None:
        # Only a value with no identical twin on the other side, not yet tied to another, is tied:
        # tying a generated ``constant -1`` to a reference ``constant 0`` must not merge the
        # ``constant 0`` both sides share with it.
        if (
            gen_name == ref_name
            or gen_name in self.parent
            or gen_name in self.ref_names
            or ref_name in self.gen_names
            or ref_name in self.tied
        ):
            return
        self.parent[gen_name] = ref_name
        self.tied.add(ref_name)
        self.tied_to[ref_name] = gen_name

    def csig(self, side: _Side, op: Op) -> int:
        """The op's name under the ties made so far. Reference names are never re-tied (only a
        generated name gets a parent), so a reference op keeps its Merkle name."""
        if side is self.ref or not self.parent:
            return side.sig[op.index]
        parent = self.parent
        names = [side.name(v) for v in op.operands]
        if not any(n in parent for n in names):
            return side.sig[op.index]
        return hash((op.kind, op.shape, tuple(self.find(n) for n in names)))

    def bind(self, a: Op, b: Op) -> None:
        self.pair[a.index], self.rpair[b.index] = b.index, a.index
        for ra, rb in zip(a.results, b.results, strict=False):
            self.union(self.gen.name(rb), self.ref.name(ra))
        for aa, ab in zip(a.region_args, b.region_args, strict=False):
            for va, vb in zip(aa, ab, strict=False):
                self.union(self.gen.name(vb), self.ref.name(va))

    def match_region(self, A: list[int], B: list[int]) -> None:
        rops, gops = self.ref.g.ops, self.gen.g.ops
        # 1. identical structure, any order
        index: dict[int, deque[int]] = {}
        for b in B:
            index.setdefault(self.csig(self.gen, gops[b]), deque()).append(b)
        self.a_sigs = {self.csig(self.ref, rops[a]) for a in A}
        self.b_sigs = set(index)
        for a in A:
            q = index.get(self.csig(self.ref, rops[a]))
            while q:
                b = q.popleft()
                if b not in self.rpair:
                    self.bind(rops[a], gops[b])
                    break
        # 2. in reference order: identical under the matches made so far, else best by dataflow
        by_kind: dict[str, list[int]] = {}
        for b in B:
            if b not in self.rpair and gops[b].parsed:
                by_kind.setdefault(gops[b].kind, []).append(b)
        # (value name, op kind) → the unmatched generated ops of this region of that kind using the
        # value: what the dataflow lookup reads (one hashed key, no scan over the candidates)
        users: dict[tuple[int, str], list[int]] = {}
        gname = self.gen.name
        for kind, bs in by_kind.items():
            for b in bs:
                for v in gops[b].operands:
                    key = (gname(v), kind)
                    got = users.get(key)
                    if got is None:
                        users[key] = [b]
                    elif got[-1] != b:
                        got.append(b)
        self.users = users
        for a in A:
            if a in self.pair or not rops[a].parsed:
                continue
            cands = by_kind.get(rops[a].kind)
            if not cands:
                continue
            best = self._same_operands(rops[a])
            if best is None:
                best = self._best(rops[a], cands)
            if best is not None:
                self.bind(rops[a], gops[best])
                del cands[bisect.bisect_left(cands, best)]  # cands stay in program order
        # 3. recurse into the regions of matched ops
        for a in A:
            pb = self.pair.get(a)
            if pb is None:
                continue
            for ra, rb in zip(rops[a].regions, gops[pb].regions, strict=False):
                self.match_region(ra, rb)

    def _same_operands(self, a: Op) -> int | None:
        """The unmatched generated op nearest to ``a`` (relative position) of ``a``'s kind in this
        region whose operands are, position by position, the values ``a`` uses. It is looked up
        through the users of those values (a hashed key), from ``a``'s position outwards in each
        direction, stopping at the first hit; matched users met on the way are dropped for good."""
        if not a.operands:
            return None
        gen, rpair = self.gen, self.rpair
        a_ops = [self.ref.name(v) for v in a.operands]  # reference names are never re-tied
        lists: list[list[int]] = []
        fewest = -1
        for x in set(a_ops):
            # the generated values that are ``x``: the same Merkle name, or the one tied to it
            here = [
                lst
                for g in ((x if x in self.gen_names else None), self.tied_to.get(x))
                if g is not None and (lst := self.users.get((g, a.kind)))
            ]
            total = sum(len(lst) for lst in here)
            if total == 0:
                return None
            if fewest < 0 or total < fewest:
                lists, fewest = here, total
        pos, rel = self.ref.rel[a.index], gen.rel
        target = pos * max(len(rel) - 1, 1)  # the generated op index at a's relative position
        best, best_d = None, 2.0
        for users in lists:
            k = bisect.bisect_left(users, target)
            j = k
            while j < len(users):  # outwards to the right
                c = users[j]
                if c in rpair:
                    del users[j]
                    continue
                if self._uses_exactly(c, a_ops):
                    if rel[c] - pos < best_d:
                        best, best_d = c, rel[c] - pos
                    break
                j += 1
            j = min(k, len(users)) - 1
            while j >= 0:  # outwards to the left
                c = users[j]
                if c in rpair:
                    del users[j]
                    j -= 1
                    continue
                if self._uses_exactly(c, a_ops):
                    if pos - rel[c] < best_d:
                        best, best_d = c, pos - rel[c]
                    break
                j -= 1
        return best

    def _uses_exactly(self, c: int, a_ops: list[int]) -> bool:
        ops = self.gen.g.ops[c].operands
        if len(ops) != len(a_ops):
            return False
        name, find = self.gen.name, self.find
        return all(find(name(v)) == x for v, x in zip(ops, a_ops, strict=True))

    def _best(self, a: Op, cands: list[int]) -> int | None:
        gops = self.gen.g.ops
        pos = self.ref.rel[a.index]
        if len(cands) > MAX_CANDIDATES:
            k = bisect.bisect_left(cands, pos, key=self.gen.rel.__getitem__)
            lo = max(0, k - MAX_CANDIDATES // 2)
            pool = cands[lo : lo + MAX_CANDIDATES]
        else:
            pool = cands
        a_ops = [self.find(self.ref.name(v)) for v in a.operands]
        a_sig = self.csig(self.ref, a)
        if not a.operands and a_sig in self.b_sigs:
            return None  # a duplicate of a value the generated side has: never re-purposed
        best, best_score = None, 0.0
        rel = self.gen.rel
        for c in sorted(pool, key=lambda c: abs(pos - rel[c])):  # the likeliest (nearest) first
            b = gops[c]
            if self.csig(self.gen, b) == a_sig:
                return c
            if not b.operands and self.csig(self.gen, b) in self.a_sigs:
                continue
            b_ops = [self.find(self.gen.name(v)) for v in b.operands]
            n = max(len(a_ops), len(b_ops))
            agree = sum(1 for x, y in zip(a_ops, b_ops, strict=False) if x == y) / n if n else 0.0
            shape = 1.0 if a.shape == b.shape else _similarity(a.shape, b.shape)
            score = 2.0 * agree + 1.5 * shape + 0.5 * (1.0 - abs(pos - self.gen.rel[c]))
            if agree == 1.0 and n:
                return c  # every operand is the counterpart's: the same op with other attributes
            same_dtypes = _dtypes(a.shape) == _dtypes(b.shape)
            ok = a.kind in _ALWAYS_PAIRED or agree >= 0.5 or (shape >= 0.6 and same_dtypes)
            if ok and score > best_score:
                best, best_score = c, score
        return best


_DTYPES = re.compile(
    r"(?<![A-Za-z0-9_])(?:bf16|tf32|f8E4M3FN|f8E5M2|f16|f32|f64|i1|i8|i16|i32|i64|token)(?![A-Za-z0-9_])"
)
#: kinds paired whenever both sides have one left (loops, terminators): their differences are the point
_ALWAYS_PAIRED = frozenset(
    {
        "continue",
        "yield",
        "return",
        "break",
        "for",
        "loop",
        "if",
        "reduce",
        "scan",
        "entry",
        "mmaf",
        "mmai",
        "load_view_tko",
        "store_view_tko",
        "load_ptr_tko",
        "store_ptr_tko",
        "atomic_cas_tko",
        "atomic_rmw_tko",
    }
)
_TOK = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+|[^\sA-Za-z0-9_]")


@functools.lru_cache(maxsize=65536)
def _tokens(shape: str) -> frozenset[str]:
    return frozenset(_TOK.findall(shape))


@functools.lru_cache(maxsize=65536)
def _dtypes(shape: str) -> tuple[str, ...]:
    return tuple(_DTYPES.findall(shape))


def _similarity(x: str, y: str) -> float:
    """Jaccard similarity of the token sets of two op shapes."""
    sx, sy = _tokens(x), _tokens(y)
    if not sx and not sy:
        return 1.0
    return len(sx & sy) / len(sx | sy)


# ----------------------------------------------------------------------------- rendering
class _Renderer:
    def __init__(self, m: _Matcher) -> None:
        self.m = m
        self.display: dict[int, str] = {}
        #: (kind, left line, right line, left text, right text, op kind); SRow objects are built once, ranked
        self.rows: list[tuple[RowKind, int | None, int | None, str, str, str]] = []
        self.cache: dict[tuple[str, str], str] = {}  # (side tag, value) → display name (ties are final here)

    def dname(self, side: _Side, v: str) -> str:
        got = self.cache.get((side.tag, v))
        if got is None:
            got = self.cache[(side.tag, v)] = self._dname(side, v)
        return got

    def _dname(self, side: _Side, v: str) -> str:
        base, hash_idx = v, ""
        if "#" in v:
            base, hash_idx = v.split("#", 1)
            if hash_idx != "0":
                v = base + "#0"
                hash_idx = "#" + hash_idx
            else:
                hash_idx = ""
        key = self.m.find(side.name(v))
        got = self.display.get(key)
        if got is None:
            got = f"%v{len(self.display)}"
            self.display[key] = got
        return got + hash_idx

    def op_text(self, side: _Side, op: Op) -> str:
        """The op printed with the shared value names (from its normalized template)."""
        parts = op.fill_parts
        if not parts:
            return self.text(side, op.text, op)
        out = [parts[0]]
        for v, p in zip(op.fill_values, parts[1:], strict=True):
            out.append(self.dname(side, v))
            out.append(p)
        return "".join(out)

    def text(self, side: _Side, s: str, op: Op | None = None) -> str:
        def sub(mt: re.Match[str]) -> str:
            tok = mt.group(0)
            count = ""
            if ":" in tok:
                tok, count = tok.split(":", 1)
                count = ":" + count
                return self.dname(side, tok + "#0") + count
            return self.dname(side, tok)

        out = _VALUE.sub(sub, s)
        if op is not None and op.kind == "entry":
            out = re.sub(r"\bentry\s+@[^\s(),:<>{}]+", "entry @ENTRY", out)
        return normalize_shape(out)

    def emit(
        self,
        kind: RowKind,
        lop: Op | None,
        rop: Op | None,
        lno: int | None,
        rno: int | None,
        ltext: str,
        rtext: str,
        op: str,
    ) -> None:
        if kind == "replace" and ltext == rtext:
            kind = "equal"
        self.rows.append((kind, lno, rno, ltext, rtext, op))

    def one_sided(self, side: _Side, i: int, kind: RowKind) -> None:
        op = side.g.ops[i]
        t = self.op_text(side, op) if op.parsed else normalize_shape(op.text)
        left = kind == "delete"
        self.emit(
            kind,
            None,
            None,
            op.line if left else None,
            None if left else op.line,
            t if left else "",
            "" if left else t,
            op.kind,
        )
        for k, region in enumerate(op.regions):
            no, s = op.region_lines[k]
            if no != op.line:
                rt = self.text(side, s)
                self.emit(
                    kind,
                    None,
                    None,
                    no if left else None,
                    None if left else no,
                    rt if left else "",
                    "" if left else rt,
                    op.kind,
                )
            for c in region:
                self.one_sided(side, c, kind)
        if op.regions and len(op.region_lines) > len(op.regions):
            no, s = op.region_lines[-1]
            self.emit(
                kind,
                None,
                None,
                no if left else None,
                None if left else no,
                s if left else "",
                "" if left else s,
                op.kind,
            )

    def region(self, A: list[int], B: list[int]) -> None:
        m = self.m
        # unmatched generated ops follow the matched generated op before them (or the region start)
        after: dict[int | None, list[int]] = {}
        last: int | None = None
        for b in B:
            if b in m.rpair:
                last = b
            else:
                after.setdefault(last, []).append(b)
        for b in after.get(None, []):
            self.one_sided(m.gen, b, "insert")
        for a in A:
            pb = m.pair.get(a)
            if pb is None:
                self.one_sided(m.ref, a, "delete")
                continue
            self.pair_rows(a, pb)
            for extra in after.get(pb, []):
                self.one_sided(m.gen, extra, "insert")

    def pair_rows(self, a: int, b: int) -> None:
        m = self.m
        ra, gb = m.ref.g.ops[a], m.gen.g.ops[b]
        self.emit(
            "replace",
            ra,
            gb,
            ra.line,
            gb.line,
            self.op_text(m.ref, ra) if ra.parsed else normalize_shape(ra.text),
            self.op_text(m.gen, gb) if gb.parsed else normalize_shape(gb.text),
            ra.kind,
        )
        n = max(len(ra.regions), len(gb.regions))
        for k in range(n):
            la = ra.region_lines[k] if k < len(ra.regions) else None
            lb = gb.region_lines[k] if k < len(gb.regions) else None
            la_own = la is not None and la[0] != ra.line
            lb_own = lb is not None and lb[0] != gb.line
            if la_own or lb_own:
                self.emit(
                    "replace" if la_own and lb_own else ("delete" if la_own else "insert"),
                    None,
                    None,
                    la[0] if la_own and la else None,
                    lb[0] if lb_own and lb else None,
                    self.text(m.ref, la[1]) if la_own and la else "",
                    self.text(m.gen, lb[1]) if lb_own and lb else "",
                    ra.kind,
                )
            if k < len(ra.regions) and k < len(gb.regions):
                self.region(ra.regions[k], gb.regions[k])
            elif k < len(ra.regions):
                for c in ra.regions[k]:
                    self.one_sided(m.ref, c, "delete")
            else:
                for c in gb.regions[k]:
                    self.one_sided(m.gen, c, "insert")
        ca = ra.region_lines[-1] if ra.regions and len(ra.region_lines) > len(ra.regions) else None
        cb = gb.region_lines[-1] if gb.regions and len(gb.region_lines) > len(gb.regions) else None
        if ca or cb:
            kind: RowKind = "replace" if ca and cb else ("delete" if ca else "insert")
            self.emit(
                kind,
                None,
                None,
                ca[0] if ca else None,
                cb[0] if cb else None,
                ca[1] if ca else "",
                cb[1] if cb else "",
                ra.kind,
            )


# ----------------------------------------------------------------------------- categories
def _shapes(s: str) -> set[str]:
    return {a or b for a, b in _TILE_SHAPE.findall(s)} | set(_NUM_CTA.findall(s))


def categorize(row: SRow, dead: bool = False) -> tuple[Category, str | None]:
    """Perf-relevance category of one changed row and the audit check it belongs to."""
    return categorize_row(row.kind, row.op, row.left, row.right, dead)


def categorize_row(
    kind: RowKind, op: str, left: str, right: str, dead: bool = False
) -> tuple[Category, str | None]:
    """:func:`categorize` of a row given by its fields."""
    if op == "?":
        return UNPARSED, None
    if kind == "replace":
        if _shapes(left) != _shapes(right):
            if op == "entry" and set(_NUM_CTA.findall(left)) != set(_NUM_CTA.findall(right)):
                return TILE, "num_cta"
            if op in ("mmaf", "mmai"):
                return TILE, "mma_acc"
            return TILE, ("layout" if op == "make_partition_view" else "tile_shapes")
        if op in ("mmaf", "mmai"):
            return MMA, "mma_acc"
        if op in _LOOP_OPS:
            return LOOP, "for" if op == "for" else None
        if op in _MEM_OPS:
            return MEMORY, op
        if op in _VIEW_OPS:
            return VIEW, "layout"
        if _HINTS.findall(left) != _HINTS.findall(right):
            if set(_OCCUPANCY.findall(left)) != set(_OCCUPANCY.findall(right)):
                return HINTS, "occupancy"
            return HINTS, None
        if op == "assume":
            return COSMETIC, "assume_ptr" if "ptr<" in left + right else "assume_scalar"
        if op in _CAST_OPS:
            return EXTRA, op
        return OTHER, op if op in _AUDIT_OPS else None
    # an op on one side only
    if op in ("mmaf", "mmai"):
        return MMA, "mma"
    if op in _LOOP_OPS:
        return LOOP, "for" if op == "for" else None
    if op in _MEM_OPS:
        return EXTRA, op
    if op in _VIEW_OPS:
        return VIEW, "layout"
    if op in _CAST_OPS:
        return EXTRA, op
    if op in _PURE_COSMETIC or dead:
        if op == "assume":
            return COSMETIC, "assume_ptr" if "ptr<" in left + right else "assume_scalar"
        return COSMETIC, None
    return OTHER, op if op in _AUDIT_OPS else None


def _summary(rows: list[tuple[RowKind, int | None, int | None, str, str, str]], cat: Category) -> str:
    kind, op = rows[0][0], rows[0][5]
    more = f" (+{len(rows) - 1} row(s))" if len(rows) > 1 else ""
    if kind == "replace":
        return f"{cat.name}: {op}{more}"
    side = "only in reference" if kind == "delete" else "only in generated"
    return f"{cat.name}: {op} {side}{more}"


def _truncated(g: IRGraph) -> bool:
    return any(u.reason.startswith("region never closed") for u in g.unparsed)


def _dead_lines(side: _Side) -> set[int]:
    """Source lines of pure ops none of whose results is used."""
    out: set[int] = set()
    for op in side.g.ops:
        if (
            op.results
            and op.kind not in _MEM_OPS
            and not any(side.uses.get(r, 0) for r in op.results)
            and not any(side.uses.get(r.split("#")[0], 0) for r in op.results)
        ):
            out.add(op.line)
    return out


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause CPython's cyclic garbage collector while the graphs and rows are built.

    A 10k-line pair allocates ~100k small objects that hold no reference cycles; the collector
    would otherwise rescan the growing heap many times over (~30 % of the build, measured with
    ``bench/ir_structdiff.py``). Reference counting still frees everything as usual."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def structural_diff(ref_text: str, gen_text: str) -> StructDiff:
    """Parse (one text diffed against itself: once), match, render and rank (see module docstring)."""
    with _collector_paused():
        rg = parse_ir(ref_text)
        gg = rg if gen_text == ref_text else parse_ir(gen_text)
        return diff_graphs(rg, gg)


def diff_graphs(rg: IRGraph, gg: IRGraph) -> StructDiff:
    ref, gen = _Side(rg, "ref"), _Side(gg, "gen")
    m = _Matcher(ref, gen)
    m.match_region(rg.top, gg.top)
    r = _Renderer(m)
    r.region(rg.top, gg.top)
    dead_l, dead_r = _dead_lines(ref), _dead_lines(gen)
    raw = r.rows
    # a truncated side: the other side's one-sided rows past its last matched op compare against text
    # that is not there, so they are shown as unparsed text, never as differences of the programs
    big = 1 << 62
    past_l = max((rg.ops[a].line for a in m.pair), default=0) if _truncated(gg) else big
    past_r = max((gg.ops[b].line for b in m.rpair), default=0) if _truncated(rg) else big
    cats: list[tuple[Category, str | None] | None] = []
    n_past = 0
    for kind, lno, rno, left, right, op in raw:
        if kind == "equal":
            cats.append(None)
        elif (kind == "delete" and lno is not None and lno > past_l) or (
            kind == "insert" and rno is not None and rno > past_r
        ):
            cats.append((UNPARSED, None))
            n_past += 1
        else:
            dead = (lno in dead_l) if kind == "delete" else (rno in dead_r)
            cats.append(categorize_row(kind, op, left, right, dead))
    # hunks: runs of changed rows of one category; then rank order
    spans: list[tuple[int, int, Category, str | None]] = []
    i, n_rows = 0, len(raw)
    while i < n_rows:
        c = cats[i]
        if c is None:
            i += 1
            continue
        j = i
        checks: list[str] = []
        while j < n_rows:
            cj = cats[j]
            if cj is None or cj[0] != c[0]:
                break
            if cj[1] and cj[1] not in checks:
                checks.append(cj[1])
            j += 1
        spans.append((i, j, c[0], checks[0] if checks else None))
        i = j
    spans.sort(key=lambda s: (s[2].rank, s[0]))
    hunk_of = [-1] * n_rows
    hunks: list[Hunk] = []
    for h_idx, (s0, e0, cat, chk) in enumerate(spans):
        hunks.append(Hunk(s0, e0, cat, chk, _summary(raw[s0:e0], cat)))
        hunk_of[s0:e0] = [h_idx] * (e0 - s0)
    rows: list[SRow] = []
    budget = MAX_EAGER_SPANS
    for k, (kind, lno, rno, left, right, op) in enumerate(raw):
        c = cats[k]
        if c is None:
            rows.append(SRow(kind, lno, rno, left, right, op=op))
            continue
        ls: tuple[Span, ...] = ()
        rs: tuple[Span, ...] = ()
        if kind == "replace" and budget > 0:
            budget -= 1
            ls, rs = intraline_spans(left, right)
        elif kind == "delete":
            ls = ((0, len(left)),)
        elif kind == "insert":
            rs = ((0, len(right)),)
        rows.append(SRow(kind, lno, rno, left, right, ls, rs, op, c[0], hunk_of[k]))
    fallback = [Fallback("reference", u.line, u.text, u.reason) for u in rg.unparsed]
    fallback += [Fallback("generated", u.line, u.text, u.reason) for u in gg.unparsed]
    notes: list[str] = []
    rk, gk = [kernel_base(e) for e in rg.entries], [kernel_base(e) for e in gg.entries]
    same = rk == gk
    if not same:
        notes.append(
            f"entry names differ (reference: {', '.join(rk) or 'none'}; generated: {', '.join(gk) or 'none'})"
        )
    core = [r for r in rows if r.left_no is not None and r.op not in _PURE_COSMETIC and r.op != "?"]
    same_rows = sum(1 for r in core if r.kind == "equal")
    if core and same_rows < 0.25 * len(core) and not _same_family(rk, gk):
        notes.append(
            f"only {same_rows} of {len(core)} reference rows (constants and assumes aside) are unchanged: "
            "a dump of another kernel?"
        )
    if n_past:
        short, other, at = (
            ("generated", "reference", past_l) if past_l != big else ("reference", "generated", past_r)
        )
        notes.append(
            f"the {short} text is truncated: {n_past} {other} row(s) past line {at} have nothing to "
            "compare with and are shown as text (unparsed), not as differences"
        )
    if fallback:
        for side in ("reference", "generated"):
            where = [f for f in fallback if f.side == side]
            if where:
                reasons = sorted({f.reason for f in where})
                notes.append(
                    f"text diff (not parsed) for {side} line(s) {_ranges(sorted({f.line for f in where}))}: "
                    + "; ".join(reasons[:3])
                    + ("…" if len(reasons) > 3 else "")
                )
    return StructDiff(rows, hunks, fallback, notes, same)


def changed_row_count(rows: Iterable[SRow]) -> int:
    return sum(1 for r in rows if r.kind != "equal")
