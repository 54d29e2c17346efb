"""Issue #20: the TUI as a daily triage tool over SSH, one Pilot test per deliverable, on the REAL
recorded H200 sessions shipped in ``cutile_workbench/profiles/`` (matmul and silu_and_mul: real cutile-rs; rms_norm and
softmax: stand-in candidates, labelled so in the app). Each test failed on the code before issue #20.

1 layout by priority · 2 one selection followed everywhere · 3 a timeline that explains itself ·
4 pictures · 5 keys that always answer.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from pilot_wait import key_handled, until

from cutile_workbench.stages.e.stats import geomean, round4
from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.widgets.ratio_table import RatioTable

SIZES = [(80, 24), (120, 40), (160, 48)]
_CACHE: dict[str, Any] = {}


def _data(kernel: str) -> Any:
    if kernel not in _CACHE:
        _CACHE[kernel] = load_app_data(kernel, out_root=None, tilegym=None, env={})
    return _CACHE[kernel]


def screen_lines(app: Any) -> list[str]:
    """The screen as a person sees it: one string per terminal row."""
    return ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]


def config_labels(params: list[str]) -> dict[str, str]:
    from cutile_workbench.tui.widgets.ratio_table import config_labels as labels

    return labels(params)


def screen_text(app: Any) -> str:
    return "\n".join(screen_lines(app))


def notifications(app: Any) -> list[str]:
    """The notifications posted so far, as the tests read them."""
    return [str(n.message) for n in app._notifications]


def ratios_shown(app: Any) -> bool:
    """The Ratios screen is current, mounted and laid out (its header has a region): the state every
    test starts from, instead of a pause (issue #35)."""
    from cutile_workbench.tui.screens.ratios import RatiosScreen

    screen = app.screen
    return (
        isinstance(screen, RatiosScreen)
        and screen.is_mounted
        and screen.query_one("#header").region.height > 0
    )


def timeline_shows(app: Any, row: Any = None) -> bool:
    """The Timeline screen is current and shows ``row`` (any row when None), its title on screen."""
    from cutile_workbench.tui.screens.timeline import TimelineScreen

    screen = app.screen
    if not (isinstance(screen, TimelineScreen) and screen.is_mounted and screen.row is not None):
        return False
    return (row is None or screen.row == row) and screen.row.params in screen_text(app)


def rows_on_screen(app: Any) -> bool:
    """Every shown row's config label is on screen, and the highlighted row's full id (the detail line)."""
    if not ratios_shown(app):
        return False
    table = app.screen.query_one(RatioTable)
    current = table.current_row
    if not table.shown_rows or current is None:
        return False
    labels = config_labels([r.params for r in table.shown_rows])
    lines = screen_lines(app)
    return all(any(f" {labels[r.params]} " in ln for ln in lines) for r in table.shown_rows) and any(
        current.params in ln for ln in lines
    )


# ---------------------------------------------------------------------- 1 layout by priority
def test_config_labels_keep_only_the_varying_fields() -> None:
    params = [
        "True-False-False-False-2048-2048-2048-0-0-torch.float16",
        "True-True-False-False-8192-8192-8192-0-0-torch.float16",
    ]
    assert config_labels(params) == {params[0]: "False-2048-2048-2048", params[1]: "True-8192-8192-8192"}
    # different field counts: the common prefix and suffix fields go
    odd = ["static_persistent-262144-1024-torch.float16", "65536-8192-torch.float16"]
    assert config_labels(odd) == {odd[0]: "static_persistent-262144-1024", odd[1]: "65536-8192"}
    assert config_labels(["4096-1024-torch.bfloat16"]) == {
        "4096-1024-torch.bfloat16": "4096-1024-torch.bfloat16"
    }


def test_columns_drop_in_the_stated_order() -> None:
    from cutile_workbench.tui.widgets.ratio_table import fit_columns

    widths = {
        "config": 20,
        "variant": 14,
        "baseline": 8,
        "base_ms": 8,
        "cand_ms": 8,
        "ratio": 8,
        "ci": 12,
        "launches": 10,
        "sol": 8,
        "verdict": 11,
    }
    assert fit_columns(widths, 1000) == list(widths)
    kept = fit_columns(widths, 80)
    assert {"config", "ratio", "verdict"} <= set(kept)
    assert "variant" not in kept and "baseline" not in kept  # the first two to go
    assert fit_columns(widths, 10) == ["config", "ratio", "verdict"]  # never dropped


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("kernel", ["matmul", "rms_norm"])
async def test_every_row_shows_its_ratio_and_whole_verdict(kernel: str, size: tuple[int, int]) -> None:
    data = _data(kernel)
    async with make_app(data, prewarm=False).run_test(size=size) as pilot:
        await until(pilot, lambda: rows_on_screen(pilot.app), "every row and the highlighted id on screen")
        table = pilot.app.screen.query_one(RatioTable)
        labels = config_labels([r.params for r in table.shown_rows])
        lines = screen_lines(pilot.app)
        for row in table.shown_rows:
            line = next((ln for ln in lines if f" {labels[row.params]} " in ln), None)
            assert line is not None, (labels[row.params], lines)
            assert row.params not in line or labels[row.params] == row.params  # varying fields only
            ratio = "NA" if row.ratio is None else f"{row.ratio:.3f}x"
            assert ratio in line and f" {row.row_verdict} " in line + " ", line
        current = table.current_row
        assert current is not None
        assert any(current.params in ln for ln in lines), "the full id of the highlighted row is on screen"


async def test_header_full_text_one_key_away() -> None:
    data = _data("matmul")
    async with make_app(data, prewarm=False).run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: ratios_shown(pilot.app), "the Ratios screen shown")
        await pilot.press("i")
        await until(pilot, lambda: "NVIDIA H200, 580.159.04" in screen_text(pilot.app), "i shows the header")
        text = "\n".join(screen_lines(pilot.app))
        assert "NVIDIA H200, 580.159.04" in text and "recorded" in text
        assert "MIG mode, throttling not recorded" in " ".join(text.split())


