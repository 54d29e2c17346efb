"""Issue 32: slow rows that are exactly one variant's rows are that variant's pattern (REAL: the recorded
matmul session, profiles/tilegym/session/matmul: every static_persistent row 1.73-2.04x, the
non_persistent rows at parity). SYNTHETIC rows for the edge cases."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cutile_workbench.cli import main
from cutile_workbench.model import RatioRow
from cutile_workbench.stages.f.diagnosis import variant_pattern

SESSION = Path(__file__).resolve().parents[2] / "cutile_workbench" / "profiles" / "tilegym" / "session"


def test_recorded_matmul_is_the_static_persistent_variants_pattern(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "out"
    shutil.copytree(SESSION / "matmul", root / "matmul")
    rc = main(["report", "f", "matmul", "--out-root", str(root), "--yes", "--no-real-scripts"])
    err = capsys.readouterr().err
    assert rc == 0
    lines = [ln for ln in err.splitlines() if ": FIXABLE" in ln]
    assert len(lines) == 3 and all(ln.endswith("(variant)") for ln in lines)
    text = next((root / "matmul" / "reports").glob("perf_investigation_True-True-*2048*.md")).read_text()
    assert "- Shape pattern: variant static_persistent: every slow row is a static_persistent row" in text


def _r(params: str, variant: str | None, ratio: float) -> RatioRow:
    return RatioRow("f", params, variant, "cutile", 1.0, ratio, ratio, "OK")


def test_edge_cases_stay_shape_specific() -> None:
    """SYNTHETIC rows."""
    sp = [_r("a", "sp", 1.8), _r("b", "sp", 1.9)]
    npers = [_r("c", "np", 1.0)]
    assert variant_pattern([*sp, *npers], sp) == "sp"
    assert variant_pattern([*sp, _r("d", "sp", 1.0), *npers], sp) is None  # a variant row at parity
    assert variant_pattern(sp, sp) is None  # no other variant to compare with
    assert variant_pattern([*sp, *npers], sp[:1]) is None  # one slow row
    mixed = [_r("a", "sp", 1.8), _r("c", "np", 1.5)]
    assert variant_pattern(mixed, mixed) is None
