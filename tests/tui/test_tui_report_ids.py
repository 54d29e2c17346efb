"""The Report preview's rendered stage F report keeps the screen's ids unique.

REAL: the recorded cutile-rs matmul session (``load_app_data``). Found by the slow key storm
(``4 tab f``): Textual gives the label of every Markdown code fence the id "code-content", and the
rendered report has several fences. Failed on the code before the fix. Waits are state (``settle``).
"""

from __future__ import annotations

from pilot_wait import settle

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.screens.report import ReportScreen
from cutile_workbench.tui.widgets.report_preview import ReportPreview


async def test_the_rendered_stage_f_report_has_no_duplicate_ids() -> None:
    app = make_app(load_app_data("matmul", out_root=None, tilegym=None, env={}))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReportScreen)
        preview = screen.query_one(ReportPreview)
        assert preview.plan is not None and preview.plan.stage == "F" and preview.view == "rendered"
        ids = [n.id for n in screen.walk_children(with_self=True) if n.id]
        assert not {i for i in ids if ids.count(i) > 1}
