"""The TUI reads on without a malformed ``reference/analysis.json`` and says so (issue 36): the History
view's status line and the IR Diff view's title name the file and line, and ``i`` lists it under the
load problems.

Data: the REAL recorded matmul session (H200), copied; its analysis.json cut mid-document (SYNTHETIC
damage). The History and IR Diff views failed before (they named nothing); ``i`` listed it already.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pilot_wait import drain, until
from textual.widgets import Static

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.modals import InfoModal
from cutile_workbench.tui.screens.history import HistoryScreen
from cutile_workbench.tui.screens.irdiff import IRDiffScreen

MATMUL = (
    Path(__file__).resolve().parents[2] / "cutile_workbench" / "profiles" / "tilegym" / "session" / "matmul"
)


def _damaged(tmp_path: Path) -> tuple[Path, str]:
    shutil.copytree(MATMUL, tmp_path / "matmul")
    analysis = tmp_path / "matmul" / "reference" / "analysis.json"
    text = analysis.read_text()
    analysis.write_text(text[: len(text) // 2])
    return tmp_path, f"{analysis}:{analysis.read_text().count(chr(10)) + 1}: invalid JSON"


async def test_the_history_view_and_i_name_the_ignored_analysis_json(tmp_path: Path) -> None:
    root, where = _damaged(tmp_path)
    app = make_app(load_app_data("matmul", out_root=root, tilegym=None, env={}), prewarm=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.current_mode == "ratios", "the Ratios screen shown")
        await pilot.press("6")
        await until(
            pilot,
            lambda: isinstance(app.screen, HistoryScreen) and app.screen.history is not None,
            "the History view loaded",
        )
        await app.workers.wait_for_complete()
        await drain(pilot)  # _loaded set the status with the history: one round renders it
        status = str(app.screen.query_one("#history-status", Static).render())
        assert f"ignored {where}" in status, status
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, InfoModal), "i opens the info")
        shown = "\n".join(app.screen.lines)  # type: ignore[attr-defined]
        assert "load problems" in shown and where in shown, shown
        await pilot.press("escape", "3")
        await until(pilot, lambda: isinstance(app.screen, IRDiffScreen), "the IR Diff view")
        await until(
            pilot,
            lambda: f"ignored {where}" in str(app.screen.query_one("#pair-title", Static).render()),
            "the IR Diff view names the ignored file",
        )
