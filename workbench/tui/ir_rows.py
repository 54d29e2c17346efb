"""Turn a reference/generated IR pair into the IR Diff screen's rows and audit items.

Contract: :func:`from_ir_diff` takes a pair the IR service loaded, diffed and audited
(:mod:`workbench.services.ir_diff`); :func:`build_ir_pair` does the same from two raw texts
(tests, synthetic data). Rows come
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
from workbench.ir.audit import IRAudit, audit_texts
from workbench.ir.canon import CanonIR, canonicalize
from workbench.ir.diffmodel import SideBySide, diff_lines
from workbench.ir.lexer import get_lexer
from workbench.services.ir_diff import IRDiff
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
    """Rows + audit for one pair of texts; pass ``CanonIR`` objects to skip re-canonicalizing."""
    cref = ref_canon if ref_canon is not None else canonicalize(ref)
    cgen = gen_canon if gen_canon is not None else canonicalize(gen)
    audit = audit_texts(ref, gen, ref_name=ref_label, gen_name=gen_label)
    return screen_pair(name, ref_label, gen_label, cref, cgen, diff_lines(cref.lines, cgen.lines), audit)


def from_ir_diff(ir: IRDiff) -> IRPair:
    """The screen's pair for one :class:`~workbench.services.ir_diff.IRDiff` (labels: file names)."""
    ref, gen = ir.pair.reference, ir.pair.generated
    return screen_pair(ir.label, ref.path.name, gen.path.name, ref.canon, gen.canon, ir.diff, ir.audit)


def screen_pair(name: str, ref_label: str, gen_label: str, cref: CanonIR, cgen: CanonIR, sbs: SideBySide,
                audit: IRAudit) -> IRPair:
    """Number the canonical diff rows with original lines and snap the audit rows onto them."""
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
