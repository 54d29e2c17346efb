"""Side-by-side diff model (cutile_workbench.ir.diffmodel): alignment, intraline spans, folding, hunks,
and the quadratic-case guards (synthetic inputs, sizes kept small enough for CI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cutile_workbench.ir import diffmodel
from cutile_workbench.ir.diffmodel import Fold, diff_lines, intraline_spans
from cutile_workbench.ir.loader import load_ir

FIX = Path(__file__).parent.parent / "fixtures" / "ir"


def _reconstruct(sbs: diffmodel.SideBySide) -> tuple[list[str], list[str]]:
    left = [r.left for r in sbs.rows if r.left_no is not None]
    right = [r.right for r in sbs.rows if r.right_no is not None]
    return left, right


def test_changed_partition_view_lines_are_aligned_pairs() -> None:
    a = load_ir(FIX / "rms_norm_ref_16x1024.mlir").canon.lines
    b = load_ir(FIX / "rms_norm_ref_4x8192.mlir").canon.lines
    sbs = diff_lines(a, b)
    pv = [r for r in sbs.rows if "make_partition_view" in r.left]
    assert len(pv) == 1
    row = pv[0]
    assert row.kind == "replace" and row.left_no == row.right_no  # same line on both sides
    assert "make_partition_view" in row.right
    assert [row.left[s:e] for s, e in row.left_spans] == ["16x1024"]
    assert [row.right[s:e] for s, e in row.right_spans] == ["4x8192"]
    assert _reconstruct(sbs) == (list(a), list(b))
    assert sbs.stats()["insert"] == 0 and sbs.stats()["delete"] == 0


def test_hunk_navigation_and_folding() -> None:
    a = [f"  %v{i} = op {i}" for i in range(40)]
    b = list(a)
    b[5] = "  %v5 = op changed"
    b.insert(30, "  %new = op")
    sbs = diff_lines(a, b)
    assert sbs.hunks == [5, 30]
    assert sbs.next_hunk(0) == 5 and sbs.next_hunk(5) == 30 and sbs.next_hunk(30) is None
    assert sbs.prev_hunk(30) == 5 and sbs.prev_hunk(5) is None
    folded = sbs.folded(context=3)
    folds = [f for f in folded if isinstance(f, Fold)]
    # head run (rows 0-4) keeps 3 before the hunk; middle keeps 3+3; the 10-row tail keeps 3 after it
    assert [f.count for f in folds] == [2, 18, 7]
    shown = sum(1 for f in folded if not isinstance(f, Fold)) + sum(f.count for f in folds)
    assert shown == len(sbs.rows)
    assert sbs.row_of_right(31) == 30  # the inserted line


def test_identical_has_no_hunks_and_folds_to_one() -> None:
    a = [f"x{i}" for i in range(100)]
    sbs = diff_lines(a, a)
    assert sbs.identical and sbs.hunks == []
    assert sbs.folded(3) == [Fold(0, 100)]


def test_insert_delete_only() -> None:
    sbs = diff_lines([], ["a", "b"])
    assert [r.kind for r in sbs.rows] == ["insert", "insert"] and sbs.hunks == [0]
    sbs = diff_lines(["a", "b"], [])
    assert [r.kind for r in sbs.rows] == ["delete", "delete"]


def test_huge_unalignable_gap_becomes_one_replace_block(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(diffmodel, "MAX_GAP_CELLS", 100)
    a = [f"a{i}" for i in range(20)]
    b = [f"b{i}" for i in range(20)]
    sbs = diff_lines(a, b)
    assert sbs.notes and "too large" in sbs.notes[0]
    assert all(r.kind == "replace" for r in sbs.rows) and _reconstruct(sbs) == (a, b)


def test_repeated_lines_pathology_is_fast_and_correct() -> None:
    a = ["  }"] * 3000
    b = ["  }" if k % 3 else "  return" for k in range(3000)]
    sbs = diff_lines(a, b)
    assert _reconstruct(sbs) == (a, b)


def test_long_lines_fall_back_to_whole_line_spans() -> None:
    a, b = "x" * 5000, "x" * 4999 + "y"
    assert intraline_spans(a, b) == (((0, 5000),), ((0, 5000),))


def test_lazy_spans_past_the_eager_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(diffmodel, "MAX_INTRALINE_PAIRS", 1)
    sbs = diff_lines(["a 1", "b 2"], ["a 3", "b 4"])
    assert sbs.rows[0].left_spans == ((2, 3),)
    assert sbs.rows[1].left_spans == ()  # not computed eagerly
    assert sbs.spans(1) == (((2, 3),), ((2, 3),))


def test_random_pairs_reconstruct() -> None:
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @hypothesis.given(
        st.lists(st.sampled_from(["}", "a", "b", "  %x = op", "c d"]), max_size=40),
        st.lists(st.sampled_from(["}", "a", "e", "  %x = op", "c d"]), max_size=40),
    )
    def check(a: list[str], b: list[str]) -> None:
        sbs = diff_lines(a, b)
        assert _reconstruct(sbs) == (a, b)
        for i in sbs.hunks:
            assert sbs.rows[i].kind != "equal"

    check()


def test_recorded_dumps_align_changed_partition_views() -> None:
    """REAL: the H200 rms_norm dumps (tile 16x1024 vs 4x8192) of cutile_workbench/profiles/rms_norm/session/rms_norm."""
    d = (
        Path(__file__).resolve().parents[2]
        / "cutile_workbench"
        / "profiles"
        / "rms_norm"
        / "session"
        / "rms_norm"
    )
    ref, gen = d / "reference" / "reference.mlir", d / "generated" / "generated_canon.mlir"
    if not (ref.is_file() and gen.is_file()):
        pytest.skip("recorded dumps not present")
    a, b = load_ir(ref), load_ir(gen)
    sbs = diff_lines(a.canon.lines, b.canon.lines)
    pv = [r for r in sbs.rows if "make_partition_view" in r.left or "make_partition_view" in r.right]
    assert len(pv) == 3 and all(r.kind == "replace" and r.left_no == r.right_no for r in pv)
    assert all("make_partition_view" in r.left and "make_partition_view" in r.right for r in pv)
    assert sbs.stats()["insert"] == sbs.stats()["delete"] == 0
    assert a.raw_lines[a.canon.source_lines[pv[0].left_no - 1] - 1].lstrip().startswith("%pview")
