"""Issue #34: the TUI under a fast typist, on the REAL recorded matmul session (6 configs, H200).

A fast typist (or a busy node) delivers several keys in one read from the terminal: the app gets
them back to back, before the messages the first ones caused (a cursor move's RowHighlighted, a
plan worker's result) have run. :func:`type_fast` reproduces that in Pilot by handing every key to
the app's queue at once; ``pilot.press`` instead lets the app go idle after each key, which hides
these races. Each test waits for the state it asserts (:func:`settle`, :func:`until`), never for
a fixed pause. Each failed on the code before issue #34, except
:func:`test_a_screen_key_in_the_first_frame_opens_that_screen` (the crash it guards against came from
pushing a whole frame to a real terminal, which a headless Pilot app never did; the code that
did it is gone, which :func:`test_the_tui_uses_no_private_textual_api` pins).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from pilot_wait import settle, type_fast, until
from textual import events

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.screens.history import HistoryScreen
from cutile_workbench.tui.screens.irdiff import IRDiffScreen
from cutile_workbench.tui.screens.ratios import RatiosScreen
from cutile_workbench.tui.screens.report import ReportScreen
from cutile_workbench.tui.screens.timeline import TimelineScreen
from cutile_workbench.tui.widgets.ratio_table import RatioTable
from cutile_workbench.tui.widgets.report_preview import VIEWS, ReportPreview

#: matmul's rows sorted by config (the default): row 3 is static_persistent 2048^3, ratio 2.040x
ROW3 = "True-True-False-False-2048-2048-2048-0-0-torch.float16"


def _matmul() -> Any:
    return load_app_data("matmul", out_root=None, tilegym=None, env={})


async def _started(pilot: Any) -> RatioTable:
    await settle(pilot)  # the IR pairs' worker done: nothing else is loading
    app = pilot.app
    assert isinstance(app.screen, RatiosScreen)
    return app.screen.query_one(RatioTable)


# ---------------------------------------------------------------------- wrong row
@pytest.mark.parametrize("key", ["2", "3"])
async def test_moves_typed_before_a_screen_key_pick_the_row_it_opens(key: str) -> None:
    """↓↓↓3 / ↓↓↓2 typed quickly opened row 0 (0.999x) while Ratios ended on the 2.040x row."""
    app = make_app(_matmul())
    async with app.run_test(size=(160, 48)) as pilot:
        table = await _started(pilot)
        type_fast(pilot, "down", "down", "down", key)
        await settle(pilot)
        assert table.current_row is not None and table.current_row.params == ROW3
        screen = app.screen
        if key == "2":
            assert isinstance(screen, TimelineScreen)
            assert screen.row is not None and screen.row.params == ROW3
        else:
            assert isinstance(screen, IRDiffScreen)
            pair = app.data.ir_pairs[screen.pair_index]
            assert pair.config == ROW3 or pair.name == "static_persistent", pair.name


async def test_the_config_picked_on_history_is_the_one_2_and_3_open() -> None:
    """History ``c`` moved to another config, but ``2``/``3`` opened the one highlighted on Ratios."""
    app = make_app(_matmul())
    async with app.run_test(size=(160, 48)) as pilot:
        table = await _started(pilot)
        first = table.current_row
        assert first is not None
        await pilot.press("6")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen.params is not None)
        history = app.screen
        assert isinstance(history, HistoryScreen) and history.params == first.params
        await pilot.press("c")
        await settle(pilot)
        picked = history.params
        assert picked is not None and picked != first.params
        await pilot.press("2")
        await settle(pilot)
        assert isinstance(app.screen, TimelineScreen)
        assert app.screen.row is not None and app.screen.row.params == picked
        await pilot.press("1")  # Ratios follows too: its cursor is on the config picked
        await settle(pilot)
        assert table.current_row is not None and table.current_row.params == picked


# ---------------------------------------------------------------------- Report races
async def _on_report(pilot: Any) -> ReportScreen:
    await _started(pilot)
    await pilot.press("4")
    await until(pilot, lambda: isinstance(pilot.app.screen, ReportScreen))
    screen = pilot.app.screen
    assert isinstance(screen, ReportScreen)
    return screen


def _pane_ids(preview: ReportPreview) -> list[str]:
    from textual.widgets import TabPane

    return [p.id or "" for p in preview.query(TabPane)]


@pytest.mark.parametrize("keys", [("e", "v", "v", "v"), ("f", "v"), ("e", "v", "v", "v", "v", "v", "v")])
async def test_view_keys_typed_quickly_rebuild_the_preview_once_each(keys: tuple[str, ...]) -> None:
    """``v v v`` or ``f v`` typed quickly crashed with DuplicateIds (two rebuilds at once)."""
    app = make_app(_matmul())
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _on_report(pilot)
        if keys[0] == "e":  # a plan first, then the storm of view switches
            await pilot.press("e")
            await until(pilot, lambda: screen.plan is not None, "stage E planned")
            keys = keys[1:]
        type_fast(pilot, *keys)
        views = sum(1 for k in keys if k == "v")
        if keys[0] == "f":  # v while F is being planned does nothing: there is no preview to switch
            views = 0
        want = VIEWS[views % len(VIEWS)]
        preview = screen.preview
        await settle(pilot)
        await until(
            pilot,
            lambda: not preview.busy and preview.shown is not None and preview.shown == (screen.plan, want),
            f"the plan shown in the {want} view",
        )
        assert screen.plan is not None
        ids = _pane_ids(screen.preview)
        assert len(ids) == len(set(ids)) == len(screen.plan.files) + 1, ids
    assert app.return_code in (None, 0)


async def test_the_plan_shown_is_the_plan_w_writes() -> None:
    """``e f v`` typed quickly left the E preview on screen while ``w`` offered to write stage F:
    E's plan, asked first, was answered last. Here E's planning waits until F's is done (a busy
    node's order, made certain)."""
    data = _matmul()
    real = data.plan_report
    assert real is not None
    f_planned = threading.Event()

    def plan(stage: str) -> Any:
        if stage == "E":
            f_planned.wait(60)  # a bound against a hang only: F is asked right after E
        out = real(stage)
        if stage == "F":
            f_planned.set()
        return out

    data.plan_report = plan
    app = make_app(data)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _on_report(pilot)
        type_fast(pilot, "e", "f", "v")
        await settle(pilot)
        await until(pilot, lambda: screen.plan is not None, "a plan shown")
        assert screen.plan is not None and screen.plan.stage == "F"
        preview = screen.preview
        assert preview.plan is screen.plan
        banner = str(preview.query_one("#banner").render())
        assert banner.startswith("stage F"), banner
        status = str(screen.query_one("#report-status").render())
        assert status.startswith("stage F"), status
        await until(pilot, lambda: not preview.busy and preview.shown == (screen.plan, preview.view))