# ---------------------------------------------------------------------- 2 one selection followed
async def test_variant_tab_and_filter_restate_the_geomean_of_their_rows() -> None:
    data = _data("matmul")
    async with make_app(data, prewarm=False).run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: ratios_shown(pilot.app), "the Ratios screen shown")
        table = pilot.app.screen.query_one(RatioTable)
        await pilot.press("v")
        await until(pilot, lambda: table.variant == "non_persistent", "v shows the non_persistent tab")
        rows = [r for r in data.table.rows if r.variant == "non_persistent"]
        g = round4(geomean([r.ratio for r in rows]))
        line = f"variant non_persistent (3 rows): geomean {g:.4f}x CI [0.998, 1.001]"
        # the CI is bootstrapped in a thread: wait for the line it writes, never a fixed pause
        await until(pilot, lambda: line in "\n".join(screen_lines(pilot.app)), "the variant's geomean CI")
        text = "\n".join(screen_lines(pilot.app))
        assert "E, all rows: geomean 1.3758x" in text  # E's whole-table result stays, named as E's
        await pilot.press("v", "v", "slash", *"8192", "enter")  # back to "all", then filter
        rows = [r for r in data.table.rows if "8192" in r.params]
        g = round4(geomean([r.ratio for r in rows]))
        await until(
            pilot,
            lambda: table.variant is None and table.filter_text == "8192" and table.has_focus,
            "all rows, filtered on 8192, Enter back on the table",
        )
        await until(
            pilot, lambda: "filtered (2 rows)" in screen_text(pilot.app), "the bar re-states the rows"
        )
        text = "\n".join(screen_lines(pilot.app))
        assert f"filtered (2 rows): geomean {g:.4f}x" in text


async def test_key_2_opens_the_highlighted_row() -> None:
    data = _data("matmul")
    async with make_app(data, prewarm=False).run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: ratios_shown(pilot.app), "the Ratios screen shown")
        table = pilot.app.screen.query_one(RatioTable)
        start = table.cursor_row
        await pilot.press("down", "down")
        await until(pilot, lambda: table.cursor_row == start + 2, "the cursor two rows down")
        chosen = pilot.app.screen.query_one(RatioTable).current_row
        await pilot.press("2")
        await until(
            pilot, lambda: timeline_shows(pilot.app, chosen), "2 opens the highlighted row's timeline"
        )
        assert getattr(pilot.app.screen, "row", None) == chosen
        assert "no config selected" not in "\n".join(screen_lines(pilot.app))


