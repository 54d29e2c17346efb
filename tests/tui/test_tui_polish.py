"""TUI polish of issue #14, each failing before its fix: F1 help order, numeric config order,
short kernel names in E's raw CUPTI rows, labelled forward/backward measurement sets, and a
Report banner that does not offer ``w`` in a read-only session.

Data: SYNTHETIC AppData (tests/tui_helpers.py, labelled ``source: synthetic``), the real recorded
H200 session shipped in ``cutile_workbench/profiles/``, and launch sets built here (synthetic, labelled).
The Pilot tests wait for the state they assert (``pilot_wait``), never for a fixed pause (issue #35).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from pilot_wait import until
from tui_helpers import make_data

from cutile_workbench.model import CallCapture, Launch, LaunchSet, RatioRow
from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.catalog import known_bindings
from cutile_workbench.tui.modals import HelpScreen
from cutile_workbench.tui.screens.base import typed_key
from cutile_workbench.tui.screens.irdiff import IRDiffScreen
from cutile_workbench.tui.screens.ratios import RatiosScreen
from cutile_workbench.tui.screens.report import ReportScreen
from cutile_workbench.tui.screens.timeline import TimelineScreen
from cutile_workbench.tui.widgets.launch_timeline import LaunchTimeline, phase_tag
from cutile_workbench.tui.widgets.ratio_table import visible_rows

#: descriptions of Textual's own generic bindings (scrolling, cursor, focus, copy)
GENERIC = {
    "Cursor up",
    "Cursor down",
    "Scroll Up",
    "Scroll Down",
    "Up",
    "Down",
    "Page up",
    "Page Up",
    "Focus Next",
    "Focus Previous",
    "Copy selected text",
    "Home",
    "End",
    "Scroll Home",
    "Scroll End",
}


def _shown(app: Any, screen_cls: type) -> bool:
    """A ``screen_cls`` screen is current and mounted."""
    return isinstance(app.screen, screen_cls) and app.screen.is_mounted


def _timeline_of(app: Any, row: RatioRow) -> bool:
    """The Timeline is current and mounted, showing ``row``'s launches."""
    screen = app.screen
    return isinstance(screen, TimelineScreen) and screen.is_mounted and screen.row == row


@pytest.mark.parametrize("screen_cls", [RatiosScreen, ReportScreen, IRDiffScreen])
async def test_f1_help_starts_with_the_screens_own_actions(screen_cls: type) -> None:
    mode = {RatiosScreen: "ratios", ReportScreen: "report", IRDiffScreen: "irdiff"}[screen_cls]
    ours = {b.description for b in known_bindings().values()}
    app = make_app(make_data(), initial_mode=mode, prewarm=False)
    async with app.run_test(size=(140, 44)) as pilot:
        await until(pilot, lambda: _shown(app, screen_cls), f"the {mode} screen first")
        await pilot.press("f1")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "F1 opens the help")
        assert isinstance(app.screen, HelpScreen)
        rows = [(k, d) for k, d, _t in app.screen.keys]
        own = {
            (b.key_display or typed_key(k.strip()), b.description)
            for b in screen_cls.BINDINGS
            if b.description
            for k in b.key.split(",")
        }
        own_at = [i for i, row in enumerate(rows) if row in own]
        assert own_at and own_at == list(range(len(own_at))), rows[:8]  # the screen's own keys come first
        last_own = own_at[-1]
        generic = [d for _k, d in rows if d in GENERIC - ours]
        assert generic == [], rows  # F1 lists this app's keys only: no Textual scrolling/cursor padding
        assert rows.index(("Ctrl+Q", "Quit")) > last_own  # the app's keys after the screen's too


def _row(params: str) -> RatioRow:
    return RatioRow("tests/ops/test_x.py::T::test_perf", params, None, "cutile", 0.1, 0.1, 1.0, "OK")


def test_configs_sort_numerically_by_shape_fields() -> None:
    params = [
        "16384-1024-torch.bfloat16",
        "4096-1024-torch.bfloat16",
        "8192-8192-torch.bfloat16",
        "4096-4096-torch.bfloat16",
        "static_persistent-262144-1024-torch.float16",
        "static_persistent-65536-8192-torch.float16",
    ]
    shown = [r.params for r in visible_rows([_row(p) for p in params], sort_key="config")]
    assert shown == [
        "4096-1024-torch.bfloat16",
        "4096-4096-torch.bfloat16",
        "8192-8192-torch.bfloat16",
        "16384-1024-torch.bfloat16",
        "static_persistent-65536-8192-torch.float16",
        "static_persistent-262144-1024-torch.float16",
    ]
    assert [
        r.params for r in visible_rows([_row(p) for p in params], sort_key="config", reverse=True)
    ] == shown[::-1]


RECORDED = Path(__file__).resolve().parents[2] / "cutile_workbench" / "profiles" / "rms_norm" / "session"


@pytest.mark.skipif(
    not (RECORDED / "rms_norm_hotpath").is_dir(), reason="recorded session not in this checkout"
)
def test_raw_cupti_rows_show_short_kernel_names_and_list_the_full_ones() -> None:
    from cutile_workbench.services import stage_e

    ws = stage_e.open_kernel("rms_norm_hotpath", out_root=None, tilegym=None)
    md = next(f.content for f in stage_e.plan(ws).files if f.relpath == "reports/performance.md")
    table = md[md.index("### Raw CUPTI rows") : md.index("Top kernels in full")]
    assert "| vectorized_elementwise_kernel<CUDAFunctor_add> |" in table
    assert "| rms_norm_tile_kernel [I16 I1024] |" in table
    assert "_Kt1_" not in table and "std::array" not in table  # the mangled/long names left the table
    legend = md[md.index("Top kernels in full") :]
    assert (
        "- `rms_norm_tile_kernel [I16 I1024]`: `rms_norm_tile_kernel_Kt1_A2bf16_1v8l0_2t1_3i16_p16_A1bf16_"
        "1i16t1_p16_A2bf16_1v8l0_2t1_3i16_p16_I16_I1024_F3ee4f8b588e368f1`"
    ) in legend
    assert "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add" in legend


