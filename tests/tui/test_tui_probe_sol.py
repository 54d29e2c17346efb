"""Pilot tests: the Timeline's ncu probe panel and the Ratios screen's SOL column, on REAL data.

- REAL: the recorded silu_and_mul and matmul sessions (cutile_workbench/profiles/tilegym/session, H200 2026-12-01) and
  the REAL ncu CSVs of tests/fixtures/f (silu_and_mul 64-1024-4096 fp16, both sides), filed into a
  copy of the silu session through ``services.probe.file_csv`` exactly as ``probe --csv`` does.
- SOL: the work models of f_evidence.sol at the recorded medians against the H200's measured peaks.

The tests wait for the state they assert (``pilot_wait``), never for a fixed pause (issue #35).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from pilot_wait import drain, settle, until
from rich.text import Text
from textual.widgets import DataTable, Static

from cutile_workbench.services import probe as probe_service
from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.screens.ratios import RatiosScreen
from cutile_workbench.tui.screens.timeline import TimelineScreen
from cutile_workbench.tui.widgets.ratio_table import RatioTable, sol_text, visible_rows

HERE = Path(__file__).parent.parent
SESSION = HERE.parent / "cutile_workbench" / "profiles" / "tilegym" / "session"
FIX = HERE / "fixtures" / "f"
PROBED = "64-1024-4096-torch.float16"


@pytest.fixture()
def silu_with_probes(tmp_path: Path) -> Path:
    root = tmp_path / "out"
    shutil.copytree(SESSION / "silu_and_mul", root / "silu_and_mul")
    tg = tmp_path / "tilegym" / "tests" / "ops"
    tg.mkdir(parents=True)
    shutil.copyfile(
        FIX / "tilegym_75a1430" / "tests" / "ops" / "test_silu_and_mul.py", tg / "test_silu_and_mul.py"
    )
    for backend, name in (("cutile-rs", "cutile_rs"), ("cutile", "cutile")):
        plan = probe_service.plan_probe(
            probe_service.ProbeRequest(
                "silu_and_mul", PROBED, out_root=root, tilegym=tmp_path / "tilegym", backends=(backend,)
            ),
            env={},
        )
        probe_service.file_csv(plan, plan.sides[0], FIX / f"ncu_silu_and_mul_{name}.csv.log")
    return root


def _cells(table: DataTable, row: int) -> list[str]:
    return [c.plain if isinstance(c, Text) else str(c) for c in table.get_row_at(row)]


def _ratios_shown(app: Any) -> bool:
    """The Ratios screen is current and mounted, its table filled."""
    screen = app.screen
    return (
        isinstance(screen, RatiosScreen)
        and screen.is_mounted
        and bool(screen.query_one(RatioTable).shown_rows)
    )


def _timeline_of(app: Any, probed: bool) -> bool:
    """The Timeline is current and mounted, every typed key handled, showing the probed config
    (``probed``) or another one."""
    screen = app.screen
    return (
        isinstance(screen, TimelineScreen)
        and screen.is_mounted
        and not app.keys_pending
        and screen.row is not None
        and (screen.row.params == PROBED) is probed
    )


async def test_timeline_shows_the_filed_probe_side_by_side(silu_with_probes: Path) -> None:
    data = load_app_data("silu_and_mul", out_root=silu_with_probes, tilegym=None, env={})
    assert data.problems == [] and {k[0] for k in data.probes} == {"cutile_rs", "cutile"}
    app = make_app(data)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: _ratios_shown(app), "the Ratios table first")
        rows = app.screen.query_one(RatioTable).shown_rows
        await pilot.press(*["down"] * [r.params for r in rows].index(PROBED), "enter")
        await until(pilot, lambda: _timeline_of(app, probed=True), "Enter shows the probed config's Timeline")
        screen = app.screen
        assert isinstance(screen, TimelineScreen) and screen.row is not None and screen.row.params == PROBED
        table = screen.query_one("#probe", DataTable)
        assert table.display and not table.has_class("hidden") and table.row_count == 13
        # candidate, then reference, then the difference (issue #20)
        assert _cells(table, 0) == ["time", "382.72us", "397.73us", "-3.8%"]
        assert _cells(table, 9) == ["regs", "104", "126", "-17.5%"]
        assert "ncu probe" in str(screen.query_one("#probe-title", Static).render())
        # another config has no probe: the panel says how to get one
        await pilot.press("1", "up", "t")
        await until(pilot, lambda: _timeline_of(app, probed=False), "t shows another config's Timeline")
        screen = app.screen
        assert isinstance(screen, TimelineScreen) and screen.row is not None and screen.row.params != PROBED
        assert screen.query_one("#probe", DataTable).has_class("hidden")
        hint = str(screen.query_one("#probe-title", Static).render())
        assert f"cutile-workbench probe silu_and_mul --config {screen.row.params}" in hint


async def test_narrow_timeline_shows_the_probe_panel(silu_with_probes: Path) -> None:
    app = make_app(load_app_data("silu_and_mul", out_root=silu_with_probes, tilegym=None, env={}))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: _ratios_shown(app), "the Ratios table first")
        rows = app.screen.query_one(RatioTable).shown_rows
        await pilot.press(*["down"] * [r.params for r in rows].index(PROBED), "enter")
        # the Timeline is built on first visit: wait for it to show the probed config (issue #35)
        await until(pilot, lambda: _timeline_of(app, probed=True), "Enter shows the probed config's Timeline")
        await settle(pilot)
        probe = app.screen.query_one("#probe", DataTable)
        # issue #20: at 80 columns the panel sits beside the details, under the lanes (it was hidden)
        assert probe.row_count == 13 and 0 < probe.region.width and probe.region.right <= 80
        assert app.screen.query_one("#details").region.width <= 80


async def test_ratios_sol_column_on_the_real_matmul_session() -> None:
    """The recorded matmul session opened with no checkout: the shape names ship with it."""
    data = load_app_data("matmul", out_root=None, tilegym=None, env={})
    assert len(data.sol) == 6
    app = make_app(data)
    async with app.run_test(size=(200, 40)) as pilot:
        await until(pilot, lambda: _ratios_shown(app), "the Ratios table first")
        table = app.screen.query_one(RatioTable)
        col = [c.key for c in table.visible_columns()].index("sol")
        by = {r.params: _cells(table, i)[col] for i, r in enumerate(table.shown_rows)}
        # static_persistent 2048^3 carries the REAL ncu probe (call 5): its rate wins over E's medians —
        # 2*2048^3 FLOP in 47.94 us (cutile-rs) vs 25.41 us (cuTile) at the fp16 peak of gpu.md
        assert by["True-True-False-False-2048-2048-2048-0-0-torch.float16"] == "45%/86%"
        assert by["True-False-False-False-8192-8192-8192-0-0-torch.float16"] == "93%/93%"
        table.sort_by("sol")
        await until(
            pilot,
            lambda: table.shown_rows[0].params == "True-True-False-False-2048-2048-2048-0-0-torch.float16",
            "sorted by SOL",
        )
        assert table.shown_rows[0].params == "True-True-False-False-2048-2048-2048-0-0-torch.float16"
    async with make_app(data).run_test(size=(80, 24)) as pilot:  # narrow: compact columns
        await until(
            pilot,
            lambda: _ratios_shown(pilot.app) and pilot.app.screen.query_one(RatioTable).compact,
            "the narrow Ratios table's compact columns",
        )
        await drain(pilot)  # its layout made: the regions below are read
        table = pilot.app.screen.query_one(RatioTable)
        # at 80 columns the identity mark (issue 18, never dropped) costs SOL its place in the row;
        # the highlighted row's SOL stays on screen in the detail line under the table
        keys = [c.key for c in table.visible_columns()]
        assert table.compact and {"config", "ratio", "verdict", "id"} <= set(keys)
        detail = str(pilot.app.screen.query_one("#detail").render())
        assert "SOL " in detail and "%" in detail
        assert pilot.app.screen.region.width == 80


def test_sol_text_and_sort_without_a_model() -> None:
    data = load_app_data("matmul", out_root=None, tilegym=None, env={})
    assert data.table is not None
    assert sol_text(None) == "—"
    rows = data.table.rows
    some = {k: v for k, v in data.sol.items() if "8192" not in k[1]}  # the 8192 rows: no model here
    shown = visible_rows(rows, sort_key="sol", sol=some)
    assert [("8192" in r.params) for r in shown] == [False] * 4 + [True] * 2  # no value sorts last
