"""Ratios' cursor row and ``app.selected_row`` agree: after History's pick that the Ratios view hides
(slow only, a filter, a variant tab), and at once after a move, a sort or Escape (the detail line naming it too).

REAL: the recorded cutile-rs matmul session, loaded as the app loads it (``load_app_data``).
Found by the slow key storm (``o`` … ``6 down 1``): back on Ratios the cursor stayed on a shown
row while ``app.selected_row`` still named History's pick, so the screens disagreed on the
selected config. Ratios' cursor row is the selection there: coming back, the app follows it.
The storm's other mismatches: the selection followed the cursor only when the RowHighlighted
message was handled. Both tests failed on the code before the fix.
Waits are state, not time (``pilot_wait``).
"""

from __future__ import annotations

from pilot_wait import settle
from textual.widgets import Static

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.screens.history import HistoryScreen
from cutile_workbench.tui.screens.ratios import RatiosScreen
from cutile_workbench.tui.widgets.ratio_table import RatioTable


async def test_back_on_ratios_the_selection_is_the_cursor_row_when_historys_pick_is_hidden() -> None:
    app = make_app(load_app_data("matmul", out_root=None, tilegym=None, env={}))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("o")  # slow only: the Ratios view hides the PASS rows
        await settle(pilot)
        shown = {r.params for r in app.screen.query_one(RatioTable).shown_rows}
        assert shown, "the recorded matmul session has slow rows"
        await pilot.press("6")
        await settle(pilot)
        history = app.screen
        assert isinstance(history, HistoryScreen) and history.history is not None
        for _ in history.history.configs():  # pick a config the Ratios view does not show
            if app.selected_row is not None and app.selected_row.params not in shown:
                break
            await pilot.press("c")
            await settle(pilot)
        assert app.selected_row is not None and app.selected_row.params not in shown
        await pilot.press("1")
        await settle(pilot)
        ratios = app.screen
        assert isinstance(ratios, RatiosScreen)
        row = ratios.query_one(RatioTable).current_row
        assert row is not None
        assert app.selected_row is not None and app.selected_row.params == row.params
        assert str(ratios.query_one("#detail", Static).render()).startswith(row.params)


async def test_the_selection_is_the_cursor_row_before_the_highlight_message_arrives() -> None:
    """A move, a sort and Escape after a filter that matched nothing change the row under the
    cursor at once; ``app.selected_row`` followed only when the RowHighlighted message was handled,
    so whatever ran in between (the storm's check, a queued key) saw the previous row. Each step
    runs synchronously here: nothing is awaited between the change and the assertion."""
    app = make_app(load_app_data("matmul", out_root=None, tilegym=None, env={}))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RatiosScreen)
        table = screen.query_one(RatioTable)

        def agree() -> bool:
            row, selected = table.current_row, app.selected_row
            detail = str(screen.query_one("#detail", Static).render())
            return (
                row is not None
                and selected is not None
                and selected.params == row.params
                and detail.startswith(row.params)
            )

        table.action_cursor_down()
        table.action_cursor_down()
        assert agree()
        table.action_cycle_sort()  # config → variant: rows reordered in place
        table.action_reverse_sort()
        assert agree()
        table.action_last_row()
        table.filter_text = "no config has this"
        assert table.current_row is None
        screen.action_clear_filter()  # every row back, the cursor on the first one
        assert agree()
        await settle(pilot)
        assert agree()
