"""Live re-run (``L``) of a recorded REAL cutile-rs session on the GPU: TileGym's own test_perf runs
again, and the candidate lane fills with cutile-rs ``*_entry`` launches as they are captured.

``-m gpu``, and skipped unless ``$TILEGYM_PATH`` is a TileGym checkout whose cutile-rs library
(``src/tilegym/ops/cutile_rs/cutile_kernels/target/release/libcutile_kernels.so``) is built and
cupti-python + Textual import. Opens ``cutile-workbench matmul --tilegym $TILEGYM_PATH`` as a user
would (the embedded recorded session, read-only: the live logs go to a scratch out root).
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

PARAMS = "True-False-False-False-2048-2048-2048-0-0-torch.float16"
LIB = "src/tilegym/ops/cutile_rs/cutile_kernels/target/release/libcutile_kernels.so"


@pytest.mark.gpu
async def test_live_rerun_of_real_cutile_rs_fills_the_candidate_lane() -> None:
    pytest.importorskip("textual")
    pytest.importorskip("cupti")
    tg = Path(os.environ.get("TILEGYM_PATH", ""))
    if not (tg / LIB).is_file():
        pytest.skip(f"no built cutile-rs library under $TILEGYM_PATH ({tg / LIB})")
    from pilot_wait import drain, until
    from tui_helpers import highlight_config

    from cutile_workbench.tui.app import make_app
    from cutile_workbench.tui.loaders import load_app_data
    from cutile_workbench.tui.screens.timeline import TimelineScreen
    from cutile_workbench.tui.widgets.launch_timeline import LaunchTimeline
    from cutile_workbench.tui.widgets.ratio_table import RatioTable

    data = load_app_data("matmul", out_root=None, tilegym=tg, env={})
    assert data.source == "recorded" and data.runner is not None, data.live_unavailable
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
        first_candidate_launch_s = None
        while screen.live_running and time.monotonic() - t0 < 300:
            tl = screen.query_one(LaunchTimeline)
            if first_candidate_launch_s is None and any(
                ln.role == "candidate" and ln.launches for ln in tl.lanes
            ):
                first_candidate_launch_s = time.monotonic() - t0
            await asyncio.sleep(0.25)
        await drain(pilot)  # the run's last messages rendered
        wall = time.monotonic() - t0
        assert not screen.live_running, "live run did not finish within 300 s"
        results = {r.framework: r.median_ms for r in screen.live_results}
        tl = screen.query_one(LaunchTimeline)
        names = {(ln.role, x.display_name) for ln in tl.lanes for x in ln.launches}
        notes = [str(n.message) for n in app._notifications]
        print(
            f"\nlive re-run matmul {PARAMS}: {wall:.1f}s, first candidate launch on screen after "
            f"{first_candidate_launch_s}s; medians ms {results}; launches {tl.launch_count}; notes {notes[-2:]}"
        )
        assert set(results) == {"cutile-rs", "cutile"}
        assert all(m is not None and 0.005 < m < 1.0 for m in results.values())
        assert ("candidate", "non_persistent_matmul_kernel_entry") in names
        assert first_candidate_launch_s is not None and first_candidate_launch_s < wall, (
            "candidate launches must appear while the run is still going (live), not only at the end"
        )
        assert any("live run finished (exit 0)" in n for n in notes)
