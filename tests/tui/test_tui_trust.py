"""Issue 18 items 1-2 in the TUI, on the recorded REAL cutile-rs matmul session: the Ratios id column and
header, the Timeline title, the IR title. One scene is CONSTRUCTED FROM REAL CAPTURES (the candidate given
the baseline's own recorded launch sets; labelled in ``test_trust_identity``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from pilot_wait import settle, until
from test_trust_identity import SESSION, SP, _candidate_runs_baseline_captures
from textual.widgets import Static

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.widgets.ratio_table import RatioTable


async def test_ratios_marks_rows_that_ran_the_reference(tmp_path: Path) -> None:
    """CONSTRUCTED FROM REAL CAPTURES: every row REF, the header says so, the timeline title names why."""
    shutil.copytree(SESSION / "matmul", tmp_path / "matmul")
    _candidate_runs_baseline_captures(tmp_path / "matmul")
    data = load_app_data("matmul", out_root=tmp_path, tilegym=None, env={})
    assert data.trust is not None and data.trust.warning
    app = make_app(data)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RatioTable)
        assert [c.key for c in table.visible_columns()][-1] == "id"
        cells = [str(table.get_row_at(i)[-1]) for i in range(table.row_count)]
        assert cells == ["REF"] * 6
        header = str(app.screen.query_one("#header", Static).render())
        assert "6 row(s) did not run the candidate's kernel" in header
        await pilot.press("enter")
        await settle(pilot)
        title = str(app.screen.query_one("#title", Static).render())
        assert "id REF: the candidate ran the reference's own kernel" in title


async def test_real_session_shows_own_and_the_reference_config_on_timeline_and_ir() -> None:
    """REAL: rows marked own; the Timeline and IR titles name the config the reference ran (its symbol)."""
    data = load_app_data("matmul", out_root=None, tilegym=None, env={})
    app = make_app(data)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RatioTable)
        assert {str(table.get_row_at(i)[-1]) for i in range(table.row_count)} == {"own"}
        while table.current_row is not None and table.current_row.params != SP[0]:
            await pilot.press("down")
        await pilot.press("enter")
        await settle(pilot)
        title = str(app.screen.query_one("#title", Static).render())
        ran = (
            "reference ran group_size_m=8 latency=auto num_ctas=1 occupancy=1 tile_k=64 tile_m=128 tile_n=128"
        )
        assert ran in title
        await pilot.press("3")
        await until(pilot, lambda: not app.ir_loading, "the IR pairs loaded")
        await settle(pilot)
        assert ran in str(app.screen.query_one("#pair-title", Static).render())
