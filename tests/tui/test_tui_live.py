"""Live runs: events → bars, per-config results and progress; cancel with Escape; replay a stream.

The event payloads are built from the labelled fixture ``tests/fixtures/f/hotpath_16384x2048``
(synthetic from real H200 facts), encoded with ``cutile_workbench.artifacts.events.encode_event`` exactly as the
pytest plugin writes them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pilot_wait import poll, settle, until
from tui_helpers import ScriptedRunner, make_data

from cutile_workbench.artifacts.events import encode_event
from cutile_workbench.artifacts.launches_io import launch_sets_from_events  # noqa: F401  (API parity check below)
from cutile_workbench.model import RatioRow
from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.live import ReplayRunner
from cutile_workbench.tui.modals import ErrorModal
from cutile_workbench.tui.screens.timeline import TimelineScreen
from cutile_workbench.tui.widgets.launch_timeline import LaunchTimeline

FIX = Path(__file__).parent.parent / "fixtures" / "f" / "hotpath_16384x2048.launches.json"
PARAMS = "wrapper_alloc-16384-2048-torch.bfloat16"


def _events(params: str = PARAMS) -> list[dict[str, Any]]:
    sets = json.loads(FIX.read_text())["sets"]
    out: list[dict[str, Any]] = [{"event": "collected", "ts": 1.0, "nodeids": ["a", "b"]}]
    # the hot-path wrapper (3 launches/call) is the candidate; the clean kernel stands in as baseline
    for i, (s, backend, median) in enumerate(((sets[1], "cutile", 0.1509), (sets[0], "triton", 0.08278))):
        out.append({"event": "test_start", "ts": 2.0 + i, "nodeid": s["nodeid"]})
        out.append(
            {
                "event": "launches",
                "ts": 2.1 + i,
                "nodeid": s["nodeid"],
                "backend": backend,
                "params": params,
                "calls": s["calls"],
            }
        )
        out.append(
            {
                "event": "record",
                "ts": 2.2 + i,
                "nodeid": s["nodeid"],
                "framework": backend,
                "params": params,
                "benchmark": {backend: {"forward": {"median": median}}},
            }
        )
        out.append(
            {
                "event": "test_finish",
                "ts": 2.3 + i,
                "nodeid": s["nodeid"],
                "outcome": "passed",
                "duration_s": 0.5,
            }
        )
    out.append({"event": "session_finish", "ts": 9.0, "exitstatus": 0})
    return out


async def _open_live(app: Any, pilot: Any) -> TimelineScreen:
    await settle(pilot)  # the Ratios table loaded and focused (no run yet: every startup worker ends)
    await pilot.press("down", "down", "down", "down")  # wrapper_alloc row
    await pilot.press("L")  # asks first (issue #34: a GPU run is confirmed)
    await until(pilot, lambda: type(app.screen).__name__ == "ConfirmModal", "the live run's confirmation")
    await pilot.press("y")
    await until(pilot, lambda: isinstance(app.screen, TimelineScreen), "the Timeline")
    screen = app.screen
    assert isinstance(screen, TimelineScreen)
    return screen


async def test_live_run_streams_bars_results_and_progress() -> None:
    runner = ScriptedRunner(_events())
    app = make_app(make_data(runner=runner))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open_live(app, pilot)
        await app.workers.wait_for_complete()
        await settle(pilot)  # the run's last events and its finish handled (the runner ended)
        assert runner.calls == [[PARAMS]]
        tl = screen.query_one(LaunchTimeline)
        roles = {ln.role for ln in tl.lanes}
        assert roles == {"candidate", "baseline"}
        cand = [ln for ln in tl.lanes if ln.role == "candidate"]
        assert cand and all(len(ln.launches) == 3 for ln in cand)  # fill + add + rms_norm per call
        assert [(r.framework, r.median_ms) for r in screen.live_results] == [
            ("cutile", 0.1509),
            ("triton", 0.08278),
        ]
        assert not screen.live_running
        assert screen.query_one("#progress").has_class("hidden")
        assert any("live run finished" in str(n.message) for n in app._notifications)


async def test_escape_cancels_a_running_live_run() -> None:
    runner = ScriptedRunner(_events()[:3], block=True)
    app = make_app(make_data(runner=runner))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open_live(app, pilot)
        # the blocked runner's worker does not complete, so wait for the state without waiting on workers
        # (a cap of rounds, not a fixed pause that a loaded box may outlast)
        await poll(pilot, lambda: screen.live_running, "the live run running", rounds=1200, step=0.05)
        assert screen.live_running and screen.check_action("cancel_live", ()) is True
        assert not screen.query_one("#progress").has_class("hidden")
        await pilot.press("escape")
        await app.workers.wait_for_complete()
        await settle(pilot)  # the cancelled run's end handled (its worker ended)
        assert not screen.live_running and screen.cancel_event.is_set()
        assert screen.check_action("cancel_live", ()) is False
        assert any("cancelled" in str(n.message) for n in app._notifications)


async def test_malformed_launch_event_shows_error_naming_line() -> None:
    from cutile_workbench.artifacts.events import read_events

    bad = encode_event(
        "launches",
        ts=1.0,
        nodeid="n",
        backend="cutile",
        params=PARAMS,
        calls=[
            {
                "index": 0,
                "host_start_ns": 0,
                "host_end_ns": 5,
                "launches": [{"kind": "warp", "name": "x", "start_ns": 1, "end_ns": 2, "correlation_id": 1}],
            }
        ],
    )
    events = read_events([encode_event("collected", ts=0.0, nodeids=["n"]), bad], source="events.jsonl")
    app = make_app(make_data(runner=ScriptedRunner(events)))  # type: ignore[arg-type]
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)  # the Ratios table loaded and focused
        await pilot.press("down", "down", "down", "down", "L")
        await until(pilot, lambda: type(app.screen).__name__ == "ConfirmModal", "the live run's confirmation")
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, ErrorModal), "the error modal")
        assert "events.jsonl:2" in app.screen.error_text and "unknown kind 'warp'" in app.screen.error_text


def test_replay_runner_filters_and_paces(tmp_path: Path) -> None:
    import threading

    path = tmp_path / "events.jsonl"
    lines = [encode_event(e.pop("event"), **e) for e in _events()]
    lines += [
        encode_event("record", ts=10.0, nodeid="other", framework="triton", params="other-1", benchmark={})
    ]
    path.write_text("".join(lines))
    seen: list[str] = []
    row = RatioRow("f", PARAMS, None, "triton", 1.0, 1.0, 1.0, "OK")
    rc = ReplayRunner(path, speed=0)([row], lambda ev: seen.append(ev.event), threading.Event())
    assert rc == 0 and "launches" in seen and seen.count("record") == 2
    cancel = threading.Event()
    cancel.set()
    assert ReplayRunner(path, speed=0)([row], lambda ev: None, cancel) == 130


async def test_live_baseline_lane_matches_a_triton_tileir_row() -> None:
    # A row read from E's logs names its baseline "triton_tileir" while the live child's records say
    # "triton"; the live bars must still land in the baseline lane (found by the GPU Pilot test).
    import dataclasses

    data = make_data(runner=ScriptedRunner(_events()))
    assert data.table is not None
    data.table.rows = [dataclasses.replace(r, baseline_backend="triton_tileir") for r in data.table.rows]
    app = make_app(data)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open_live(app, pilot)
        await app.workers.wait_for_complete()
        await settle(pilot)  # the run's launches drawn in their lanes (the runner ended)
        lanes = {(ln.role, ln.backend) for ln in screen.query_one(LaunchTimeline).lanes}
        assert lanes == {("candidate", "cutile"), ("baseline", "triton")}


def test_real_record_events_carry_their_median_into_live_results() -> None:
    # Record events exactly as the plugin wrote them on the H200 (recorded session), not a
    # hand-built payload: the median key must be benchmark_fn_cupti's ``median`` (found on the GPU).
    from cutile_workbench.tui.live import Batcher, dispatch_event
    from cutile_workbench.tui.messages import LiveRecord

    events = (
        Path(__file__).parents[2]
        / "cutile_workbench/profiles/rms_norm/session/rms_norm/workbench/events.jsonl"
    )
    posted: list[Any] = []
    batch = Batcher(posted.append)
    records = [json.loads(line) for line in events.read_text().splitlines() if '"event": "record"' in line]
    assert records
    for ev in records:
        dispatch_event(ev, batch, str(events))
    got = [m for m in posted if isinstance(m, LiveRecord)]
    assert len(got) == len(records)
    for msg, ev in zip(got, records, strict=True):
        assert msg.median_ms == ev["benchmark"][ev["framework"]]["forward"]["median"]
        assert msg.median_ms is not None and 0.001 < msg.median_ms < 1.0
