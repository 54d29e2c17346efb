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
  else, among the :data:`~cutile_workbench.ir.structmatch.MAX_CANDIDATES` nearest of its kind, the one whose operands correspond
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
Pure; no I/O, no Textual; never raises on odd text. The matching is :mod:`cutile_workbench.ir.structmatch`'s,
the rows' text :mod:`cutile_workbench.ir.structrender`'s; this module holds the diff's types, the
categories and the ranking into hunks, and :func:`structural_diff`, the entry point.
"""

from __future__ import annotations

import contextlib
import difflib
import gc
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from cutile_workbench.ir.audit import ARITH_OPS, CRITICAL_OPS, INFO_OPS
from cutile_workbench.ir.diffmodel import RowKind, Span, intraline_spans
from cutile_workbench.ir.graph import MEMORY_OPS, IRGraph, normalize_shape, parse_ir
from cutile_workbench.ir.structmatch import Matcher, Side
from cutile_workbench.ir.structrender import Renderer

#: replaced rows whose intraline spans are computed eagerly; later ones on demand (:meth:`StructDiff.spans`)
MAX_EAGER_SPANS = 1_000


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
_MEM_OPS = MEMORY_OPS
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
#: op rows of the diff_ir.sh audit table (a hunk of one of these kinds names that row); ``mma``'s
#: row is named by the ``mmaf``/``mmai`` rules of :func:`categorize_row`
_AUDIT_OPS = frozenset(CRITICAL_OPS + ARITH_OPS + INFO_OPS) - {"mma"}
#: tile dimensions only (``tile<128x64xf16>`` → ``128x64x``, ``tile=(64x512)``): a dtype change is not a shape change
_TILE_SHAPE = re.compile(r"tile<((?:\d+x)+)[A-Za-z]|tile=\(([0-9x]+)\)")
_NUM_CTA = re.compile(r"num_cta_in_cga = \d+")
_OCCUPANCY = re.compile(r"occupancy = \d+")
_HINTS = re.compile(r"optimization_hints=<.*?\}>")
_TYPES_OF_MMA = re.compile(r":\s*(.*)$")
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


def _dead_lines(side: Side) -> set[int]:
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
    ref, gen = Side(rg, "ref"), Side(gg, "gen")
    m = Matcher(ref, gen)
    m.match_region(rg.top, gg.top)
    r = Renderer(m)
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
