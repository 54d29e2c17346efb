"""Issue 31 item 3 (the TUI paints from what is cheap): a value a worker still computes is shown
as pending, with a word saying so, never a blank or a "—" that reads as "none".

On Ratios the only such value is a filtered subset's geomean CI (a joint bootstrap in a thread,
after the filter stops changing). The worker is held (a spy that records the call and does not
run it) so the pending state is seen by logic, not by racing its timer; then it is run. REAL
recorded matmul session (its rows have samples, so the CI is computed).
"""

from __future__ import annotations

from typing import Any

import pytest
from pilot_wait import settle, type_fast, until

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.screens import ratios as ratios_screen
from cutile_workbench.tui.widgets.severity_bar import SeverityBar


async def test_a_subset_ci_being_computed_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: "CI …" alone (an ellipsis reads as text cut short, not as "being computed")."""
    held: list[tuple[Any, ...]] = []
    real = ratios_screen.RatiosScreen.bootstrap_scope

    def hold(self: Any, *args: Any) -> None:
        held.append((self, *args))

    monkeypatch.setattr(ratios_screen.RatiosScreen, "bootstrap_scope", hold)
    app = make_app(load_app_data("matmul", out_root=None, tilegym=None, env={}))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        type_fast(pilot, "slash", "2", "0", "4", "8", "enter")
        await until(pilot, lambda: bool(held), "the subset's bootstrap is asked for")
        bar = app.screen.query_one(SeverityBar)
        text = bar.summary_text()
        assert "CI … computing" in text, text
        assert bar.render().plain.count("computing") == 1
        # the worker let go: the same bar then states the CI itself, and "computing" is gone
        monkeypatch.setattr(ratios_screen.RatiosScreen, "bootstrap_scope", real)
        type_fast(pilot, "slash", "backspace", "8", "enter")
        await until(pilot, lambda: "CI [" in bar.summary_text(), "the subset's CI arrives")
        assert "computing" not in bar.render().plain
