"""History screen (mode 6) and the Ratios header's comparability flag, driven with Pilot.

REAL: the recorded cutile-rs matmul session (``cutile_workbench/profiles/tilegym/session/matmul``), loaded as the app
loads it (``load_app_data``). SYNTHETIC (labelled per test): follow-up runs derived from its real
samples (``history_helpers.matmul_with_followups``), a session.json edited to another driver, and
hand-written provenance events; the synthetic ``tui_helpers.make_data`` where no history exists.
The apps run without the start-up pre-warm: the History screen mounts (and loads) on its key. The
tests wait for the state they assert (``pilot_wait``), never for a fixed pause (issue #35).
"""

from __future__ import annotations

import json
from pathlib import Path

from history_helpers import NP_4096, SP_2048, copy_matmul, matmul_with_followups, provenance, utc
from pilot_wait import drain, key_handled, until
from test_history_faces import _provenance_events
from textual.widgets import Static
from tui_helpers import make_data

from cutile_workbench.errors import InputError
from cutile_workbench.history.store import HISTORY_FILE
from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.catalog import known_bindings
from cutile_workbench.tui.commands import available_commands
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.screens.history import HistoryScreen
from cutile_workbench.tui.screens.ratios import RatiosScreen
from cutile_workbench.tui.widgets.history_view import ProvenancePanel, RunsTable, SeriesTable, provenance_text
from cutile_workbench.tui.widgets.ratio_table import RatioTable


def _ratios_shown(app) -> bool:  # type: ignore[no-untyped-def]
    """The Ratios screen is current, mounted and laid out (its header has a region)."""
    screen = app.screen
    return (
        isinstance(screen, RatiosScreen)
        and screen.is_mounted
        and screen.query_one("#header").region.height > 0
    )


def _history_shown(app) -> bool:  # type: ignore[no-untyped-def]
    """The History screen is current and mounted, its history loaded and a config shown."""
    screen = app.screen
    return (
        isinstance(screen, HistoryScreen)
        and screen.is_mounted
        and not screen.loading
        and screen.history is not None
        and screen.params is not None
    )


async def _select(pilot, app, params: str) -> None:  # type: ignore[no-untyped-def]
    await until(pilot, lambda: _ratios_shown(app), "the Ratios screen first")
    table = app.screen.query_one(RatioTable)
    for _ in range(len(table.shown_rows)):
        if table.current_row is not None and table.current_row.params == params:
            return
        await pilot.press("down")
        await key_handled(pilot)  # the cursor moved before it is read again
    raise AssertionError(f"{params} not on the Ratios screen")


def _panel(app) -> str:  # type: ignore[no-untyped-def]
    screen = app.screen
    series = screen.query_one(SeriesTable).current_series
    return provenance_text(series.label if series else "", screen.query_one(RunsTable).current_run).plain