async def test_timeline_panel_follows_the_lane() -> None:
    data = _data("matmul")
    async with make_app(data, prewarm=False).run_test(size=(160, 48)) as pilot:

        def panel() -> str:
            return str(pilot.app.screen.query_one("#details").render())

        await until(pilot, lambda: ratios_shown(pilot.app), "the Ratios screen shown")
        await pilot.press("enter")
        await until(pilot, lambda: timeline_shows(pilot.app), "Enter opens the row's timeline")
        await pilot.press("down")
        await until(
            pilot, lambda: panel().startswith("baseline"), "down: the panel follows the baseline lane"
        )
        details = str(pilot.app.screen.query_one("#details").render())
        assert details.startswith("baseline") and "call #0" in details
        await pilot.press("down")
        await until(
            pilot, lambda: panel().startswith("candidate"), "down: the panel follows the candidate lane"
        )
        details = str(pilot.app.screen.query_one("#details").render())
        assert details.startswith("candidate") and "call #1" in details


def test_history_orders_configs_like_ratios() -> None:
    from cutile_workbench.services.history import kernel_history
    from cutile_workbench.services.stage_e import open_kernel
    from cutile_workbench.tui.widgets.ratio_table import config_sort_key

    ws = open_kernel("rms_norm", out_root=None, tilegym=None)
    configs = kernel_history(ws).configs()
    assert len(configs) > 2
    assert configs == sorted(configs, key=config_sort_key)


# ---------------------------------------------------------------------- 3 timeline explains itself
async def test_timeline_ruler_states_origin_units_and_draws_the_host_span() -> None:
    data = _data("matmul")
    async with make_app(data, prewarm=False).run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: ratios_shown(pilot.app), "the Ratios screen shown")
        await pilot.press("enter")
        await until(pilot, lambda: timeline_shows(pilot.app), "Enter opens the row's timeline")
        from cutile_workbench.tui.widgets.launch_timeline import LaunchTimeline

        tl = pilot.app.screen.query_one(LaunchTimeline)

        def drawn() -> bool:  # laid out at its width: the ruler and the first lane's bars
            return "t0=call start" in "".join(seg.text for seg in tl.render_line(0)) and "█" in "".join(
                seg.text for seg in tl.render_line(1)
            )

        await until(pilot, drawn, "the timeline drawn: its ruler and the first lane")
        ruler = "".join(seg.text for seg in tl.render_line(0))
        assert "t0=call start" in ruler and ("µs" in ruler or "ms" in ruler)
        lane = "".join(seg.text for seg in tl.render_line(1))
        assert "─" in lane and "█" in lane  # the host call span and a device launch inside it
        assert tl.zoom_mode == "fit kernels"


async def test_timeline_kernel_aggregate_one_key_away() -> None:
    data = _data("matmul")
    async with make_app(data, prewarm=False).run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: ratios_shown(pilot.app), "the Ratios screen shown")
        await pilot.press("enter")
        await until(pilot, lambda: timeline_shows(pilot.app), "Enter opens the row's timeline")
        await pilot.press("a")
        await until(pilot, lambda: "median µs" in screen_text(pilot.app), "a shows the per-kernel aggregate")
        text = "\n".join(screen_lines(pilot.app))
        assert "launches/call" in text and "median µs" in text


# ---------------------------------------------------------------------- 4 pictures
async def test_ratio_chart_has_whiskers_and_the_band() -> None:
    data = _data("matmul")
    async with make_app(data, prewarm=False).run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: ratios_shown(pilot.app), "the Ratios screen shown")
        await pilot.press("c")
        from cutile_workbench.tui.widgets.ratio_chart import RatioChart

        chart = pilot.app.screen.query_one(RatioChart)
        await until(pilot, lambda: chart.display and "95% CI" in screen_text(pilot.app), "c shows the chart")
        assert chart.display
        table = pilot.app.screen.query_one(RatioTable)
        labels = config_labels([r.params for r in table.shown_rows])
        lines = screen_lines(pilot.app)
        for row in table.shown_rows:  # one bar per config, its ratio written at the end
            assert any(
                ln.lstrip().startswith(labels[row.params])
                and f"{row.ratio:.3f}x" in ln
                and ("█" in ln or "│" in ln or "┤" in ln)
                for ln in lines
            ), (row.params, lines)
        assert any("1.05" in ln and "95% CI" in ln for ln in lines)
        assert any(ln.lstrip().startswith("cand") for ln in lines)  # the highlighted config's samples
        assert any(ln.lstrip().startswith("base") for ln in lines)


