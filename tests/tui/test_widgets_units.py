"""Widget logic that does not need a running app: row selection, folding, hunks, diffs, audit order."""

from __future__ import annotations

from dataclasses import replace

import tui_synthetic as syn

from cutile_workbench.model import Launch
from cutile_workbench.tui.widgets.audit_panel import AuditItem, ordered
from cutile_workbench.tui.widgets.ir_diff_view import DiffLine, fold_rows, number_hunks
from cutile_workbench.tui.widgets.launch_timeline import launch_details
from cutile_workbench.tui.widgets.ratio_table import is_slow, visible_rows
from cutile_workbench.tui.widgets.report_preview import unified_diff


def test_visible_rows_filter_sort_slow_variant() -> None:
    rows = syn.pinned_table().rows
    by_ratio = visible_rows(rows, sort_key="ratio")
    assert [r.ratio for r in by_ratio][-1] is None  # NA sorts last both ways
    assert visible_rows(rows, sort_key="ratio", reverse=True)[-1].ratio is None
    assert [round(r.ratio, 3) for r in by_ratio[:-1]] == [0.691, 0.979, 1.875, 3.417]
    assert all(is_slow(r) for r in visible_rows(rows, slow_only=True))
    assert len(visible_rows(rows, slow_only=True)) == 3
    assert [r.params for r in visible_rows(rows, filter_text="WRAPPER")] == [
        "wrapper_alloc-16384-2048-torch.bfloat16"
    ]
    assert len(visible_rows(rows, filter_text="investigate")) == 2  # matches the verdict too
    assert len(visible_rows(rows, variant="static_persistent")) == 4
    assert visible_rows(rows, sort_key="launches", reverse=True)[0].candidate_launches == 3


def _eq(n: int) -> list[DiffLine]:
    return [DiffLine("equal", i, f"l{i}", i, f"l{i}") for i in range(1, n + 1)]


def test_fold_keeps_context_and_counts_hidden() -> None:
    rows = [*_eq(20), DiffLine("replace", 21, "a", 21, "b"), *_eq(20)]
    rows = [replace(r, left_no=i + 1, right_no=i + 1) for i, r in enumerate(rows)]
    folded = fold_rows(rows, context=3)
    folds = [r for r in folded if r.tag == "fold"]
    assert [f.folded for f in folds] == [17, 17]
    assert len(folded) == 2 + 3 + 1 + 3
    assert [r.tag for r in fold_rows(_eq(7), context=3)] == ["equal"] * 7  # short runs never fold
    assert [(r.tag, r.folded) for r in fold_rows(_eq(100), context=3)] == [("fold", 100)]  # identical files


def test_number_hunks_counts_runs() -> None:
    rows = [
        *_eq(2),
        DiffLine("delete", 3, "x", None, ""),
        DiffLine("insert", None, "", 3, "y"),
        *_eq(2),
        DiffLine("replace", 6, "a", 6, "b"),
    ]
    numbered = number_hunks(rows)
    assert [r.hunk for r in numbered] == [-1, -1, 0, 0, -1, -1, 1]


def test_audit_order_critical_first_stable() -> None:
    items = [
        AuditItem("ok", "a", "1", "1"),
        AuditItem("critical", "mma", "2", "1"),
        AuditItem("warn", "occupancy", "2", "0"),
        AuditItem("CRITICAL", "for", "1", "2"),
    ]
    assert [i.attribute for i in ordered(items)] == ["mma", "for", "occupancy", "a"]


def test_unified_diff_new_changed_unchanged() -> None:
    assert unified_diff("r.md", None, "a\nb\n").startswith("new file: r.md (2 lines)\n+a\n+b")
    assert unified_diff("r.md", "a\n", "a\n") == "unchanged: r.md\n"
    d = unified_diff("r.md", "a\nb\n", "a\nc\n")
    assert "--- a/r.md" in d and "-b" in d and "+c" in d


def test_launch_details_fields() -> None:
    k = Launch(
        "kernel",
        "k",
        0,
        82_780,
        1,
        grid=(132, 1, 1),
        block=(256, 1, 1),
        registers_per_thread=255,
        static_smem=0,
        dynamic_smem=217_088,
    )
    text = launch_details(k)
    assert (
        text.startswith("kernel 82.8µs")
        and text.endswith("  k")
        and "grid 132x1x1" in text
        and "block 256x1x1" in text
    )
    assert "regs 255" in text and "smem 0+217088 B" in text
    m = Launch("memcpy", "copy", 0, 2_000, 2, bytes=4096, copy_kind="DtoD")
    assert "4096 B DtoD" in launch_details(m)
