"""Issue #34 item 5: the IR screen opens on the decisive change and keeps its tokens in view.

On the REAL recorded matmul session, the slow variant's row (static_persistent, 2.040x) opens the
IR screen on hunk 1 (tile/CTA shape, audit num_cta, not cosmetic); its change, ``num_cta_in_cga``
1 -> 4, sits at column ~370 of a long ``entry`` line. At 80 and 160 columns the drawn panes must
show ``num_cta_in_cga = 1`` (reference) and ``num_cta_in_cga = 4`` (candidate). Before this change
the panes opened at column 0 and the change stayed off-pane at both widths.
"""

from __future__ import annotations

from typing import Any

import pytest
from pilot_wait import settle, until
from textual.geometry import Region

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.widgets.ir_diff_view import IRDiffView
from cutile_workbench.tui.widgets.ratio_table import RatioTable


def _matmul() -> Any:
    return load_app_data("matmul", out_root=None, tilegym=None, env={})


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_the_slow_variants_cta_change_is_in_view(size: tuple[int, int]) -> None:
    app = make_app(_matmul())
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RatioTable)
        slow = max(range(len(table.shown_rows)), key=lambda i: table.shown_rows[i].ratio or 0.0)
        assert table.shown_rows[slow].variant == "static_persistent"
        table.move_cursor(row=slow)
        await settle(pilot)
        await pilot.press("3")
        await until(pilot, lambda: app.current_mode == "irdiff")
        await settle(pilot)
        view = app.screen.query_one(IRDiffView)
        await until(pilot, lambda: view.hunk_count > 0, "the IR pairs are loaded")
        await settle(pilot)
        hunk = view.current_hunk
        assert hunk == 0 and hunk not in view.cosmetic_hunks
        assert view.rows[view.cursor].category.startswith("tile")
        drawn = [s.text for s in view.render_lines(Region(0, 0, view.size.width, view.size.height))]
        cursor_line = drawn[view.cursor - int(view.scroll_offset.y)]
        assert "num_cta_in_cga = 1" in cursor_line and "num_cta_in_cga = 4" in cursor_line, cursor_line