async def test_a_new_plan_clears_the_last_write_result(tmp_path: Any) -> None:
    """Planning F kept showing "planning…" next to the old E write result."""
    from tui_helpers import make_data

    app = make_app(make_data(kernel_dir=tmp_path), initial_mode="report")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReportScreen)
        await pilot.press("e")
        await until(pilot, lambda: screen.plan is not None, "stage E planned")
        await pilot.press("w")
        await until(pilot, lambda: type(app.screen).__name__ == "ConfirmModal")
        await pilot.press("y")
        await until(pilot, lambda: bool(screen.last_result), "stage E written")
        result = screen.query_one("#report-result")
        assert not result.has_class("hidden")
        await pilot.press("f")
        await settle(pilot)
        await until(pilot, lambda: screen.plan is not None and screen.plan.stage == "F", "stage F planned")
        assert result.has_class("hidden") and screen.last_result == ""


# ---------------------------------------------------------------------- loading model
async def test_screens_mount_on_first_visit_only() -> None:
    """The app pre-warmed every screen on the UI thread after the first paint (~20 s of a loaded
    box during which keys waited); a screen is now built when it is first shown."""
    app = make_app(_matmul())
    async with app.run_test(size=(80, 24)) as pilot:
        await _started(pilot)
        assert set(app.mode_screens()) == {"ratios"}
        await pilot.press("6")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        assert set(app.mode_screens()) == {"ratios", "history"}


async def test_a_screen_key_in_the_first_frame_opens_that_screen() -> None:
    """``6`` pressed before the first paint settled crashed the app about 30 s later (a whole
    frame pushed for a screen still being built). Here the key is queued before the app has
    handled anything."""
    app = make_app(_matmul())
    async with app.run_test(size=(80, 24)) as pilot:
        app.post_message(events.Key("6", "6"))
        await settle(pilot)
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        await pilot.press("1")
        await until(pilot, lambda: isinstance(app.screen, RatiosScreen))
    assert app.return_code in (None, 0)


def test_the_tui_uses_no_private_textual_api() -> None:
    """The loading model works with Textual, not around it (issue #34 item 1)."""
    from pathlib import Path

    import cutile_workbench.tui as tui

    private = ("._display(", "._compositor", "_batch_count", "._screen_stacks")
    hits = [
        f"{path.name}: {name}"
        for path in Path(tui.__file__).parent.rglob("*.py")
        for name in private
        if name in path.read_text(encoding="utf-8")
    ]
    assert hits == []


async def test_w_typed_while_the_plan_is_built_asks_once_it_is_shown(tmp_path: Any) -> None:
    """A person reads "validators pass: w writes" in the preview's banner (shown while the plan is
    still being committed) and types ``w`` at once: the key was dropped with a toast (the tmux drive
    failed on it). Now it is kept in order: the write is asked, confirmation first, once that plan
    is shown; a new plan request cancels it. Planning is held until ``w`` is typed (a busy node's
    order, made certain)."""
    import shutil
    from pathlib import Path

    from cutile_workbench.tui.modals import ConfirmModal

    recorded = Path(__file__).resolve().parents[2] / "cutile_workbench/profiles/tilegym/session/matmul"
    shutil.copytree(recorded, tmp_path / "matmul")
    data = load_app_data("matmul", out_root=tmp_path, tilegym=None, env={})
    real = data.plan_report
    assert real is not None and data.write_report is not None
    typed = threading.Event()

    def plan(stage: str) -> Any:
        typed.wait(60)  # a bound against a hang only: w is typed right after e
        return real(stage)

    data.plan_report = plan
    app = make_app(data)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _on_report(pilot)
        type_fast(pilot, "e", "w")
        await until(pilot, lambda: screen.write_pending, "w kept while planning")
        typed.set()
        await settle(pilot)
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), "the write asked")
        assert screen.plan is not None and screen.plan.stage == "E"