def test_distinct_full_names_never_share_a_short_name() -> None:
    from cutile_workbench.stages.e.report import _top_kernel

    short_of: dict[str, str] = {}
    a = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int)"
    b = "void at::native::vectorized_elementwise_kernel<8, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul> >(int)"
    assert _top_kernel(a, short_of) == "vectorized_elementwise_kernel<FillFunctor>"
    assert _top_kernel(b, short_of) == "vectorized_elementwise_kernel<FillFunctor> #2"
    assert _top_kernel(a, short_of) == "vectorized_elementwise_kernel<FillFunctor>"
    assert _top_kernel("rms_norm_kernel", short_of) == "rms_norm_kernel" and len(short_of) == 2


def _set(backend: str, start: int, n_calls: int = 2) -> LaunchSet:
    """SYNTHETIC: ``n_calls`` calls of one launch each, for one test's measurement set."""
    calls = [
        CallCapture(
            i,
            backend,
            start + i * 1000,
            start + i * 1000 + 900,
            (Launch("kernel", f"k_{backend}", start + i * 1000 + 10, start + i * 1000 + 500, i),),
        )
        for i in range(n_calls)
    ]
    return LaunchSet("t.py::T::test_perf[x-1]", backend, "1", calls)


async def test_forward_and_backward_sets_are_labelled_lanes() -> None:
    data = make_data()
    row = data.table.rows[0] if data.table else None
    assert row is not None
    fwd = dataclasses.replace(_set("cutile", 0), params=row.params)
    bwd = dataclasses.replace(_set("cutile", 10_000), params=row.params)
    data.launch_sets = [fwd, bwd]
    data.candidate_backend = "cutile"
    app = make_app(data, prewarm=False)
    async with app.run_test(size=(140, 44)) as pilot:
        await until(pilot, lambda: _shown(app, RatiosScreen), "the Ratios screen first")
        app.open_timeline(row)
        await until(pilot, lambda: _timeline_of(app, row), "the Timeline shows the row")
        assert isinstance(app.screen, TimelineScreen)
        labels = [lane.label for lane in app.screen.query_one(LaunchTimeline).lanes]
        assert labels == ["#0 cand fwd 1L", "#1 cand fwd 1L", "#0 cand bwd 1L", "#1 cand bwd 1L"], labels


async def test_live_sets_of_one_test_get_tagged_as_they_arrive() -> None:
    assert (
        phase_tag(0, 1) == ""
        and phase_tag(0, 2) == "fwd"
        and phase_tag(1, 2) == "bwd"
        and phase_tag(2, 3) == "m3"
    )
    data = make_data()
    row = data.table.rows[0] if data.table else None
    assert row is not None
    app = make_app(data, prewarm=False)
    async with app.run_test(size=(140, 44)) as pilot:
        await until(pilot, lambda: _shown(app, RatiosScreen), "the Ratios screen first")
        app.open_timeline(row)
        await until(pilot, lambda: _timeline_of(app, row), "the Timeline shows the row")
        screen = app.screen
        assert isinstance(screen, TimelineScreen)
        timeline = screen.query_one(LaunchTimeline)
        timeline.set_sets(None, None)
        fwd = dataclasses.replace(_set("cutile", 0, n_calls=1), params=row.params)
        screen._append_set(fwd)  # what a live "launches" event does
        assert [lane.label for lane in timeline.lanes] == ["#0 cand 1L"]  # one set so far: no tag yet
        screen._append_set(dataclasses.replace(_set("cutile", 10_000, n_calls=1), params=row.params))
        assert [lane.label for lane in timeline.lanes] == ["#0 cand fwd 1L", "#0 cand bwd 1L"]


def test_cli_timeline_labels_the_measurement_sets(tmp_path: Path) -> None:
    from cutile_workbench.cli.timeline import render_timeline_text
    from cutile_workbench.services.timeline import measurement_labels, summarize_set

    sets = [_set("cutile", 0), _set("triton", 5000), _set("cutile", 10_000)]
    assert measurement_labels(sets) == ["forward", "", "backward"]
    summaries = [
        summarize_set(s, role, label)
        for s, role, label in zip(
            sets, ("candidate", "baseline", "candidate"), measurement_labels(sets), strict=True
        )
    ]
    text = render_timeline_text("k", "1", "launches.json.gz", summaries)
    assert "candidate forward" in text and "candidate backward" in text
    assert "cutile (candidate backward): per launch" in text


async def test_report_banner_says_preview_only_in_a_read_only_session() -> None:
    data = make_data()
    data.read_only = "this is the recorded session shipped in the package (read-only)"
    app = make_app(data, initial_mode="report", prewarm=False)
    async with app.run_test(size=(140, 44)) as pilot:
        await until(pilot, lambda: _shown(app, ReportScreen), "the Report screen first")
        await pilot.press("e")
        await until(pilot, lambda: app.screen.plan is not None, "e: stage E's plan shown")
        await app.workers.wait_for_complete()
        banner = str(app.screen.query_one("#banner").render())
        assert "preview only" in banner and "w writes" not in banner
