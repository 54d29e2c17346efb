"""Pilot tests: every screen and every binding of the app, asserting state (synthetic data)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pilot_wait import key_handled, settle, until
from textual.command import CommandList, CommandPalette
from textual.css.query import NoMatches
from tui_helpers import ScriptedRunner, make_data

from cutile_workbench.model import ReportPlan
from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.commands import available_commands
from cutile_workbench.tui.modals import ConfirmModal, ErrorModal, HelpScreen
from cutile_workbench.tui.screens.irdiff import IRDiffScreen
from cutile_workbench.tui.screens.ratios import RatiosScreen
from cutile_workbench.tui.screens.report import ReportScreen
from cutile_workbench.tui.screens.timeline import TimelineScreen
from cutile_workbench.tui.widgets.audit_panel import AuditPanel
from cutile_workbench.tui.widgets.ir_diff_view import IRDiffView
from cutile_workbench.tui.widgets.launch_timeline import LaunchTimeline
from cutile_workbench.tui.widgets.ratio_table import RatioTable


def shown(app: Any, selector: str) -> str:
    """The text a widget of the current screen renders, or "" while it is not there yet."""
    try:
        return str(app.screen.query_one(selector).render())
    except NoMatches:
        return ""


def notified(app: Any, text: str) -> bool:
    """A notification posted says ``text`` (read as the tests read notifications)."""
    return any(text in str(n.message) for n in app._notifications)


def ratios_ready(app: Any) -> bool:
    """The Ratios screen is current, its table mounted with rows and focused (keys reach it)."""
    screen = app.screen
    if not isinstance(screen, RatiosScreen):
        return False
    tables = screen.query(RatioTable)
    return bool(tables) and bool(tables.first().shown_rows) and app.focused is tables.first()


def timeline_ready(app: Any) -> bool:
    """A Timeline screen is current and its timeline holds the row's lanes."""
    screen = app.screen
    if not isinstance(screen, TimelineScreen):
        return False
    tls = screen.query(LaunchTimeline)
    return bool(tls) and bool(tls.first().lanes)


def timeline_of(app: Any, params: str) -> bool:
    """The current Timeline screen shows the row whose params start with ``params``."""
    screen = app.screen
    return timeline_ready(app) and screen.row is not None and screen.row.params.startswith(params)


def selected_kind(app: Any) -> str | None:
    """The kind of the launch selected in the current screen's timeline."""
    launch = app.screen.query_one(LaunchTimeline).selected_launch
    return None if launch is None else launch.kind


def irdiff_ready(app: Any) -> bool:
    """The IR diff screen is current and its view holds the diff's hunks."""
    screen = app.screen
    if not isinstance(screen, IRDiffScreen):
        return False
    views = screen.query(IRDiffView)
    return bool(views) and views.first().hunk_count > 0


def plan_shown(app: Any) -> bool:
    """The Report screen is current and holds the plan the key asked for."""
    return isinstance(app.screen, ReportScreen) and app.screen.plan is not None


async def test_mode_keys_switch_screens_and_ctrl_q_quits() -> None:
    app = make_app(make_data())
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: ratios_ready(app), "the Ratios screen shows its table")
        assert isinstance(app.screen, RatiosScreen)
        for key, cls in (
            ("2", TimelineScreen),
            ("3", IRDiffScreen),
            ("4", ReportScreen),
            ("1", RatiosScreen),
        ):
            await pilot.press(key)
            await until(pilot, lambda cls=cls: isinstance(app.screen, cls), f"{key} opened {cls.__name__}")
            assert isinstance(app.screen, cls), key
        await pilot.press("3")
        await pilot.press("ctrl+q")
        await until(pilot, lambda: app.return_code is not None, "ctrl+q asked the app to exit")
    assert app.return_code == 0


async def test_header_names_kernel_gpu_source() -> None:
    app = make_app(make_data())
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: "rms_norm" in shown(app, "#header"), "the header names the kernel")
        header = str(app.screen.query_one("#header").render())
        assert "rms_norm" in header and "NVIDIA H200" in header and "│ synthetic │" in header


