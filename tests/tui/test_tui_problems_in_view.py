"""Issue #34 item 3: a load problem is stated where the data would be, until fixed, and listed under ``i``.

Before, a problem (a cut perf log, a cut session.json) was only a toast that left after 30 s,
and ``i`` did not list it. SYNTHETIC problem text on the pinned synthetic data (``tui_helpers``);
the file and line are what the loaders' InputError carries. Failed on the code before issue #34.
"""

from __future__ import annotations

from pilot_wait import settle, until
from textual.widgets import Static
from tui_helpers import make_data

from cutile_workbench.errors import InputError
from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.modals import InfoModal

PROBLEM = InputError("truncated record (no closing brace)", path="/o/rms_norm/cutile_rs_perf.txt", line=65)


def _app(*, table: bool = True) -> object:
    data = make_data()
    data.problems.append(PROBLEM)
    if not table:
        data.table = None
    return make_app(data)


async def test_a_load_problem_stays_in_the_ratios_view() -> None:
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:  # type: ignore[attr-defined]
        await settle(pilot)
        line = app.screen.query_one("#problems", Static)  # type: ignore[attr-defined]
        text = str(line.render())
        assert line.display and "/o/rms_norm/cutile_rs_perf.txt:65" in text and "i lists" in text, text


async def test_no_table_says_why_with_the_file_and_line() -> None:
    app = _app(table=False)
    async with app.run_test(size=(120, 40)) as pilot:  # type: ignore[attr-defined]
        await settle(pilot)
        status = str(app.screen.query_one("#status", Static).render())  # type: ignore[attr-defined]
        assert "/o/rms_norm/cutile_rs_perf.txt:65" in status, status


async def test_i_lists_the_load_problems() -> None:
    app = _app()
    async with app.run_test(size=(120, 40)) as pilot:  # type: ignore[attr-defined]
        await settle(pilot)
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, InfoModal), "i opens the info")  # type: ignore[attr-defined]
        shown = "\n".join(app.screen.lines)  # type: ignore[attr-defined]
        assert "load problems" in shown and "/o/rms_norm/cutile_rs_perf.txt:65" in shown, shown


async def test_no_problem_no_line() -> None:
    app = make_app(make_data())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert not app.screen.query_one("#problems", Static).display
