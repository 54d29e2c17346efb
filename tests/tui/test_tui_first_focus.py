"""Issue #34: the Ratios table holds the focus when the Ratios screen's mount returns, so the first
frame already shows it focused and the first key reaches it without waiting for a deferred focus.

``Widget.focus()`` defers the focus through ``app.call_later``: the first frame is painted with no
widget focused, and a second pass (restyle of the focused table, the footer's bindings) follows
it, which the first key waits behind. ``Screen.set_focus`` (public) sets it at once. COUNTED, not
timed: the test reads who is focused at the end of ``on_mount``.
"""

from __future__ import annotations

from typing import Any

import pytest

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.screens import ratios as ratios_screen
from cutile_workbench.tui.widgets.ratio_table import RatioTable


@pytest.mark.asyncio
async def test_the_ratio_table_is_focused_when_the_ratios_screen_mount_returns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[Any] = []
    real = ratios_screen.RatiosScreen.on_mount

    def spy(self: Any) -> None:
        real(self)
        seen.append(self.focused)  # before any further message is processed

    monkeypatch.setattr(ratios_screen.RatiosScreen, "on_mount", spy)
    app = make_app(load_app_data("matmul", out_root=None, tilegym=None))
    async with app.run_test(size=(160, 48)):
        pass
    assert seen, "the Ratios screen was never mounted"
    assert isinstance(seen[0], RatioTable), f"focused at the end of on_mount: {seen[0]!r}"