async def test_ratios_sort_reverse_slow_filter_variant() -> None:
    app = make_app(make_data())
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: ratios_ready(app), "the Ratios screen shows its table")
        table = app.screen.query_one(RatioTable)
        assert len(table.shown_rows) == 5
        await pilot.press("s")  # config -> variant
        assert table.sort_key == "variant"
        for _ in range(4):  # -> baseline, base_ms, cand_ms, ratio
            await pilot.press("s")
        assert table.sort_key == "ratio"

        def by_ratio() -> bool:
            ratios = [r.ratio for r in table.shown_rows]
            return ratios[:-1] == sorted(ratios[:-1]) and ratios[-1] is None

        await until(pilot, by_ratio, "rows sorted by ratio, NA last")
        ratios = [r.ratio for r in table.shown_rows]
        assert ratios[:-1] == sorted(ratios[:-1]) and ratios[-1] is None  # NA last
        await pilot.press("r")
        await until(pilot, lambda: table.reverse, "r reversed the sort")
        assert table.reverse and table.shown_rows[0].ratio == max(r for r in ratios if r is not None)
        await pilot.press("o")
        await until(pilot, lambda: table.slow_only, "o shows slow rows only")
        assert table.slow_only
        assert {r.row_verdict for r in table.shown_rows} == {"INVESTIGATE", "NA"}
        await pilot.press("o")
        await pilot.press("slash")
        await until(
            pilot, lambda: app.focused is not None and app.focused.id == "filter", "/ focused the filter"
        )
        assert app.focused is not None and app.focused.id == "filter"
        await pilot.press(*"wrapper")
        await until(
            pilot, lambda: "filter 'wrapper'" in shown(app, "#status"), "the status names the filter typed"
        )
        assert [r.params for r in table.shown_rows] == ["wrapper_alloc-16384-2048-torch.bfloat16"]
        status = str(app.screen.query_one("#status").render())
        assert "1/5 rows" in status and "filter 'wrapper'" in status
        await pilot.press("enter")  # back to the table, filter kept
        assert app.focused is table and table.filter_text == "wrapper"
        await pilot.press("escape")
        await until(
            pilot, lambda: table.filter_text == "" and len(table.shown_rows) == 5, "escape cleared the filter"
        )
        assert table.filter_text == "" and len(table.shown_rows) == 5
        await pilot.press("v")  # all -> first variant tab
        await until(pilot, lambda: table.variant == "static_persistent", "v shows the first variant")
        assert table.variant == "static_persistent" and len(table.shown_rows) == 4
        await pilot.press("v")
        await until(pilot, lambda: table.variant == "wrapper_alloc", "v shows the next variant")
        assert table.variant == "wrapper_alloc" and len(table.shown_rows) == 1


async def test_header_click_sorts() -> None:
    app = make_app(make_data())
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: ratios_ready(app), "the Ratios screen shows its table")
        table = app.screen.query_one(RatioTable)
        table.sort_by("cand_ms")
        assert table.sort_key == "cand_ms" and not table.reverse
        table.sort_by("cand_ms")
        assert table.reverse


async def test_enter_and_t_open_timeline_of_row() -> None:
    app = make_app(make_data())
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: ratios_ready(app), "the Ratios screen shows its table")
        await pilot.press("down", "down", "down", "down")  # wrapper_alloc row (sorted by config)
        await pilot.press("enter")
        await until(pilot, lambda: timeline_ready(app), "enter opened the row's timeline")
        screen = app.screen
        assert isinstance(screen, TimelineScreen)
        assert screen.row is not None and screen.row.params.startswith("wrapper_alloc")
        tl = screen.query_one(LaunchTimeline)
        # candidate lanes have 3 launches (memset fill + add + op), baseline lanes 1
        assert [len(ln.launches) for ln in tl.lanes[:2]] == [3, 1]
        assert tl.lanes[0].launches[0].kind == "memset"
        await pilot.press("1", "up", "t")  # the row above: configs sort numerically (4096, 8192, 16384)
        await until(
            pilot,
            lambda: timeline_of(app, "static_persistent-16384"),
            "t opened the timeline of the row above",
        )
        assert isinstance(app.screen, TimelineScreen)
        assert app.screen.row is not None and app.screen.row.params.startswith("static_persistent-16384")