async def test_history_follows_the_ratios_selection_on_the_recorded_session() -> None:
    """REAL: key 6 shows the highlighted config's runs (candidate first) with their GPU and provenance."""
    data = load_app_data("matmul", out_root=None, tilegym=None, env={})
    app = make_app(data, prewarm=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await _select(pilot, app, SP_2048)
        await pilot.press("6")
        await until(pilot, lambda: _history_shown(app), "6 shows the History of the config")
        screen = app.screen
        assert isinstance(screen, HistoryScreen) and screen.params == SP_2048
        series = screen.query_one(SeriesTable).series
        assert [(s.label, s.role, len(s.runs)) for s in series] == [
            ("cutile-rs", "candidate", 1),
            ("cutile", "baseline", 1),
        ]
        run = screen.query_one(RunsTable).current_run
        assert run is not None and run.median_ms == 0.049089 and run.n_samples == 371 and run.change is None
        panel = _panel(app)
        for fact in (
            "GPU             NVIDIA H200",
            "driver          580.159.04",
            "clocks SM/mem   not recorded",
            "throttling      not recorded",
            "harness         workbench",
            "recorded        2026-12-01 09:20 UTC",
        ):
            assert fact in panel, fact
        status = str(screen.query_one("#history-status", Static).render())
        assert "recorded session imported in memory (nothing written)" in status
        # the baseline's runs with b, back on Ratios another config re-targets the screen
        await pilot.press("b")
        await until(
            pilot,
            lambda: getattr(screen.query_one(RunsTable).current_run, "median_ms", None) == 0.024064,
            "b shows the baseline's run",
        )
        assert screen.query_one(RunsTable).current_run.median_ms == 0.024064  # type: ignore[union-attr]
        await pilot.press("1", "up", "6")
        await until(
            pilot,
            lambda: _history_shown(app) and app.screen.params != SP_2048 and not app.keys_pending,
            "back on History with another config",
        )
        assert app.screen.params == app.selected_row.params != SP_2048  # type: ignore[attr-defined, union-attr]


async def test_runs_flags_and_provenance_of_a_series(tmp_path: Path) -> None:
    """SYNTHETIC follow-ups of the REAL matmul run: improvement, then a regression after a driver update
    on a power-capped GPU; c steps configs, r reloads (a live run appends) and keeps the config."""
    matmul_with_followups(tmp_path)
    data = load_app_data("matmul", out_root=tmp_path, tilegym=None, env={})
    app = make_app(data, prewarm=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await _select(pilot, app, SP_2048)
        await pilot.press("6")
        await until(pilot, lambda: _history_shown(app), "6 shows the History of the config")
        screen = app.screen
        runs = screen.query_one(RunsTable).runs
        assert [r.change for r in runs] == [None, "improvement", "regression"]
        assert screen.query_one(RunsTable).current_run is runs[-1]  # the newest first in view
        panel = _panel(app)
        assert "+ regression ×1.120 ⚠" in panel and "Mann-Whitney U" in panel
        assert "⚠ conditions differ: driver: newer run 590.44.01 vs older run 580.159.04" in panel
        assert "throttling      sw_power_cap@end" in panel and "1980/3201 → 1755/3201 MHz" in panel
        assert "GPU UUID        GPU-8a1b2c3d-synthetic" in panel and "TileGym commit  75a1430" in panel
        trend = screen.query_one(SeriesTable).series[0].trend
        assert len(trend) == 3 and trend[0] == "█" and trend[1] == "▁"
        await pilot.press("up")
        await until(pilot, lambda: screen.query_one(RunsTable).current_run is runs[-2], "up: the run before")
        assert "- improvement ×0.801" in _panel(app) and "⚠ conditions" not in _panel(app)
        await pilot.press("c")
        await until(pilot, lambda: screen.params != SP_2048, "c steps to the next config")
        assert screen.params != SP_2048
        shown = screen.params
        await pilot.press("r")
        await key_handled(pilot)  # the reload started (or already ended)
        await until(pilot, lambda: not screen.loading, "r reloads the history")
        assert screen.params == shown and data.history is not None and len(data.history.runs) == 4
    assert (tmp_path / "matmul" / "workbench" / HISTORY_FILE).is_file()


async def test_narrow_history_puts_the_provenance_under_the_runs(tmp_path: Path) -> None:
    """SYNTHETIC follow-ups (as above) at 80x24: compact run columns, provenance below."""
    matmul_with_followups(tmp_path)
    app = make_app(load_app_data("matmul", out_root=tmp_path, tilegym=None, env={}), prewarm=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await _select(pilot, app, NP_4096)
        await pilot.press("6")
        await until(pilot, lambda: _history_shown(app), "6 shows the History of the config")
        await drain(pilot)  # its layout made: the regions below are read
        screen = app.screen
        runs = screen.query_one(RunsTable)
        assert runs.compact and [str(c.label) for c in runs.columns.values()] == [
            "run time (UTC)",
            "median ms",
            "n",
            "vs previous run",
        ]
        panel = screen.query_one(ProvenancePanel).region
        assert panel.y > runs.region.y and panel.width == 80
        assert [r.change for r in runs.runs] == [None, "same", "same"]


async def test_ratios_header_flags_another_driver_and_details_it(tmp_path: Path) -> None:
    """SYNTHETIC edit of the REAL session: the cuTile baseline's session.json says driver 575.51.03."""
    paths = copy_matmul(tmp_path)
    meta = json.loads(paths.session_json.read_text())
    meta["runs"]["baseline_cutile"]["gpu"] = "NVIDIA H200, 575.51.03"
    paths.session_json.write_text(json.dumps(meta))
    app = make_app(load_app_data("matmul", out_root=tmp_path, tilegym=None, env={}), prewarm=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: _ratios_shown(app), "the Ratios screen laid out")
        screen = app.screen
        assert isinstance(screen, RatiosScreen)
        header = screen.query_one("#header")
        text = str(header.render())
        assert "⚠ baseline cutile measured on another driver (575.51.03 vs candidate 580.159.04)" in text
        assert text.index("⚠") < text.index("harness")  # right after the candidate: visible at 80 columns
        assert header.region.height == 1
        line = "".join(seg.text for seg in header.render_line(0))
        assert line.startswith(" Ratios  matmul cutile-rs ⚠ baseline cutile measured on another driver")
        assert line.rstrip().endswith("…") and len(line) == 80
        details = screen.query_one("#conditions", Static)
        assert (
            details.display
            and "NOT COMPARABLE: driver: candidate 580.159.04 vs baseline cutile 575.51.03"
            in str(details.render())
        )


async def test_ratios_header_is_quiet_when_comparable_and_says_unknown_otherwise(tmp_path: Path) -> None:
    """REAL recorded session (MIG and throttling not recorded: unknown); SYNTHETIC provenance events for
    the comparable case."""
    app = make_app(load_app_data("matmul", out_root=None, tilegym=None, env={}), prewarm=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: _ratios_shown(app), "the Ratios screen laid out")
        assert "│ ? comparability unknown: MIG mode, throttling not recorded" in str(
            app.screen.query_one("#header").render()
        )
        assert app.screen.query_one("#conditions").display
    paths = copy_matmul(tmp_path)
    at = utc("2026-12-01 09:20")
    _provenance_events(paths.root, candidate=provenance(at), baseline_cutile=provenance(at + 60))
    data = load_app_data("matmul", out_root=tmp_path, tilegym=None, env={})
    assert data.conditions is not None and data.conditions.state == "comparable"
    app = make_app(data, prewarm=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: _ratios_shown(app), "the Ratios screen laid out")
        header = str(app.screen.query_one("#header").render())
        assert "comparab" not in header and "⚠" not in header
        assert not app.screen.query_one("#conditions").display


async def test_history_key_palette_help_and_keymap_id() -> None:
    """SYNTHETIC data without a history: the screen says so; 6, the palette, F1 and the keymap know it."""
    app = make_app(make_data(), prewarm=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: _ratios_shown(app), "the Ratios screen first")
        titles = [t for t, _h, _cb in available_commands(app, app.screen)]
        assert "view: history" in titles
        await pilot.press("6")
        await until(
            pilot,
            lambda: isinstance(app.screen, HistoryScreen) and app.screen.is_mounted,
            "6 opens the History screen",
        )
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        assert "no run history for this data source" in str(
            screen.query_one("#history-title", Static).render()
        )
        assert "history: reload" not in [t for t, _h, _cb in available_commands(app, screen)]
        keys = {k for k, _d, _t in screen.help_keys()}
        assert "1-6" in keys
    ids = known_bindings()
    assert ids["app-history"].keys == "6" and {"history-config", "history-backend", "history-reload"} <= set(
        ids
    )


async def test_a_history_that_cannot_be_read_is_an_error_modal_naming_the_file() -> None:
    """SYNTHETIC: the loader raises what a corrupt store raises."""
    data = make_data()

    def broken() -> object:
        raise InputError(
            "history store is corrupt or not a SQLite file", path="/x/rms_norm/workbench/history.sqlite"
        )

    data.history_loader = broken  # type: ignore[assignment]
    app = make_app(data, prewarm=False)
    async with app.run_test(size=(120, 40)) as pilot:
        from cutile_workbench.tui.modals import ErrorModal

        await pilot.press("6")
        await until(pilot, lambda: isinstance(app.screen, ErrorModal), "the loader's error opens a modal")
        assert isinstance(app.screen, ErrorModal)
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen), "Escape closes the modal")
        assert isinstance(app.screen, HistoryScreen)
        title = str(app.screen.query_one("#history-title", Static).render())
        assert "could not be read: /x/rms_norm/workbench/history.sqlite: history store is corrupt" in title
