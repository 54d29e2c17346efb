"""Turn a reference/generated IR pair into the IR Diff screen's rows and audit items.

Contract: :func:`build_ir_pair` takes the two raw texts (already read by the loader). Rows come
from ``workbench.ir.diffmodel.diff_lines`` over the *canonical* lines
(``workbench.ir.canon.canonicalize``: SSA renaming, loc stripping), but are numbered with each
canonical line's *original* line number, so they match the editor, ``diff_ir.sh`` and the audit.
The audit is ``workbench.ir.audit.audit_texts`` on the raw texts (``diff_ir.sh`` parity); each
audit line number is mapped to the nearest displayed line at or after it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from widgets.audit_panel import AuditItem
from widgets.ir_diff_view import DiffLine
from workbench.ir.audit import audit_texts
from workbench.ir.canon import CanonIR, canonicalize
from workbench.ir.diffmodel import diff_lines
from workbench.ir.lexer import get_lexer
from workbench.tui.data import IRPair


def _snap(line: int | None, shown: Sequence[int]) -> int | None:
    """First displayed original line ≥ ``line`` (a dropped ``loc`` line maps to the next op)."""
    if line is None or not shown:
        return None
    i = bisect_left(shown, line)
    return shown[min(i, len(shown) - 1)]


def build_ir_pair(name: str, ref: str, gen: str, *, ref_label: str = "reference",
                  gen_label: str = "generated", ref_canon: CanonIR | None = None,
                  gen_canon: CanonIR | None = None) -> IRPair:
    """Rows + audit for one pair; pass the loader's ``CanonIR`` objects to skip re-canonicalizing."""
    cref = ref_canon if ref_canon is not None else canonicalize(ref)
    cgen = gen_canon if gen_canon is not None else canonicalize(gen)
    sbs = diff_lines(cref.lines, cgen.lines)
    lsrc, rsrc = cref.source_lines, cgen.source_lines
    rows = [
        DiffLine(
            tag=r.kind,
            left_no=lsrc[r.left_no - 1] if r.left_no is not None else None,
            left=r.left,
            right_no=rsrc[r.right_no - 1] if r.right_no is not None else None,
            right=r.right,
            left_spans=tuple(r.left_spans),
            right_spans=tuple(r.right_spans),
        )
        for r in sbs.rows
    ]
    audit = audit_texts(ref, gen, ref_name=ref_label, gen_name=gen_label)
    items = [
        AuditItem(
            severity=r.severity.lower(),
            attribute=r.check,
            reference=r.ref_value,
            generated=r.gen_value,
            ref_line=_snap(r.ref_lines[0] if r.ref_lines else None, lsrc),
            gen_line=_snap(r.gen_lines[0] if r.gen_lines else None, rsrc),
            note=r.message,
        )
        for r in audit.rows
    ]
    return IRPair(name=name, ref_label=ref_label, gen_label=gen_label, rows=tuple(rows),
                  audit=tuple(items), lexer=get_lexer(), verdict=audit.verdict)
