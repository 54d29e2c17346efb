"""Issue 32: the demonstration's line-level actions on TileGym's REAL cutile-rs wrappers with the three
bugs bench/plant_bugs.py plants (silu canary, matmul zeros, bmm fallback). The findings that point at
the planted lines are SYNTHETIC (shaped like F's, as the H200 recordings give them); the sources are real.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import tilegym_snapshot

from cutile_workbench.model import Finding, Investigation, RatioRow
from cutile_workbench.stages.f.actions import plan_line_edits

ROOT = Path(__file__).resolve().parents[2]
SRC = tilegym_snapshot.SNAPSHOT / "src" / "tilegym" / "ops" / "cutile_rs"


@pytest.fixture
def planted(tmp_path: Path) -> dict[str, dict[str, object]]:
    if not SRC.is_dir():
        if tilegym_snapshot.snapshot_required():
            pytest.fail("TileGym snapshot required")
        pytest.skip("TileGym snapshot absent")
    dest = tmp_path / "src" / "tilegym" / "ops" / "cutile_rs"
    shutil.copytree(SRC, dest)
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import plant_bugs
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return {str(b["kernel"]): {**b, "root": tmp_path} for b in plant_bugs.plant(tmp_path)}


def _inv(kind: str, cls: str, file: str, line: int) -> Investigation:
    row = RatioRow("t::test_perf", "p", None, "cutile", 1.0, 2.0, 2.0, "OK")
    f = Finding(
        kind,
        "x",
        True,
        (),
        "high",
        {"issued_at": [{"class": cls, "kernel": "k", "count": 1, "file": file, "line": line}]},
    )
    return Investigation("k", "p", "FIXABLE", [row], [f])


def test_each_planted_bug_gets_its_minimal_edit(planted: dict[str, dict[str, object]]) -> None:
    root = Path(str(planted["silu_and_mul"]["root"]))
    invs = [
        _inv(
            "launch_count",
            "canary",
            str(planted["silu_and_mul"]["file"]),
            int(planted["silu_and_mul"]["line"]),
        ),  # type: ignore[call-overload]
        _inv("launch_count", "fill", str(planted["matmul"]["file"]), int(planted["matmul"]["line"])),  # type: ignore[call-overload]
        _inv("identity", "kernel", str(planted["bmm"]["file"]), int(planted["bmm"]["line"])),  # type: ignore[call-overload]
    ]
    edits, notes = plan_line_edits(invs, lambda rel: (root / rel).read_text())
    assert notes == []
    by = {e.kind: e for e in edits}
    assert set(by) == {"remove_canary", "replace_alloc", "route_fallback"}
    canary = by["remove_canary"].diff
    assert "-    _run_ffi(torch.empty((n_rows, hidden_size)" in canary and canary.count("\n-") == 1
    alloc = by["replace_alloc"].diff
    assert "-        out = torch.zeros((m, n)" in alloc and "+        out = torch.empty((m, n)" in alloc
    fb = by["route_fallback"].diff
    assert (
        "-    if q >= 8 and not transpose_a and not transpose_b:" in fb
        and "-        return torch.bmm(a, b)" in fb
    )
    assert "PLANTED" not in by["route_fallback"].after
    for e in edits:  # every result still parses and keeps the FFI path
        compile(e.after, e.relpath, "exec")


def test_a_line_the_action_cannot_rewrite_is_refused_with_the_reason(
    planted: dict[str, dict[str, object]],
) -> None:
    root = Path(str(planted["silu_and_mul"]["root"]))
    f = str(planted["silu_and_mul"]["file"])
    # the line holding `result = autotune_launch(` is an assignment: never removed as a canary
    text = (root / f).read_text().splitlines()
    line = next(i for i, t in enumerate(text, 1) if t.strip().startswith("result = autotune_launch("))
    edits, notes = plan_line_edits(
        [_inv("launch_count", "canary", f, line)], lambda rel: (root / rel).read_text()
    )
    assert edits == [] and "not applied" in notes[0] and "data flow" in notes[0]
