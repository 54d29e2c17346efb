"""Issue 31 item 3 / issue #34 item 1: the app paints the ratios first, the rest fills in from a worker.

``cutile-workbench <kernel>`` opens with what is cheap (every row's medians and ratio: the logs parsed
and matched, no bootstrap, no capture read) and loads the rest of the session (CIs, identities, SOL,
conditions, launches, probes) in a thread worker after the first frame. Until it is in, the cells
it fills say so ("…", never a blank or "—" that reads as "none"), the status line says what is
loading, and typed keys wait (in order) to run against the full session; ``q`` and Ctrl+Q still quit.

The full load is held on a ``threading.Event`` here, so each state is looked at while it lasts:
STATE, not time (pilot_wait.until / poll). Real data: the embedded recorded matmul session.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data, quick_app_data
from cutile_workbench.tui.widgets.ratio_table import COLUMN_KEYS, RatioTable
from cutile_workbench.tui.widgets.ratio_table import PENDING_CELL as PENDING_TEXT
from tests.tui.pilot_wait import drain, poll, settle, until


def _quick(loader: Any = None) -> Any:
    data = quick_app_data("matmul", out_root=None, tilegym=None)
    assert data is not None, "the embedded session has a candidate log: the quick path applies"
    if loader is not None:
        data.full_loader = loader
    return data


def test_quick_rows_are_the_full_tables_medians_and_ratios_with_the_ci_pending() -> None:
    quick = _quick()
    full = load_app_data("matmul", out_root=None, tilegym=None)
    assert quick.table is not None and full.table is not None
    assert [(r.params, r.candidate_ms, r.baseline_ms, r.ratio, r.row_verdict) for r in quick.table.rows] == [
        (r.params, r.candidate_ms, r.baseline_ms, r.ratio, r.row_verdict) for r in full.table.rows
    ]
    assert quick.table.geomean == full.table.geomean
    assert all(r.ci_low is None and r.ci_high is None for r in quick.table.rows)
    assert {"ci", "id", "sol"} <= set(quick.pending)
    assert quick.full_loader is not None and not full.pending and full.full_loader is None


def test_the_full_load_reuses_the_quick_opens_session_each_log_parsed_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cutile_workbench.artifacts.perflog import parser

    parser._MEMO.clear()
    calls: list[str] = []
    real = parser._parse

    def counting(src: str, *args: Any) -> Any:
        calls.append(src)
        return real(src, *args)

    monkeypatch.setattr(parser, "_parse", counting)
    quick = _quick()
    assert quick.full_loader is not None
    full = quick.full_loader()
    assert full.table is not None and full.trust is not None
    assert len(calls) == len(set(calls)), f"a perf log parsed twice: {calls}"
    # what is keyed on E's table key (the row records' cache entry) is the default table's, the one
    # the CLI finds, and the quick table's n_boot=0 copy is not kept beside it
    session = quick.full_loader.keywords["session"]  # type: ignore[attr-defined]
    assert session.any_e_table().key == session.e_table().key
    assert not any(isinstance(k, tuple) and k[1:] == (0, 0) for k, _ in session._facts())


@pytest.mark.asyncio
async def test_ratios_first_then_the_rest_keys_wait_and_run_in_order() -> None:
    gate = threading.Event()
    started = threading.Event()
    base = _quick()
    full_loader = base.full_loader
    assert full_loader is not None

    def held() -> Any:
        started.set()
        gate.wait(timeout=300)
        return full_loader()

    app = make_app(_quick(held))
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await poll(pilot, started.is_set, "the full load started in its worker")
            table = app.screen.query_one(RatioTable)
            await until(pilot, lambda: table.row_count > 0, "the quick rows are in the table")
            assert app.session_loading
            ci = COLUMN_KEYS.index("ci")
            texts = [
                str(
                    table.get_row_at(i)[
                        table.ordered_columns.index(
                            next(c for c in table.ordered_columns if str(c.key.value) == "ci")
                        )
                    ]
                )
                for i in range(table.row_count)
            ]
            assert texts and all(t == PENDING_TEXT for t in texts), texts
            assert ci >= 0
            status = str(app.screen.query_one("#status").render())
            assert "loading" in status, status
            from cutile_workbench.tui.widgets.severity_bar import SeverityBar

            await pilot.resize_terminal(100, 30)  # a resize while loading: the table re-fits, rebuilds
            for _ in range(5):  # the queues drained (the load is held: no worker to wait for)
                await drain(pilot)
            assert "CI … computing" in app.screen.query_one(SeverityBar).summary_text()
            await pilot.press("s")  # typed while loading: held, runs against the full session
            assert table.sort_key == "config"
            assert app.keys_pending >= 1
            gate.set()
            await until(pilot, lambda: not app.session_loading, "the full session is in")
            await settle(pilot)
            table = app.screen.query_one(RatioTable)  # the screen was rebuilt from the full session
            assert table.sort_key != "config", "the held key ran after the load"
            cells = [str(c) for i in range(table.row_count) for c in table.get_row_at(i)]
            assert PENDING_TEXT not in cells
            assert app.data.trust is not None and app.data.table is not None
            assert all(r.ci_low is not None for r in app.data.table.rows if r.status == "OK")
            assert "loading" not in str(app.screen.query_one("#status").render())
            assert "CI [" in app.screen.query_one(SeverityBar).summary_text()
    finally:
        gate.set()  # a failed assertion must not leave the load (and the test) waiting


@pytest.mark.asyncio
async def test_a_failed_full_load_is_shown_and_the_quick_rows_stay() -> None:
    def broken() -> Any:
        raise RuntimeError("disk went away")

    app = make_app(_quick(broken))
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: not app.session_loading, "the failed load ended the loading state")
        await settle(pilot)
        shown = (
            " ".join(str(n.message) for n in app._notifications)
            + " "
            + " ".join(str(w.render()) for w in app.screen.query("Static"))
        )
        assert "disk went away" in shown
        table = app.screen.query_one(RatioTable)
        assert table.row_count > 0
        await pilot.press("s")
        await settle(pilot)
        assert table.sort_key != "config", "keys are released after a failed load"


@pytest.mark.asyncio
async def test_q_quits_while_the_session_loads() -> None:
    gate = threading.Event()

    def held() -> Any:
        gate.wait(timeout=300)
        raise RuntimeError("not needed")

    app = make_app(_quick(held))
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, lambda: app.screen.query_one(RatioTable).row_count > 0, "quick rows")
            await pilot.press("q")
            await poll(pilot, lambda: app.return_code is not None, "q quit while loading")
    finally:
        gate.set()


def test_no_quick_screen_without_a_ratio_table_or_with_gpus(tmp_path: Any) -> None:
    """Where no table can be built (no candidate log) the full load states why; with --gpus a bad
    selection must exit 2 before the app opens: both load everything first (None here)."""
    import shutil
    from pathlib import Path

    from cutile_workbench.tui.loaders import load_app_data

    src = (
        Path(__file__).resolve().parents[2]
        / "cutile_workbench"
        / "profiles"
        / "tilegym"
        / "session"
        / "matmul"
    )
    out = Path(tmp_path) / "out"
    shutil.copytree(src, out / "matmul")
    assert quick_app_data("matmul", out_root=out, tilegym=None, env={}, gpus="0,1") is None
    for log in [
        *out.glob("matmul/perf_cutile_rs*.txt"),
        *out.glob("matmul/reports/agent_logs/perf_cutile_rs*"),
    ]:
        log.unlink()
    assert quick_app_data("matmul", out_root=out, tilegym=None, env={}) is None
    full = load_app_data("matmul", out_root=out, tilegym=None, env={})
    assert full.table is None and not full.pending
