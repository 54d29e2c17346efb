"""The structural Tile IR diff's renderer (moved out of ``ir/structdiff.py``): matched ops as rows.

Contract: :class:`Renderer` walks the region pairs a :class:`~cutile_workbench.ir.structmatch.Matcher`
matched and emits the side-by-side rows in reference order (unmatched generated ops right after the
generated op they follow), both sides printed with one shared value naming (``%v0``, ``%v1``… in
order of appearance), so an ``equal`` row is textually identical. Its rows are plain tuples
``(kind, left line, right line, left text, right text, op kind)``; ranking them into hunks is
:mod:`cutile_workbench.ir.structdiff`'s. Pure; no I/O.
"""

from __future__ import annotations

import re

from cutile_workbench.ir.diffmodel import RowKind
from cutile_workbench.ir.graph import Op, normalize_shape
from cutile_workbench.ir.structmatch import Matcher, Side

_VALUE = re.compile(r"%[A-Za-z0-9_$.]+(?:#\d+)?(?::\d+)?")


class Renderer:
    def __init__(self, m: Matcher) -> None:
        self.m = m
        self.display: dict[int, str] = {}
        #: (kind, left line, right line, left text, right text, op kind); SRow objects are built once, ranked
        self.rows: list[tuple[RowKind, int | None, int | None, str, str, str]] = []
        self.cache: dict[tuple[str, str], str] = {}  # (side tag, value) → display name (ties are final here)

    def dname(self, side: Side, v: str) -> str:
        got = self.cache.get((side.tag, v))
        if got is None:
            got = self.cache[(side.tag, v)] = self._dname(side, v)
        return got

    def _dname(self, side: Side, v: str) -> str:
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

    def op_text(self, side: Side, op: Op) -> str:
        """The op printed with the shared value names (from its normalized template)."""
        parts = op.fill_parts
        if not parts:
            return self.text(side, op.text, op)
        out = [parts[0]]
        for v, p in zip(op.fill_values, parts[1:], strict=True):
            out.append(self.dname(side, v))
            out.append(p)
        return "".join(out)

    def text(self, side: Side, s: str, op: Op | None = None) -> str:
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

    def one_sided(self, side: Side, i: int, kind: RowKind) -> None:
        op = side.g.ops[i]
        t = self.op_text(side, op) if op.parsed else normalize_shape(op.text)
        left = kind == "delete"

        def row(no: int, text: str) -> None:  # a line on one side only: the reference's for a delete
            self.emit(
                kind,
                None,
                None,
                no if left else None,
                None if left else no,
                text if left else "",
                "" if left else text,
                op.kind,
            )

        row(op.line, t)
        for k, region in enumerate(op.regions):
            no, s = op.region_lines[k]
            if no != op.line:
                row(no, self.text(side, s))
            for c in region:
                self.one_sided(side, c, kind)
        if op.regions and len(op.region_lines) > len(op.regions):
            no, s = op.region_lines[-1]
            row(no, s)

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