async def test_timeline_keys_zoom_pan_select_details() -> None:
    app = make_app(make_data())
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: ratios_ready(app), "the Ratios screen shows its table")
        await pilot.press("down", "down", "down", "down", "enter")
        await until(pilot, lambda: timeline_ready(app), "enter opened the row's timeline")
        await settle(pilot)  # laid out at its size: the fit below reads the plot width (no worker here)
        tl = app.screen.query_one(LaunchTimeline)
        fit, fit_origin = tl.ns_per_cell, tl.origin_ns  # "fit kernels": from just before the first launch
        assert tl.zoom_mode == "fit kernels"
        await pilot.press("plus")
        assert tl.ns_per_cell == pytest.approx(fit / 2)
        await pilot.press("minus", "minus")
        assert tl.ns_per_cell == pytest.approx(fit * 2)
        await pilot.press("0")
        assert tl.ns_per_cell == pytest.approx(fit) and tl.origin_ns == fit_origin
        await pilot.press("right")
        assert tl.origin_ns > fit_origin
        await pilot.press("h")
        assert tl.origin_ns == pytest.approx(fit_origin)
        await pilot.press("tab")
        await until(pilot, lambda: selected_kind(app) == "memset", "tab selected the first launch")
        assert tl.selected_launch is not None and tl.selected_launch.kind == "memset"
        await pilot.press("tab", "tab")
        await until(
            pilot, lambda: "grid 132x1x1" in shown(app, "#details"), "the details show the selected kernel"
        )
        assert tl.selected_launch is not None and tl.selected_launch.name == "rms_norm_kernel_cutile"
        details = str(app.screen.query_one("#details").render())
        assert "grid 132x1x1" in details and "regs 255" in details and "smem 0+217088 B" in details
        await pilot.press("shift+tab")
        assert tl.selected == 1
        await pilot.press("down")
        assert tl.cursor_lane == 1 and tl.selected == 0
        await pilot.press("k")
        assert tl.cursor_lane == 0


async def test_ir_diff_keys_hunks_fold_audit_jump() -> None:
    app = make_app(make_data(ir_lines=600))
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: ratios_ready(app), "the Ratios screen shows its table")
        await pilot.press("3")
        await until(pilot, lambda: irdiff_ready(app), "3 opened the IR diff with its hunks")
        view = app.screen.query_one(IRDiffView)
        assert view.hunk_count >= 3 and view.folded
        folded_len = len(view.rows)
        await pilot.press("n")
        first = view.current_hunk
        await pilot.press("n")
        assert view.current_hunk == first + 1
        await pilot.press("N")
        assert view.current_hunk == first
        await pilot.press("right_square_bracket")
        assert view.current_hunk == first + 1
        await pilot.press("left_square_bracket")
        assert view.current_hunk == first
        await pilot.press("z")
        assert not view.folded and len(view.rows) > folded_len
        await pilot.press("z")
        assert view.folded
        c = view.cursor
        await pilot.press("down", "j")
        assert view.cursor == c + 2
        await pilot.press("up")
        assert view.cursor == c + 1
        await pilot.press("pagedown")
        assert view.cursor == c + 21
        await pilot.press("pageup")
        assert view.cursor == c + 1
        h = view.hoffset  # a hunk shown is scrolled sideways to its change (issue #34)
        await pilot.press("right")
        assert view.hoffset == h + 8
        await pilot.press("left")
        assert view.hoffset == h
        # audit: a focuses it, critical/warn rows first, Enter jumps to the row's line
        await pilot.press("a")
        audit = app.screen.query_one(AuditPanel)
        assert app.focused is audit
        sev = [i.severity for i in audit.items]
        assert sev == sorted(sev, key=lambda s: {"critical": 0, "warn": 1, "info": 2, "ok": 3}[s])
        target = next(i for i in audit.items if i.attribute == "load_view_tko")
        audit.highlighted = audit.items.index(target)
        await pilot.press("enter")
        await until(pilot, lambda: app.focused is view, "enter jumped to the diff")
        assert app.focused is view
        row = view.rows[view.cursor]
        if target.hunk is not None:  # the row jumps to its hunk
            assert view.current_hunk == target.hunk
        else:
            assert row.left_no == target.ref_line or row.right_no == target.gen_line
        await pilot.press("a")
        assert app.focused is audit
        await pilot.press("a")
        assert app.focused is view


