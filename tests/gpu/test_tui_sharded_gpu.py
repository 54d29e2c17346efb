"""The app's sharded re-run (``R``; it was ``G`` until g/G moved the cursor) on a real GPU: recorded rms_norm session → two shards → merge.

``-m gpu``: skipped without a GPU. Opens ``cutile-workbench rms_norm --gpus 0,0`` as a user on a
one-GPU node would (two shards on ONE GPU: their timings interfere, so only the plumbing is
checked — every shown config re-measured, merged, each row measured on a named GPU), filters to the
bf16 configs, presses ``R`` and Enter, and waits for the real workers and pytest children (candidate
cuTile, baseline Triton, workbench CUPTI harness). On a node with two GPUs, ``--gpus 0,1``
(``CUTILE_WORKBENCH_TEST_GPUS``) measures for real.
"""

from __future__ import annotations

import json
import os

import pytest
from pilot_wait import poll, settle, until


@pytest.mark.gpu
async def test_g_reruns_the_shown_configs_over_two_shards_on_a_gpu_node() -> None:
    pytest.importorskip("cupti")
    from cutile_workbench.tui.app import make_app
    from cutile_workbench.tui.loaders import load_app_data
    from cutile_workbench.tui.screens.sharded import ShardedRunScreen
    from cutile_workbench.tui.widgets.ratio_table import RatioTable

    gpus = os.environ.get("CUTILE_WORKBENCH_TEST_GPUS", "0,0")
    data = load_app_data("rms_norm", out_root=None, tilegym=None, env={}, gpus=gpus)
    assert data.sharded is not None, data.sharded_unavailable
    app = make_app(data)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)  # the Ratios table loaded (no run yet: every startup worker ends)
        table = app.screen.query_one(RatioTable)
        table.filter_text = "bfloat16"
        await settle(pilot)  # the filtered table rebuilt and drawn
        shown = list(table.shown_rows)
        assert len(shown) >= 2
        await pilot.press("R")  # G goes to the last row since 905cbba: R opens the sharded re-run
        await until(pilot, lambda: isinstance(app.screen, ShardedRunScreen), "R opens the sharded panel")
        screen = app.screen
        assert isinstance(screen, ShardedRunScreen)
        await pilot.press("enter")
        # real shard workers and pytest children on the GPU, outside the app's queues: poll their end
        # (2400 rounds of at least 0.5 s: the old 1200 s cap, in rounds)
        await poll(
            pilot, lambda: screen.state == "finished", "the sharded run finished", rounds=2400, step=0.5
        )
        outcome = screen.outcome
        assert outcome is not None and not outcome.cancelled and outcome.merged_into is not None, outcome
    assert outcome.table is not None
    ratios = {r.params: r.ratio for r in outcome.table.rows}
    assert {r.params for r in shown} <= set(ratios) and all(ratios[r.params] for r in shown)
    session = json.loads((outcome.merged_into / "rms_norm/workbench/session.json").read_text())
    for meta in session["runs"].values():
        assert {w["gpu_name"] for w in meta["measured_on"].values()}.isdisjoint({"unknown"})
