"""Side-by-side diff model of two canonical IR texts (difflib, with quadratic-case guards).

Contract:
- :func:`diff_lines` returns a :class:`SideBySide`: rows of kind ``equal`` / ``replace`` /
  ``insert`` / ``delete`` with 1-based line numbers on each side (``None`` on the absent side),
  intraline change spans (token level) for replaced pairs, hunk start indices with
  :meth:`SideBySide.next_hunk` / :meth:`SideBySide.prev_hunk`, and :meth:`SideBySide.folded`
  (unchanged runs longer than ``2*context`` collapse to one :class:`Fold`).
- Guards, so a 10k-line pair stays well under 0.3 s and hostile input stays bounded:
  common prefix/suffix are trimmed first; the middle is split on *anchors* (lines unique on both
  sides, matched in order, patience-diff style) so difflib only sees the small gaps between them;
  a gap whose size product exceeds :data:`MAX_GAP_CELLS` is emitted as a plain replace block;
  intraline diffs run only for lines of at most :data:`MAX_INTRALINE_CHARS` characters (longer:
  the whole line is the change span); the first :data:`MAX_INTRALINE_PAIRS` replaced pairs get
  spans eagerly, the rest on demand through :meth:`SideBySide.spans` (what a viewer shows).
- ``autojunk`` is off everywhere: IR repeats lines (``}``, ``return``) and difflib's popularity
  heuristic would mis-align them.
Pure functions over ``Sequence[str]``; no I/O, no Textual.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Literal

RowKind = Literal["equal", "replace", "insert", "delete"]

MAX_GAP_CELLS = 4_000_000  # len(a)*len(b) of one gap handed to difflib
MAX_INTRALINE_CHARS = 2_000
MAX_INTRALINE_PAIRS = 1_000  # computed eagerly; later pairs on demand through SideBySide.spans()

Span = tuple[int, int]  # [start, end) character offsets in the line

_TOKEN = re.compile(r"%[A-Za-z0-9_$.]+|@[A-Za-z0-9_$.]+|[A-Za-z0-9_.]+|\s+|.")


@dataclass(frozen=True)
class DiffRow:
    kind: RowKind
    left_no: int | None  # 1-based canonical line number on the left (reference)
    right_no: int | None
    left: str = ""
    right: str = ""
    left_spans: tuple[Span, ...] = ()
    right_spans: tuple[Span, ...] = ()


@dataclass(frozen=True)
class Fold:
    """A run of ``count`` equal rows hidden by :meth:`SideBySide.folded` (rows[start:start+count])."""

    start: int
    count: int


@dataclass
class SideBySide:
    rows: list[DiffRow]
    hunks: list[int] = field(default_factory=list)  # row index where each hunk starts
    notes: list[str] = field(default_factory=list)  # guards that kicked in
    _lazy: dict[int, tuple[tuple[Span, ...], tuple[Span, ...]]] = field(default_factory=dict, repr=False)

    def spans(self, row: int) -> tuple[tuple[Span, ...], tuple[Span, ...]]:
        """Intraline spans of a row (computed on first use for pairs past the eager budget)."""
        r = self.rows[row]
        if r.kind != "replace" or r.left_spans or r.right_spans:
            return r.left_spans, r.right_spans
        if row not in self._lazy:
            self._lazy[row] = intraline_spans(r.left, r.right)
        return self._lazy[row]

    @property
    def identical(self) -> bool:
        return not self.hunks

    def stats(self) -> dict[str, int]:
        out = {"equal": 0, "replace": 0, "insert": 0, "delete": 0}
        for r in self.rows:
            out[r.kind] += 1
        return out

    def next_hunk(self, row: int) -> int | None:
        """First hunk start strictly after ``row`` (None when there is none)."""
        i = bisect.bisect_right(self.hunks, row)
        return self.hunks[i] if i < len(self.hunks) else None

    def prev_hunk(self, row: int) -> int | None:
        """Last hunk start strictly before ``row``."""
        i = bisect.bisect_left(self.hunks, row)
        return self.hunks[i - 1] if i > 0 else None

    def row_of_left(self, line_no: int) -> int | None:
        return next((i for i, r in enumerate(self.rows) if r.left_no == line_no), None)

    def row_of_right(self, line_no: int) -> int | None:
        return next((i for i, r in enumerate(self.rows) if r.right_no == line_no), None)

    def folded(self, context: int = 3) -> list[DiffRow | Fold]:
        """Rows with equal runs longer than ``2*context`` (+1) folded, keeping context around hunks."""
        out: list[DiffRow | Fold] = []
        i, n = 0, len(self.rows)
        while i < n:
            if self.rows[i].kind != "equal":
                out.append(self.rows[i])
                i += 1
                continue
            j = i
            while j < n and self.rows[j].kind == "equal":
                j += 1
            head = 0 if i == 0 else context
            tail = 0 if j == n else context
            if (j - i) > head + tail + 1:
                out.extend(self.rows[i : i + head])
                out.append(Fold(i + head, (j - i) - head - tail))
                out.extend(self.rows[j - tail : j])
            else:
                out.extend(self.rows[i:j])
            i = j
        return out


def intraline_spans(a: str, b: str) -> tuple[tuple[Span, ...], tuple[Span, ...]]:
    """Token-level changed spans of a replaced pair (whole line for very long lines)."""
    if len(a) > MAX_INTRALINE_CHARS or len(b) > MAX_INTRALINE_CHARS:
        return ((0, len(a)),) if a else (), ((0, len(b)),) if b else ()
    ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
    oa = _offsets(ta)
    ob = _offsets(tb)
    # trim common token prefix/suffix: IR edits are usually one or two tokens in a long line
    pre = 0
    while pre < len(ta) and pre < len(tb) and ta[pre] == tb[pre]:
        pre += 1
    suf = 0
    while suf < len(ta) - pre and suf < len(tb) - pre and ta[-1 - suf] == tb[-1 - suf]:
        suf += 1
    ma, mb = ta[pre : len(ta) - suf], tb[pre : len(tb) - suf]
    ls: list[Span] = []
    rs: list[Span] = []
    if not ma or not mb or (len(ma) == 1 and len(mb) == 1):
        if ma:
            ls.append((oa[pre], oa[len(ta) - suf]))
        if mb:
            rs.append((ob[pre], ob[len(tb) - suf]))
        return tuple(ls), tuple(rs)
    sm = SequenceMatcher(None, ma, mb, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        i1, i2, j1, j2 = i1 + pre, i2 + pre, j1 + pre, j2 + pre
        if tag == "equal":
            continue
        if i2 > i1:
            _add_span(ls, oa[i1], oa[i2])
        if j2 > j1:
            _add_span(rs, ob[j1], ob[j2])
    return tuple(ls), tuple(rs)


def _offsets(tokens: list[str]) -> list[int]:
    out = [0]
    for t in tokens:
        out.append(out[-1] + len(t))
    return out


def _add_span(spans: list[Span], start: int, end: int) -> None:
    if spans and spans[-1][1] == start:
        spans[-1] = (spans[-1][0], end)
    else:
        spans.append((start, end))


def _anchors(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Lines unique on both sides, kept in increasing order on both (longest increasing run)."""
    ca: dict[str, int] = {}
    cb: dict[str, int] = {}
    for s in a:
        ca[s] = ca.get(s, 0) + 1
    for s in b:
        cb[s] = cb.get(s, 0) + 1
    pos_b = {s: j for j, s in enumerate(b) if cb[s] == 1 and ca.get(s) == 1}
    cand = [(i, pos_b[s]) for i, s in enumerate(a) if s in pos_b]
    # longest increasing subsequence on the b index (patience sorting), O(k log k)
    tails: list[int] = []
    tails_idx: list[int] = []
    prev: list[int] = [-1] * len(cand)
    for k, (_, j) in enumerate(cand):
        p = bisect.bisect_left(tails, j)
        if p == len(tails):
            tails.append(j)
            tails_idx.append(k)
        else:
            tails[p] = j
            tails_idx[p] = k
        prev[k] = tails_idx[p - 1] if p > 0 else -1
    out: list[tuple[int, int]] = []
    k = tails_idx[-1] if tails_idx else -1
    while k >= 0:
        out.append(cand[k])
        k = prev[k]
    out.reverse()
    return out


