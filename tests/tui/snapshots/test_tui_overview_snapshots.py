"""SVG snapshots of the overview screen (``cutile-workbench --out-root DIR``) at 80x24 and 160x48.

Data: copies of the REAL recorded sessions (matmul, silu_and_mul: cutile-rs vs cuTile on an H200;
rms_norm: the labelled cuTile stand-in) and two SYNTHETIC broken dirs (test_overview.make_root);
the out root and the kernel paths are pinned (tmp dirs differ per run). Update only after looking
at the report: ``pytest tests/tui/snapshots --snapshot-update``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_overview import make_root

from cutile_workbench.services.overview import overview
from cutile_workbench.tui.overview_app import OverviewApp

SIZES = [(80, 24), (160, 48)]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_overview_snapshot(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    ov = overview(make_root(tmp_path))
    ov = replace(
        ov,
        root="out",
        rows=tuple(
            replace(r, path=f"out/{r.kernel}", problem=r.problem and r.problem.replace(str(tmp_path), ""))
            for r in ov.rows
        ),
    )
    assert snap_compare(OverviewApp(ov), terminal_size=size)
