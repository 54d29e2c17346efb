"""The app's live re-run (``L``) on a real GPU: recorded session → real runner → real CUPTI launches.

``-m gpu``: skipped without a GPU. Opens ``cutile-workbench rms_norm`` exactly as a user does on a
GPU node without a TileGym checkout (the embedded recorded session, read-only), picks the smallest
config, presses ``L`` and waits for the real child pytest runs (candidate cuTile, baseline Triton,
workbench CUPTI harness). The scratch out root of the live run is the loader's temp dir.
"""

from __future__ import annotations

import asyncio
import time

import pytest

PARAMS = "4096-1024-torch.bfloat16"


@pytest.mark.gpu
async def test_live_rerun_from_the_ratios_screen_streams_real_launches() -> None:
    pytest.importorskip("textual")
    pytest.importorskip("cupti")
    from pilot_wait import drain, until
    from tui_helpers import highlight_config

    from cutile_workbench.tui.app import make_app
    from cutile_workbench.tui.loaders import load_app_data
    from cutile_workbench.tui.screens.timeline import TimelineScreen
    from cutile_workbench.tui.widgets.launch_timeline import LaunchTimeline
    from cutile_workbench.tui.widgets.ratio_table import RatioTable

    data = load_app_data("rms_norm", out_root=None, tilegym=None, env={})
    assert data.source == "recorded" and data.runner is not None, "a GPU node must offer the live runner"
    app = make_app(data)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.current_mode == "ratios", "the Ratios screen shown")
        table = app.screen.query_one(RatioTable)
        await highlight_config(pilot, table, PARAMS)
        t0 = time.monotonic()
        await pilot.press("L")  # asks first (issue #34: a GPU run is confirmed)
        await until(pilot, lambda: type(app.screen).__name__ == "ConfirmModal", "the live run's confirmation")
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, TimelineScreen), "the Timeline")
        screen = app.screen
        assert isinstance(screen, TimelineScreen)
        while screen.live_running and time.monotonic() - t0 < 240:
            await asyncio.sleep(0.5)
        await drain(pilot)  # the run's last messages rendered
        wall = time.monotonic() - t0
        assert not screen.live_running, "live run did not finish within 240 s"
        results = {r.framework: r.median_ms for r in screen.live_results}
        tl = screen.query_one(LaunchTimeline)
        lanes = {(ln.role, ln.backend): len(ln.launches) for ln in tl.lanes}
        notes = [str(n.message) for n in app._notifications]
        print(
            f"\nlive re-run {PARAMS}: {wall:.1f}s; medians ms {results}; lanes {lanes}; "
            f"timeline launches {tl.launch_count}; notes {notes[-2:]}"
        )
        assert set(results) == {"cutile", "triton"}
        assert all(m is not None and 0.001 < m < 1.0 for m in results.values())
        assert {role for role, _ in lanes} == {"candidate", "baseline"}
        assert tl.launch_count >= 2 * 2  # ≥ 2 measured calls per backend, 1 launch each
        assert any("live run finished (exit 0)" in n for n in notes)