async def test_report_plan_preview_confirm_write(tmp_path: Path) -> None:
    writes: list[ReportPlan] = []
    app = make_app(make_data(kernel_dir=tmp_path, writes=writes))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("4", "e")
        await app.workers.wait_for_complete()
        await until(pilot, lambda: plan_shown(app), "e showed the report plan")
        screen = app.screen
        assert isinstance(screen, ReportScreen) and screen.plan is not None and screen.plan.ok
        assert screen.check_action("write", ()) is True
        await pilot.press("v")  # rendered -> raw
        await until(pilot, lambda: screen.preview.view == "raw", "v shows the raw preview")
        assert screen.preview.view == "raw"
        await pilot.press("v")
        await until(pilot, lambda: screen.preview.view == "diff", "v shows the diff preview")
        assert screen.preview.view == "diff"
        assert "new file: reports/performance.md" in screen.preview.diff_for("reports/performance.md")
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), "w asked to confirm")
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("n")  # explicit no: nothing written
        await until(pilot, lambda: app.screen is screen, "n closed the confirm")
        assert writes == []
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), "w asked to confirm")
        await pilot.press("enter")  # default focus is No: Enter alone never writes
        await until(pilot, lambda: app.screen is screen, "enter closed the confirm")
        assert writes == []
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), "w asked to confirm")
        await pilot.press("y")
        await app.workers.wait_for_complete()
        await until(pilot, lambda: "exit=0" in shown(app, "#report-result"), "the write's result is shown")
        assert len(writes) == 1
        assert "wrote 1 file(s)" in screen.last_result
        assert "exit=0" in str(screen.query_one("#report-result").render())


async def test_report_refused_when_validation_fails(tmp_path: Path) -> None:
    writes: list[ReportPlan] = []
    app = make_app(make_data(kernel_dir=tmp_path, writes=writes, plan_ok=False))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4", "f")
        await app.workers.wait_for_complete()
        await until(
            pilot,
            lambda: plan_shown(app) and "REFUSED" in shown(app, "#report-status"),
            "f showed the refused plan",
        )
        screen = app.screen
        assert isinstance(screen, ReportScreen) and screen.plan is not None and not screen.plan.ok
        assert screen.check_action("write", ()) is True  # issue #20: w answers (the refusal, below)
        assert "REFUSED" in str(screen.query_one("#report-status").render())
        await pilot.press("w")
        await key_handled(pilot)  # w must open no confirm: no new state to name
        assert not isinstance(app.screen, ConfirmModal) and writes == []
        titles = [t for t, _, _ in available_commands(app, screen)]
        assert "report: write validated files…" not in titles


async def test_report_plan_error_opens_modal_naming_file(tmp_path: Path) -> None:
    from cutile_workbench.errors import InputError

    data = make_data(kernel_dir=tmp_path)

    def broken(stage: str) -> ReportPlan:
        raise InputError("invalid JSON: Expecting value", path="/x/reference/analysis.json", line=7)

    data.plan_report = broken
    app = make_app(data)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4", "e")
        await app.workers.wait_for_complete()
        await until(pilot, lambda: isinstance(app.screen, ErrorModal), "the plan error opened a modal")
        assert isinstance(app.screen, ErrorModal)
        assert "/x/reference/analysis.json:7" in app.screen.error_text
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ReportScreen), "escape closed the modal")
        assert isinstance(app.screen, ReportScreen)


