"""Issue #34 item 3: a load problem is stated where the data would be, until fixed, and listed under ``i``.

Before, a problem (a cut perf log, a cut session.json) was only a toast that left after 30 s,
and ``i`` did not list it. SYNTHETIC problem text on the pinned synthetic data (``tui_helpers``);
the file and line are what the loaders' InputError carries. Failed on the code before issue #34.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pilot_wait import settle, until
from textual.widgets import Static
from tui_helpers import make_data

from cutile_workbench.errors import InputError
from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.modals import InfoModal
from cutile_workbench.tui.widgets.ratio_table import RatioTable

SESSIONS = Path(__file__).resolve().parents[2] / "cutile_workbench" / "profiles" / "tilegym" / "session"

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


def _cut_session(tmp_path: Path) -> Path:
    """A copy of the REAL recorded matmul session whose session.json is cut in half (a write that
    stopped mid-file): the out root to open."""
    shutil.copytree(SESSIONS / "matmul", tmp_path / "matmul")
    meta = tmp_path / "matmul" / "workbench" / "session.json"
    raw = meta.read_bytes()
    meta.write_bytes(raw[: len(raw) // 2])
    return tmp_path


async def test_a_cut_session_json_is_stated_where_the_id_column_would_be(tmp_path: Path) -> None:
    """Before: the id column was dropped without a word (the line named only a JSON error, as a
    load problem among four copies of it). Now the Ratios view says the id column is not shown and
    why (file and line), for as long as the file is cut."""
    data = load_app_data("matmul", out_root=_cut_session(tmp_path), tilegym=None, env={})
    assert data.table is not None and data.trust is None  # the cut file costs the identities
    app = make_app(data)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RatioTable)
        assert "id" not in [str(c.key.value) for c in table.ordered_columns]
        line = app.screen.query_one("#problems", Static)
        text = str(line.render())
        assert line.display, text
        assert "id column not shown" in text and "session.json:48" in text, text


async def test_i_lists_a_cut_session_json_once_with_what_it_costs(tmp_path: Path) -> None:
    """Before: ``i`` listed the same session.json error four times (each reader of the file
    appended its own copy) and not what it cost."""
    data = load_app_data("matmul", out_root=_cut_session(tmp_path), tilegym=None, env={})
    app = make_app(data)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, InfoModal), "i opens the info")
        shown = "\n".join(app.screen.lines)  # type: ignore[attr-defined]
        assert "load problems (1):" in shown, shown
        assert sum("session.json:48" in line for line in shown.splitlines()) == 1, shown
        assert "id column not shown" in shown, shown