async def test_ncu_panel_shows_deltas() -> None:
    data = _data("matmul")
    async with make_app(data, prewarm=False).run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: ratios_shown(pilot.app), "the Ratios screen shown")
        table = pilot.app.screen.query_one(RatioTable)
        target = "True-True-False-False-2048-2048-2048-0-0-torch.float16"  # the REAL probe of issue #16
        for _ in range(len(table.shown_rows)):
            if table.current_row is not None and table.current_row.params == target:
                break
            await pilot.press("down")
            await key_handled(pilot)  # the cursor moved before it is read again
        await pilot.press("enter")
        await until(
            pilot,
            lambda: timeline_shows(pilot.app) and "Δ" in screen_text(pilot.app),
            "Enter opens the timeline with the probe's deltas",
        )
        text = "\n".join(screen_lines(pilot.app))
        assert "Δ" in text and "%" in text
        assert "framework" not in text  # no empty live-results table without a live run


# ---------------------------------------------------------------------- 5 keys that always answer
async def test_f1_shows_keys_as_typed() -> None:
    async with make_app(_data("matmul"), prewarm=False).run_test(size=(120, 40)) as pilot:
        from cutile_workbench.tui.modals import HelpScreen

        await until(pilot, lambda: ratios_shown(pilot.app), "the Ratios screen shown")
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(pilot.app.screen, HelpScreen), "F1 opens the help")
        keys = [k for k, _d, _t in pilot.app.screen.keys]  # type: ignore[attr-defined]
        assert "/" in keys and "slash" not in keys


SCREEN_KEYS = {"4": "report", "5": "checks"}


@pytest.mark.parametrize(
    ("keys", "says"),
    [
        (("L",), "no GPU visible"),
        (("R",), "no GPU visible"),
        (("4", "w"), "recorded session shipped in the package (read-only): copy"),
        (("5", "r"), "no TileGym checkout attached: open with --tilegym DIR"),
    ],
)
async def test_keys_say_why_not(keys: tuple[str, ...], says: str) -> None:
    async with make_app(_data("matmul"), prewarm=False).run_test(size=(120, 40)) as pilot:

        def answers() -> list[str]:  # a notification, or a modal saying it
            return [*notifications(pilot.app), getattr(pilot.app.screen, "error_text", "")]

        await until(pilot, lambda: ratios_shown(pilot.app), "the Ratios screen shown")
        for k in keys[:-1]:  # a screen key first: that screen is shown
            await pilot.press(k)
            await until(pilot, lambda k=k: pilot.app.current_mode == SCREEN_KEYS[k], f"{k} shows its screen")
        await pilot.press(keys[-1])
        await until(pilot, lambda: any(says in m for m in answers()), f"{keys[-1]} says why not")
        said = [str(n.message) for n in pilot.app._notifications]
        said += [getattr(pilot.app.screen, "error_text", "")]  # or a modal saying it
        assert any(says in m for m in said), said


async def test_palette_reaches_every_screen() -> None:
    from cutile_workbench.tui.commands import available_commands

    async with make_app(_data("matmul")).run_test(size=(120, 40)) as pilot:
        from cutile_workbench.tui.screens.history import HistoryScreen

        await until(pilot, lambda: ratios_shown(pilot.app), "the Ratios screen shown")
        await until(pilot, lambda: not pilot.app.ir_loading, "the IR load done")
        await pilot.press("6")
        await until(
            pilot,
            lambda: isinstance(pilot.app.screen, HistoryScreen) and pilot.app.screen.history is not None,
            "6 shows the History, loaded",
        )
        titles = [t for t, _h, _cb in available_commands(pilot.app, pilot.app.screen)]  # type: ignore[arg-type]
        assert "report: plan E" in titles and any(t.startswith("ratios: sort by") for t in titles)
        run = dict((t, cb) for t, _h, cb in available_commands(pilot.app, pilot.app.screen))  # type: ignore[arg-type]
        run["report: plan E"]()  # switches to the Report screen, then plans there
        await until(
            pilot,
            lambda: (
                pilot.app.current_mode == "report" and getattr(pilot.app.screen, "plan", None) is not None
            ),
            "the Report screen shown, E planned",
        )
        assert pilot.app.current_mode == "report" and pilot.app.screen.plan is not None


