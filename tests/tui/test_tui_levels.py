"""Issue #34 item 4 (second wave): Esc, the footer, F1 and the palette, on the REAL recorded matmul session.

- Esc goes back one level everywhere: first what is open on the screen (the filter, a search, a
  live run, running checks), then the screen it was reached from (1-6, t/Enter), then, on the
  first screen, the overview it was opened from; with nothing left it does nothing.
- The footer keeps Quit and Help in view at 80, 120 and 160 columns.
- F1 lists this app's keys only (no Textual scrolling/cursor/focus padding).
- The palette offers Report write/view/search and Ratios reverse/variant/chart.

Each failed on the code before this change. Waits for state (``pilot_wait``), never for a fixed pause.
"""

from __future__ import annotations

from typing import Any

import pytest
from pilot_wait import settle, until
from textual.widgets import Footer, Input

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.catalog import known_bindings
from cutile_workbench.tui.commands import available_commands
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.modals import HelpScreen
from cutile_workbench.tui.screens.ratios import RatiosScreen
from cutile_workbench.tui.widgets.key_footer import FooterKey
from cutile_workbench.tui.widgets.ratio_table import RatioTable


def _matmul() -> Any:
    return load_app_data("matmul", out_root=None, tilegym=None, env={})


async def test_escape_goes_back_one_screen_at_a_time() -> None:
    app = make_app(_matmul())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for key, mode in (("2", "timeline"), ("3", "irdiff"), ("4", "report")):
            await pilot.press(key)
            await until(pilot, lambda mode=mode: app.current_mode == mode, f"{key} opens {mode}")
            await settle(pilot)
        for mode in ("irdiff", "timeline", "ratios"):
            await pilot.press("escape")
            await until(pilot, lambda mode=mode: app.current_mode == mode, f"Esc back to {mode}")
            await settle(pilot)
        await pilot.press("escape")  # the first screen, not opened from an overview: nothing to go back to
        await settle(pilot)
        assert app.is_running and app.current_mode == "ratios"
        # a screen already on the way is not visited twice: 1 2 1 Esc stays... on nothing before Ratios
        await pilot.press("2")
        await until(pilot, lambda: app.current_mode == "timeline")
        await pilot.press("1")
        await until(pilot, lambda: app.current_mode == "ratios")
        await pilot.press("escape")
        await settle(pilot)
        assert app.current_mode == "ratios" and app.is_running


async def test_escape_closes_the_filter_first_then_leaves_to_the_overview() -> None:
    app = make_app(_matmul(), back_code=7)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RatioTable)
        await pilot.press("slash", *"persist", "enter")
        await until(pilot, lambda: table.filter_text == "persist")
        await pilot.press("escape")
        await until(pilot, lambda: table.filter_text == "", "Esc clears the filter first")
        assert app.is_running
        await pilot.press("escape")
        await until(pilot, lambda: not app.is_running, "then Esc goes back to the overview")
    assert app.return_value == 7


async def test_escape_closes_the_ir_search_first_then_goes_back() -> None:
    app = make_app(_matmul())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await until(pilot, lambda: app.current_mode == "irdiff")
        await settle(pilot)
        box = app.screen.query_one("#ir-search", Input)
        await pilot.press("slash")
        await until(pilot, lambda: not box.has_class("hidden"), "/ opens the search")
        await pilot.press("escape")
        await until(pilot, lambda: box.has_class("hidden"), "Esc closes the search")
        assert app.current_mode == "irdiff"
        await pilot.press("escape")
        await until(pilot, lambda: app.current_mode == "ratios", "then Esc goes back to Ratios")


@pytest.mark.parametrize("width", [80, 120, 160])
async def test_the_footer_keeps_quit_and_help_at_every_width(width: int) -> None:
    app = make_app(_matmul())
    async with app.run_test(size=(width, 30)) as pilot:
        await settle(pilot)
        for key in ("1", "2", "3", "4", "5", "6"):
            await pilot.press(key)
            await settle(pilot)
            footer = app.screen.query_one(Footer)
            shown = {
                k.description
                for k in footer.query(FooterKey)
                if k.region.width > 0 and k.region.right <= width and k.region.y == footer.region.y
            }
            assert {"Quit", "Help"} <= shown, (width, app.current_mode, sorted(shown))


async def test_help_lists_this_apps_keys_only() -> None:
    ours = {b.description for b in known_bindings().values()} | {b.action for b in known_bindings().values()}
    app = make_app(_matmul())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for key in ("1", "2", "3", "4", "5", "6"):
            await pilot.press(key)
            await settle(pilot)
            await pilot.press("f1")
            await until(pilot, lambda: isinstance(app.screen, HelpScreen), "F1 opens the help")
            help_screen = app.screen
            assert isinstance(help_screen, HelpScreen)
            foreign = [d for _k, d, _t in help_screen.keys if d not in ours and d != "Command palette"]
            assert foreign == [], (app.current_mode, foreign)
            await pilot.press("escape")
            await until(pilot, lambda: not isinstance(app.screen, HelpScreen))


async def test_the_palette_has_every_screens_actions() -> None:
    app = make_app(_matmul())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, RatiosScreen)
        titles = {t for t, _h, _cb in available_commands(app, app.screen)}
        for wanted in ("ratios: reverse sort", "ratios: next variant", "ratios: show chart"):
            assert wanted in titles, (wanted, sorted(titles))
        # the Report's entries, offered from Ratios (the screen is built when one is chosen) ...
        assert {"report: plan E", "report: plan F"} <= titles
        await pilot.press("4", "e")
        await settle(pilot)
        titles = {t for t, _h, _cb in available_commands(app, app.screen)}
        # ... and once a plan is shown: write, view and search
        for wanted in ("report: write validated files…", "report: next view", "report: search…"):
            assert wanted in titles, (wanted, sorted(titles))
        # chosen from another screen, a Report entry runs there
        await pilot.press("1")
        await until(pilot, lambda: app.current_mode == "ratios")
        entries = {t: cb for t, _h, cb in available_commands(app, app.screen)}
        entries["report: search…"]()
        await until(pilot, lambda: app.current_mode == "report", "the entry switches to Report")
        await until(pilot, lambda: app.screen.query_one("#report-search", Input).display, "and searches")
        entries = {t: cb for t, _h, cb in available_commands(app, app.screen)}
        await pilot.press("escape")
        await until(pilot, lambda: not app.screen.query_one("#report-search", Input).display)
        assert app.current_mode == "report"