def _opcodes(a: Sequence[str], b: Sequence[str], notes: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib-style opcodes for a and b, computed gap by gap between anchors."""
    n, m = len(a), len(b)
    lo = 0
    while lo < n and lo < m and a[lo] == b[lo]:
        lo += 1
    hi = 0
    while hi < n - lo and hi < m - lo and a[n - 1 - hi] == b[m - 1 - hi]:
        hi += 1
    ops: list[tuple[str, int, int, int, int]] = []
    if lo:
        ops.append(("equal", 0, lo, 0, lo))
    mid_a, mid_b = a[lo : n - hi], b[lo : m - hi]
    points = [(-1, -1), *_anchors(mid_a, mid_b), (len(mid_a), len(mid_b))]
    for (pi, pj), (qi, qj) in itertools.pairwise(points):
        ga1, ga2, gb1, gb2 = pi + 1, qi, pj + 1, qj
        if ga2 > ga1 or gb2 > gb1:
            if (ga2 - ga1) * (gb2 - gb1) > MAX_GAP_CELLS:
                notes.append(
                    f"gap of {ga2 - ga1}x{gb2 - gb1} lines shown as one replace block (too large to align)"
                )
                ops.append(("replace", lo + ga1, lo + ga2, lo + gb1, lo + gb2))
            elif ga2 == ga1:
                ops.append(("insert", lo + ga1, lo + ga1, lo + gb1, lo + gb2))
            elif gb2 == gb1:
                ops.append(("delete", lo + ga1, lo + ga2, lo + gb1, lo + gb1))
            else:
                sm = SequenceMatcher(None, mid_a[ga1:ga2], mid_b[gb1:gb2], autojunk=False)
                for tag, i1, i2, j1, j2 in sm.get_opcodes():
                    ops.append((tag, lo + ga1 + i1, lo + ga1 + i2, lo + gb1 + j1, lo + gb1 + j2))
        if qi < len(mid_a):
            ops.append(("equal", lo + qi, lo + qi + 1, lo + qj, lo + qj + 1))
    if hi:
        ops.append(("equal", n - hi, n, m - hi, m))
    # merge adjacent equal runs so folding sees one run
    merged: list[tuple[str, int, int, int, int]] = []
    for op in ops:
        if merged and merged[-1][0] == op[0] == "equal" and merged[-1][2] == op[1] and merged[-1][4] == op[3]:
            t, i1, _, j1, _ = merged[-1]
            merged[-1] = (t, i1, op[2], j1, op[4])
        else:
            merged.append(op)
    return merged


def diff_lines(left: Sequence[str], right: Sequence[str]) -> SideBySide:
    """Aligned side-by-side rows for two line sequences (see module docstring)."""
    notes: list[str] = []
    rows: list[DiffRow] = []
    hunks: list[int] = []
    intraline_budget = MAX_INTRALINE_PAIRS
    for tag, i1, i2, j1, j2 in _opcodes(left, right, notes):
        if tag != "equal" and (not rows or rows[-1].kind == "equal"):
            hunks.append(len(rows))
        if tag == "equal":
            for k in range(i2 - i1):
                rows.append(DiffRow("equal", i1 + k + 1, j1 + k + 1, left[i1 + k], right[j1 + k]))
        elif tag == "delete":
            rows += [DiffRow("delete", i + 1, None, left[i], "") for i in range(i1, i2)]
        elif tag == "insert":
            rows += [DiffRow("insert", None, j + 1, "", right[j]) for j in range(j1, j2)]
        else:
            pairs = min(i2 - i1, j2 - j1)
            for k in range(pairs):
                a, b = left[i1 + k], right[j1 + k]
                ls: tuple[Span, ...] = ()
                rs: tuple[Span, ...] = ()
                if intraline_budget > 0:
                    intraline_budget -= 1
                    ls, rs = intraline_spans(a, b)
                rows.append(DiffRow("replace", i1 + k + 1, j1 + k + 1, a, b, ls, rs))
            rows += [DiffRow("delete", i + 1, None, left[i], "") for i in range(i1 + pairs, i2)]
            rows += [DiffRow("insert", None, j + 1, "", right[j]) for j in range(j1 + pairs, j2)]
    return SideBySide(rows, hunks, notes)
