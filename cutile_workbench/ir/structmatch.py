"""The structural Tile IR diff's matcher (moved out of ``ir/structdiff.py``): which op of the
reference is which op of the generated side.

Contract (the matching rules of :mod:`cutile_workbench.ir.structdiff`'s docstring): :class:`Side` names
every value of one graph by what defines it (a Merkle name: op kind, normalized attributes/types,
the names of its operands), never by its SSA spelling. :class:`Matcher` pairs the ops of two sides
region by region (identical names first, then the nearest op of the kind whose operands are its
own, else the best of :data:`MAX_CANDIDATES` by dataflow), making each match's results one value on
both sides (:meth:`Matcher.find`). Pure; no I/O; never raises on odd text; linear in the ops.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections import deque

from cutile_workbench.ir.graph import MEMORY_OPS, IRGraph, Op

#: fuzzy candidates looked at per op (closest by relative position); keeps 10k-line pairs linear
MAX_CANDIDATES = 24


class Side:
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


class Matcher:
    def __init__(self, ref: Side, gen: Side) -> None:
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

    def csig(self, side: Side, op: Op) -> int:
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
_ALWAYS_PAIRED = (
    frozenset(
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
        }
    )
    | MEMORY_OPS
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
