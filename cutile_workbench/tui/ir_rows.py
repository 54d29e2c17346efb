"""Turn a reference/generated IR pair into the IR Diff screen's rows and audit items.

Contract: :func:`from_ir_diff` takes a pair the IR service loaded, diffed and audited
(:mod:`cutile_workbench.services.ir_diff`); :func:`build_ir_pair` does the same from two raw texts
(tests, synthetic data). Rows are the *structural* diff's rows (``cutile_workbench.ir.structdiff``: ops
matched by structure and dataflow, shared value names, source line numbers), with their hunk
numbers in rank order (perf relevance), their category and whether they are cosmetic. The audit is
``cutile_workbench.ir.audit.audit_texts`` on the raw texts (``diff_ir.sh`` parity); each audit item names
the first hunk (in rank order) that belongs to it and is snapped to the nearest displayed line at
or after its first line.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from cutile_workbench.services.ir_diff import (
    IRAudit,
    IRDiff,
    StructDiff,
    audit_texts,
    get_lexer,
    structural_diff,
)
from cutile_workbench.tui.data import IRPair
from cutile_workbench.tui.widgets.audit_panel import AuditItem
from cutile_workbench.tui.widgets.ir_diff_view import DiffLine


def _snap(line: int | None, shown: Sequence[int]) -> int | None:
    """First displayed original line ≥ ``line`` (a dropped ``loc`` line maps to the next op)."""
    if line is None or not shown:
        return None
    i = bisect_left(shown, line)
    return shown[min(i, len(shown) - 1)]


def build_ir_pair(
    name: str, ref: str, gen: str, *, ref_label: str = "reference", gen_label: str = "generated"
) -> IRPair:
    """Rows + audit for one pair of texts."""
    audit = audit_texts(ref, gen, ref_name=ref_label, gen_name=gen_label)
    return screen_pair(name, ref_label, gen_label, structural_diff(ref, gen), audit)


def from_ir_diff(ir: IRDiff) -> IRPair:
    """The screen's pair for one :class:`~cutile_workbench.services.ir_diff.IRDiff` (labels: file names)."""
    ref, gen = ir.pair.reference, ir.pair.generated
    return screen_pair(ir.label, ref.path.name, gen.path.name, ir.struct, ir.audit, launch=ir.launch_evidence)


def screen_pair(
    name: str, ref_label: str, gen_label: str, sd: StructDiff, audit: IRAudit, launch: Sequence[str] = ()
) -> IRPair:
    """The structural rows as display rows; audit rows linked to their hunks and snapped to lines."""
    rows = [
        DiffLine(
            tag=r.kind,
            left_no=r.left_no,
            left=r.left,
            right_no=r.right_no,
            right=r.right,
            left_spans=tuple(r.left_spans),
            right_spans=tuple(r.right_spans),
            hunk=r.hunk,
            cosmetic=bool(r.category is not None and r.category.cosmetic),
            category=r.category.name if r.category is not None else "",
        )
        for r in sd.rows
    ]
    checks = {row.check for row in audit.rows}
    hunks = tuple(
        (h.category.name, h.audit_check if h.audit_check in checks else None, h.cosmetic) for h in sd.hunks
    )
    first_hunk: dict[str, int] = {}
    for k, (_cat, check, _cos) in enumerate(hunks):
        if check is not None:
            first_hunk.setdefault(check, k)
    lsrc = sorted(r.left_no for r in sd.rows if r.left_no is not None)
    rsrc = sorted(r.right_no for r in sd.rows if r.right_no is not None)
    items = [
        AuditItem(
            severity=r.severity.lower(),
            attribute=r.check,
            reference=r.ref_value,
            generated=r.gen_value,
            ref_line=_snap(r.ref_lines[0] if r.ref_lines else None, lsrc),
            gen_line=_snap(r.gen_lines[0] if r.gen_lines else None, rsrc),
            note=r.message,
            hunk=first_hunk.get(r.check),
        )
        for r in audit.rows
    ]
    return IRPair(
        name=name,
        ref_label=ref_label,
        gen_label=gen_label,
        rows=tuple(rows),
        audit=tuple(items),
        lexer=get_lexer(),
        verdict=audit.verdict,
        structure=sd.verdict,
        structure_notes=tuple(sd.notes),
        hunks=hunks,
        launch=tuple(launch),
    )
