"""SVG snapshots of the sharded re-run panel (``R`` on Ratios) mid-run, at 80x24 and 160x48.

The event stream is SYNTHETIC, pinned (host, GPUs, paths, times): the shapes of the scale-out
service's real events (``scaleout_plan``, ``scaleout_shard_state``, the workers' ``shard_start`` /
``test_start`` / ``record`` / ``test_finish`` with ``shard``/``role``/``backend``), with the real
H200 rms_norm medians of the synthetic app data (docs gpu.md §4). Shard 0 is still running its
fourth config; shard 1 finished with one failed config. The runner then blocks until cancelled
(the app's exit cancels it), so the panel is caught while it runs.
Update only after looking at the report: ``pytest tests/tui/snapshots -k sharded --snapshot-update``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from pilot_wait import drain, until
from tui_helpers import make_data

from cutile_workbench.artifacts.events import Event
from cutile_workbench.model import RatioRow
from cutile_workbench.run.scaleout.progress import scaleout_event
from cutile_workbench.services.sharded import ShardedOutcome
from cutile_workbench.tui.app import make_app

SIZES = [(80, 24), (160, 48)]
FUNC = "profiles/rms_norm/test_rms_norm.py::Test_RMSNorm::test_perf"
H200 = "NVIDIA H200"


def _worker(kind: str, shard: int, **fields: Any) -> Event:
    return Event(kind, 1_800_000_000.0, {"shard": shard, **fields})


def _config(shard: int, backend: str, role: str, params: str, median: float | None) -> list[Event]:
    nodeid = f"{FUNC}[{backend}-{params}]"
    evs = [_worker("test_start", shard, nodeid=nodeid, role=role, backend=backend)]
    if median is not None:
        evs.append(
            _worker(
                "record",
                shard,
                nodeid=nodeid,
                role=role,
                backend=backend,
                framework=backend,
                benchmark={backend: {"forward": {"median": median}}},
            )
        )
    evs.append(
        _worker(
            "test_finish",
            shard,
            nodeid=nodeid,
            role=role,
            backend=backend,
            outcome="passed" if median is not None else "failed",
        )
    )
    return evs


def pinned_events() -> list[Event]:
    plan = scaleout_event(
        "scaleout_plan",
        plan_id="3f9c2a7d41be",
        mode="local",
        kernel="rms_norm",
        configs=6,
        rows=3,
        plan_dir="/scratch/cutile-workbench-sharded-pinned/rms_norm/workbench/shards/3f9c2a7d41be",
        resumed=[],
        fresh=False,
        warnings=[],
        shards=[
            {"index": 0, "configs": 4, "rows": 2, "state": "pending"},
            {"index": 1, "configs": 2, "rows": 1, "state": "pending"},
        ],
    )
    evs = [plan]
    for i in (0, 1):
        evs.append(
            scaleout_event(
                "scaleout_shard_state",
                shard=i,
                state="running",
                device=str(i),
                gpu="unknown",
                slot=i,
                shared_device=False,
                pid=4242 + i,
                log=f"/scratch/{i}/worker.log",
            )
        )
        evs.append(
            _worker(
                "shard_start",
                i,
                host="gpu-node-07",
                device=str(i),
                gpu_name=H200,
                gpu_uuid=f"GPU-{i}a{i}a{i}a{i}a-0000-0000-0000-00000000000{i}",
                pid=4242 + i,
            )
        )
    evs += _config(1, "cutile", "candidate", "8192-8192-torch.bfloat16", 0.07466)
    evs += _config(0, "cutile", "candidate", "4096-1024-torch.bfloat16", 0.00701)
    evs += _config(
        1, "triton", "baseline_triton_tileir", "8192-8192-torch.bfloat16", None
    )  # SYNTHETIC failure
    evs.append(_worker("shard_finish", 1, state="complete", detail=""))
    evs.append(
        scaleout_event(
            "scaleout_shard_state",
            shard=1,
            state="complete",
            host="gpu-node-07",
            gpu=H200,
            device="1",
            detail="",
            rc=0,
            duration_s=41.2,
        )
    )
    evs += _config(0, "cutile", "candidate", "16384-2048-torch.bfloat16", 0.08278)
    evs.append(
        _worker(
            "test_start",
            0,
            nodeid=f"{FUNC}[triton-4096-1024-torch.bfloat16]",
            role="baseline_triton_tileir",
            backend="triton",
        )
    )
    return evs


class PinnedRunner:
    """A sharded runner that replays :func:`pinned_events`, then blocks until cancelled."""

    def __init__(self) -> None:
        self.emitted = threading.Event()

    def describe(self, rows: Sequence[RatioRow]) -> str:
        return (
            f"Re-run {len(rows)} config(s) (cutile + triton: {2 * len(rows)} node ids) over 2 GPU slots (0, 1): "
            "one worker per slot, each config's candidate and baseline on the same GPU, then merged into a new "
            "scratch out root (this session is not changed)."
        )

    def slot_label(self) -> str:
        return "2 GPU slots (0, 1)"

    def __call__(
        self, rows: Sequence[RatioRow], on_event: Callable[[Any], None], cancel: threading.Event
    ) -> ShardedOutcome:
        for ev in pinned_events():
            on_event(ev)
        self.emitted.set()
        cancel.wait(30)
        return ShardedOutcome(rc=2, cancelled=True, summary=("cancelled",))


def _run_before(runner: PinnedRunner) -> Callable[[Any], Any]:
    async def run(pilot: Any) -> None:
        await until(pilot, lambda: pilot.app.current_mode == "ratios", "the Ratios screen shown")
        await pilot.press("R")
        await drain(pilot)  # the key handled: its confirmation is up
        await pilot.press("enter")
        await until(pilot, runner.emitted.is_set, "every pinned event emitted")
        # the panel renders what the board holds now (its 0.1 s ticker does the same, later on a
        # loaded box): the snapshot shows every event, whatever the box's speed (issue #35)
        pilot.app.screen._show_progress()
        await drain(pilot)  # that render made (the run's worker waits on cancel: settle would never end)

    return run


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_sharded_panel_snapshot(snap_compare: Any, size: tuple[int, int]) -> None:
    runner = PinnedRunner()
    data = make_data()
    data.sharded = runner
    assert snap_compare(make_app(data), terminal_size=size, run_before=_run_before(runner))
