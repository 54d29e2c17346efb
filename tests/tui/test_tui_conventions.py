"""Issue #34 item 4: the keys k9s / lazygit / htop users expect, on the REAL recorded matmul session.

j/k, g/G and Home/End move on Ratios (the sharded re-run left G for R); q quits (asking while a GPU
run is live); ? opens the help; L asks before a live GPU run; the filter matches every shown
column (the variant too); an empty filter result says nothing matched instead of "verdict
BLOCKED"; the palette offers the actions of screens not shown yet. Each failed on the code before
issue #34. Waits for state (``pilot_wait``), never for a fixed pause.
"""

from __future__ import annotations

from typing import Any

from pilot_wait import settle, until
from tui_helpers import ScriptedRunner, make_data

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.commands import available_commands
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.modals import ConfirmModal, HelpScreen
from cutile_workbench.tui.screens.ratios import RatiosScreen
from cutile_workbench.tui.widgets.ratio_table import RatioTable
from cutile_workbench.tui.widgets.severity_bar import SeverityBar


def _matmul() -> Any:
    return load_app_data("matmul", out_root=None, tilegym=None, env={})


async def test_vim_and_edge_moves_on_ratios() -> None:
    app = make_app(_matmul())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RatioTable)
        last = len(table.shown_rows) - 1
        for key, row in (("G", last), ("g", 0), ("j", 1), ("j", 2), ("k", 1), ("end", last), ("home", 0)):
            await pilot.press(key)
            await until(pilot, lambda row=row: table.cursor_row == row, f"{key} -> row {row}")
        assert isinstance(app.screen, RatiosScreen)  # G no longer opens the sharded re-run


async def test_q_quits_and_question_mark_helps() -> None:
    app = make_app(_matmul())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "? opens the help")
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, RatiosScreen), "Escape closes it")
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running, "q quits")
    assert app.return_code == 0


async def test_live_rerun_asks_before_running_on_the_gpu() -> None:
    runner = ScriptedRunner([])
    app = make_app(make_data(runner=runner))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("L")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), "L asks first")
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, RatiosScreen), "no: back on Ratios")
        await settle(pilot)
        assert runner.calls == []


async def test_filter_matches_the_variant_and_says_when_nothing_matches() -> None:
    app = make_app(_matmul())
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RatioTable)
        await pilot.press("slash", *"non_pers", "enter")
        await until(pilot, lambda: table.filter_text == "non_pers")
        assert {r.variant for r in table.shown_rows} == {"non_persistent"} and len(table.shown_rows) == 3
        await pilot.press("slash", *"zzz", "enter")
        await until(pilot, lambda: table.filter_text.endswith("zzz"))
        assert table.shown_rows == []
        bar = app.screen.query_one(SeverityBar).summary_text()
        assert "no row matches" in bar and "BLOCKED" not in bar, bar


async def test_palette_offers_the_actions_of_screens_not_shown_yet() -> None:
    app = make_app(_matmul())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        titles = dict((t, cb) for t, _h, cb in available_commands(app, app.screen))  # type: ignore[arg-type]
        assert "report: plan E" in titles
        titles["report: plan E"]()
        await until(pilot, lambda: getattr(app.screen, "plan", None) is not None, "Report opened, E planned")
        assert app.current_mode == "report" and app.screen.plan.stage == "E"  # type: ignore[attr-defined]


async def test_sorting_in_place_shows_the_rows_in_the_sorted_order_and_keeps_the_cursor_row() -> None:
    """The sort keys reorder the table in place where they can (issue #34 per-key cost): what is
    drawn is the sorted order, and the highlighted config stays highlighted."""
    from cutile_workbench.tui.widgets.ratio_table import config_labels

    app = make_app(_matmul())
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RatioTable)
        labels = config_labels([r.params for r in table.shown_rows])
        await pilot.press("down", "down")
        picked = table.current_row
        assert picked is not None
        for key in ["s"] * 11 + ["r", "s", "r"]:
            await pilot.press(key)
            await settle(pilot)
            drawn = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
            assert drawn == [labels[r.params] for r in table.shown_rows], (table.sort_key, table.reverse)
            assert table.current_row is not None and table.current_row.params == picked.params
