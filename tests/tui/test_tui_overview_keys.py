"""Issue #34 on the overview app (``cutile-workbench --out-root DIR``, no kernel named): the footer keeps
Quit and Help at every width, and ``?`` / F1 list this app's keys (not Textual's generic ones), as on
every screen of the kernel app. Data: copies of the REAL recorded sessions plus two SYNTHETIC broken
dirs (``test_overview.make_root``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_overview import make_root

from cutile_workbench.services.overview import overview
from cutile_workbench.tui.chrome import WorkbenchFooter
from cutile_workbench.tui.modals import HelpScreen
from cutile_workbench.tui.overview_app import OverviewApp
from tests.tui.pilot_wait import settle, until


def _footer_actions(app: OverviewApp) -> list[str]:
    footer = app.screen.query_one(WorkbenchFooter)
    return [str(getattr(w, "action", "")) for w in footer.children if w.display]


@pytest.mark.asyncio
@pytest.mark.parametrize("width", [60, 80, 120, 160])
async def test_the_footer_keeps_quit_and_help_first_at_every_width(tmp_path: Path, width: int) -> None:
    app = OverviewApp(overview(make_root(tmp_path)))
    async with app.run_test(size=(width, 24)) as pilot:
        await settle(pilot)
        actions = _footer_actions(app)
        assert actions[:2] == ["quit_overview", "help"], actions


@pytest.mark.asyncio
@pytest.mark.parametrize("key", ["question_mark", "f1"])
async def test_help_lists_the_overviews_keys_and_closes_on_escape(tmp_path: Path, key: str) -> None:
    app = OverviewApp(overview(make_root(tmp_path)))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press(key)
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "help opened")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        described = {d for _k, d, _t in help_screen.keys}
        assert {"Quit", "Open", "Sort", "Filter", "Reload", "Help"} <= described, described
        assert not described & {"Scroll Up", "Cursor up", "Copy selected text", "Focus Next"}, described
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen), "help closed")