async def test_f1_help_lists_screen_keys() -> None:
    app = make_app(make_data())
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: ratios_ready(app), "the Ratios screen shows its table")
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "f1 opened the help")
        assert isinstance(app.screen, HelpScreen)
        keys = {k for k, _, _ in app.screen.keys}
        assert {"/", "s", "o"} <= keys or {"slash", "s", "o"} <= keys
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, RatiosScreen), "escape closed the help")
        assert isinstance(app.screen, RatiosScreen)


async def test_palette_commands_follow_state() -> None:
    app = make_app(make_data())
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: ratios_ready(app), "the Ratios screen shows its table")
        titles = [t for t, _, _ in available_commands(app, app.screen)]
        assert all(": " in t for t in titles)
        assert "ratios: sort by ratio" in titles
        assert "live: re-run selected config" not in titles  # no runner
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette), "ctrl+p opened the palette")
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"sort by ratio")

        def sort_by_ratio_highlighted() -> bool:
            """the palette's search (a worker) has listed and highlighted the command: never a fixed pause"""
            hits = app.screen.query_one(CommandList)
            return hits.highlighted is not None and "sort by ratio" in str(
                hits.get_option_at_index(hits.highlighted).prompt
            )

        await until(pilot, sort_by_ratio_highlighted, "the palette highlights 'sort by ratio'")
        await pilot.press("enter")
        await until(
            pilot,
            lambda: ratios_ready(app) and app.screen.table.sort_key == "ratio",
            "the command sorted by ratio",
        )
        screen = app.screen
        assert isinstance(screen, RatiosScreen) and screen.table.sort_key == "ratio"
    app2 = make_app(make_data(runner=ScriptedRunner([])))
    async with app2.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: ratios_ready(app2), "the Ratios screen shows its table")
        titles = [t for t, _, _ in available_commands(app2, app2.screen)]
        assert "live: re-run selected config" in titles


async def test_live_key_without_runner_says_why() -> None:
    app = make_app(make_data())
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: ratios_ready(app), "the Ratios screen shows its table")
        assert app.screen.check_action("live_rerun", ()) is True  # issue #20: the key answers
        await pilot.press("L")
        await until(pilot, lambda: notified(app, "no GPU visible"), "L said why it cannot run")
        assert isinstance(app.screen, RatiosScreen)
        assert any("no GPU visible" in str(n.message) for n in app._notifications)


async def test_bad_data_problem_notifies_with_file_and_line() -> None:
    from cutile_workbench.errors import InputError

    data = make_data()
    data.problems.append(
        InputError(
            "invalid JSON: Expecting ',' [bold]x[/]", path="/o/rms_norm/workbench/session.json", line=3
        )
    )
    app = make_app(data)

    def notified() -> bool:  # waits for the notification itself, not for a pause (issue #35)
        msgs = [str(n.message) for n in app._notifications]
        return any("/o/rms_norm/workbench/session.json:3" in m and "[bold]x[/]" in m for m in msgs)

    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, notified, "the load problem notified with its file and line")


async def test_markup_in_user_strings_is_not_interpreted() -> None:
    from dataclasses import replace

    data = make_data()
    assert data.table is not None
    evil = replace(data.table.rows[0], params="[bold red]boom[/]-1-2")
    data.table.rows[0] = evil
    data.kernel = "rms_norm[/]"
    app = make_app(data)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: ratios_ready(app), "the Ratios screen shows its table")
        table = app.screen.query_one(RatioTable)
        assert any(r.params == "[bold red]boom[/]-1-2" for r in table.shown_rows)
        assert "rms_norm[/]" in str(app.screen.query_one("#header").render())
