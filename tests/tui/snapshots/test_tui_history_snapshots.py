"""SVG snapshots of the History screen (mode 6) at 80x24 and 160x48.

Data: the REAL recorded matmul session (cutile-rs vs cuTile, H200) plus two SYNTHETIC follow-up
runs derived from its real samples (``history_helpers.matmul_with_followups``: a 0.80x fix of
static_persistent 2048³, then 1.12x back after a driver update on a power-capped GPU). The screen
shows that config's runs with the newest highlighted. Deterministic: seeded resampling and
bootstrap, fixed run times, the store path and out root pinned (tmp dirs differ per run), no
start-up pre-warm. Update only after looking at the report: ``pytest tests/tui/snapshots --snapshot-update``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from history_helpers import matmul_with_followups
from pilot_wait import drain, settle

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.data import AppData
from cutile_workbench.tui.loaders import load_app_data

SIZES = [(80, 24), (160, 48)]


def history_data(tmp_path: Path) -> AppData:
    matmul_with_followups(tmp_path)
    data = load_app_data("matmul", out_root=tmp_path, tilegym=None, env={})
    assert data.history_loader is not None
    history = replace(data.history_loader(), store="out/matmul/workbench/history.sqlite")
    data.history = history
    data.history_loader = lambda: history
    data.out_root = Path("out")
    return data


async def _to_history(pilot: Any) -> None:
    await settle(pilot)  # the Ratios screen loaded
    for key in ("down", "down", "down", "6"):  # Ratios: the static_persistent 2048³ row, then History
        await pilot.press(key)
        await drain(pilot)  # the key handled before the next (the row under the cursor moved)
    await pilot.app.workers.wait_for_complete()
    await settle(pilot)  # the History load's result rendered


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_history_snapshot(snap_compare: Any, tmp_path: Path, size: tuple[int, int]) -> None:
    app = make_app(history_data(tmp_path), prewarm=False)
    assert snap_compare(app, terminal_size=size, run_before=_to_history)