async def test_report_preview_scrolls_and_searches() -> None:
    async with make_app(_data("matmul"), prewarm=False).run_test(size=(80, 24)) as pilot:
        from cutile_workbench.tui.widgets.report_preview import ReportPreview

        def scroller() -> Any:
            return pilot.app.screen.query_one(ReportPreview).active_scroller()

        def laid_out() -> bool:  # E planned and shown, the active pane laid out taller than the screen
            if pilot.app.current_mode != "report" or getattr(pilot.app.screen, "plan", None) is None:
                return False
            pane = scroller()
            return pane is not None and pane.max_scroll_y > 0

        await until(pilot, lambda: ratios_shown(pilot.app), "the Ratios screen shown")
        await pilot.press("4", "e")
        await until(pilot, laid_out, "4 e: E's plan in the preview, its pane scrollable")
        preview = pilot.app.screen.query_one(ReportPreview)
        pane = preview.active_scroller()
        assert pane is not None and pane.max_scroll_y > 0
        await pilot.press("pagedown")
        await until(pilot, lambda: pane.scroll_y > 0, "pagedown scrolls the pane")
        assert pane.scroll_y > 0
        await pilot.press("end")
        await until(pilot, lambda: math.isclose(pane.scroll_y, pane.max_scroll_y), "end: the bottom")
        assert math.isclose(pane.scroll_y, pane.max_scroll_y)
        await pilot.press("home", "slash", *"geomean", "enter")

        def found() -> bool:  # the search said where, on the re-rendered raw pane scrolled to it
            pane = scroller()
            return (
                any("'geomean': line 33" in m for m in notifications(pilot.app))
                and preview.view == "raw"
                and pane is not None
                and pane.scroll_y > 0
            )

        await until(pilot, found, "the search found geomean and scrolled to it")
        pane = preview.active_scroller()  # the search re-rendered the panes (raw view, highlights)
        assert preview.view == "raw" and pane is not None
        said = [str(n.message) for n in pilot.app._notifications]
        assert any("'geomean': line 33 · 4 matching line(s)" in m for m in said), said
        assert pane.scroll_y > 0
        await pilot.press("n")
        await until(
            pilot,
            lambda: any("'geomean': line 43" in m for m in notifications(pilot.app)),
            "n: the next match",
        )
        said = [str(n.message) for n in pilot.app._notifications]
        assert any("'geomean': line 43" in m for m in said), said


async def test_history_trend_has_real_width() -> None:
    from cutile_workbench.tui.widgets.history_view import SeriesTable

    async with make_app(_data("matmul"), prewarm=False).run_test(size=(120, 40)) as pilot:
        from cutile_workbench.tui.screens.history import HistoryScreen

        def history_shown() -> bool:  # current, loaded, a config shown
            screen = pilot.app.screen
            return (
                isinstance(screen, HistoryScreen)
                and screen.is_mounted
                and not screen.loading
                and screen.history is not None
                and screen.params is not None
            )

        await until(pilot, lambda: ratios_shown(pilot.app), "the Ratios screen shown")
        await pilot.press("6")
        await until(pilot, history_shown, "6 shows the History of the config")
        table = pilot.app.screen.query_one(SeriesTable)
        assert table.row_count >= 2
        trends = [str(table.get_row_at(i)[2].plain) for i in range(table.row_count)]
        assert all(t[:24].strip() and len(t[:24].strip()) == 24 for t in trends), trends  # 24 cells, not 1
        assert all("1 run" in t or " ms" in t for t in trends), trends  # and what it is drawn from


async def test_characters_typed_ahead_of_the_filter_reach_it() -> None:
    """On a busy machine the keys typed right after ``/`` are handed to the table (focused when they
    arrived, as the app forwards them) before the ``/`` binding moves the focus to the filter; they
    came back unhandled and were lost. Simulated exactly so: forwarded key events queued at the
    table, ``/`` first."""
    from textual import events
    from textual.widgets import Input

    async with make_app(_data("rms_norm"), prewarm=False).run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: ratios_shown(pilot.app), "the Ratios screen shown")
        screen = pilot.app.screen
        table = screen.query_one(RatioTable)
        for key, char in (("slash", "/"), ("4", "4"), ("0", "0"), ("9", "9"), ("6", "6")):
            event = events.Key(key, char)
            event._set_forwarded()  # what App.on_event does before handing a key to the focused widget
            table.post_message(event)
        await until(
            pilot,
            lambda: screen.query_one("#filter", Input).value == "4096" and table.filter_text == "4096",
            "the 4 keys typed ahead reached the filter",
        )
        assert screen.query_one("#filter", Input).value == "4096"
        shown = table.shown_rows
        assert (
            shown
            and all("4096" in r.params for r in shown)
            and len(shown) < len(_data("rms_norm").table.rows)
        )
