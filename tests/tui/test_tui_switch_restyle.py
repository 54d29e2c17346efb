"""Issue #34 (screen switch latency): a screen shown again is not restyled whole when nothing its
styles read has changed since it was left.

Textual's ``switch_mode`` posts ``ScreenResume(refresh_styles=True)``, which re-applies the
stylesheet to every node of the screen (~260 nodes on the Timeline, the footer's keys included) on
every switch, though each class or pseudo-class change while it was away restyled its own nodes.
The restyle is kept when what the stylesheet reads from outside the screen changed meanwhile (the
theme, the ANSI colour mode): checked by its effect (the table's background after a theme change
while away is the new theme's, as in an app started with it). COUNTED, not timed.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.screen import Screen

from cutile_workbench.tui.app import WorkbenchApp, make_app
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.widgets.ratio_table import RatioTable
from tests.tui.pilot_wait import settle

OTHER_THEME = "textual-light"


def _data() -> Any:
    return load_app_data("matmul", out_root=None, tilegym=None)


@pytest.mark.asyncio
async def test_switching_back_and_forth_restyles_no_whole_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    whole: list[str] = []
    real = WorkbenchApp.update_styles

    def spy(self: Any, node: Any, animate: bool = True) -> None:
        if isinstance(node, Screen):
            whole.append(type(node).__name__)
        real(self, node, animate=animate)

    monkeypatch.setattr(WorkbenchApp, "update_styles", spy)
    app = make_app(_data())
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        for key in "2121":  # first visit of the Timeline, then each screen shown again
            await pilot.press(key)
            await settle(pilot)
        whole.clear()
        for key in "2121":
            await pilot.press(key)
            await settle(pilot)
        assert app.current_mode == "ratios"
    assert whole == [], f"whole-screen restyles on switching back: {whole}"


async def _table_background(app: Any) -> Any:
    return app.screen.query_one(RatioTable).styles.background


@pytest.mark.asyncio
async def test_a_theme_changed_while_away_is_applied_on_return() -> None:
    fresh = make_app(_data())
    async with fresh.run_test(size=(160, 48)) as pilot:
        fresh.theme = OTHER_THEME
        await settle(pilot)
        want = await _table_background(fresh)
    app = make_app(_data())
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        before = await _table_background(app)
        await pilot.press("2")
        await settle(pilot)
        app.theme = OTHER_THEME
        await settle(pilot)
        await pilot.press("1")
        await settle(pilot)
        got = await _table_background(app)
    assert before != want, "the two themes give the table one background: the test checks nothing"
    assert got == want


@pytest.mark.asyncio
async def test_switching_back_and_forth_recomposes_no_footer() -> None:
    """The footer of the screen being left answered the bindings change made for the screen being
    entered (the trail: Escape's "Back" on or off) and recomposed while away, then recomposed back
    on return: two recomposes per switch for keys that, shown, never changed. A footer whose screen
    is not the app's current one now waits; on return it checks once, against the state then."""
    from cutile_workbench.tui.chrome import WorkbenchFooter

    app = make_app(_data())
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        for key in "2121":
            await pilot.press(key)
            await settle(pilot)
        footers = [f for s in app.mode_screens().values() for f in s.query(WorkbenchFooter)]
        assert len(footers) == 2
        before = sum(f.recomposes for f in footers)
        for key in "2121":
            await pilot.press(key)
            await settle(pilot)
        assert sum(f.recomposes for f in footers) == before
        for f in footers:  # and each shows what its screen's bindings say now
            if f.screen is app.screen:
                assert f.shown_keys() == f._composed
