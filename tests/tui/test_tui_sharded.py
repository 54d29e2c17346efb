"""``R`` on Ratios: re-run the shown configs sharded over GPU slots, per-shard progress, Escape cancels.

CPU only, everything real but the GPUs: the Ratios table is E's table of a real single-process run
of the runner fixture suite (tests/fixtures/runner/perf_faults.py: real H200 medians replayed,
SYNTHETIC faults on demand), and ``R`` runs :class:`~cutile_workbench.services.sharded.ShardedRerun` —
real shard workers and pytest children pinned to unprobed ``CUDA_VISIBLE_DEVICES`` slots (the suite
never touches a GPU), merged into a scratch out root, as ``run --gpus 0,1 --skip-gpu-check`` does.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from pilot_wait import poll, settle, until
from scaleout_helpers import (
    FAULTS_ROLES,
    comparable_table,
    fake_nvidia_smi,
    faults_suite,
    role_runs,
    single_run,
    still_alive,
)
from textual.widgets import Log

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.artifacts.workspace import open_workspace
from cutile_workbench.errors import InputError
from cutile_workbench.model import RatioRow
from cutile_workbench.services.sharded import ShardedRerun, sharded_rerunner
from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.screens.ratios import RatiosScreen
from cutile_workbench.tui.screens.sharded import ShardedRunScreen
from cutile_workbench.tui.widgets.shard_panel import ShardPanel

CHILD_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(suite dir, out root of one real single-process run of it: triton candidate, cutile baseline)."""
    root = tmp_path_factory.mktemp("sharded_tui")
    suite = faults_suite(root)
    single_run(role_runs(suite, FAULTS_ROLES), KernelPaths.under(root / "single", "rms_norm"))
    return suite, root / "single"


class Spy:
    """Wraps a sharded runner: keeps every pid the event stream names and which shards started a test."""

    def __init__(self, inner: ShardedRerun) -> None:
        self.inner = inner
        self.pids: list[int] = []
        self.started: set[int] = set()

    def describe(self, rows: Sequence[RatioRow]) -> str:
        return self.inner.describe(rows)

    def slot_label(self) -> str:
        return self.inner.slot_label()

    def __call__(
        self, rows: Sequence[RatioRow], on_event: Callable[[Any], None], cancel: threading.Event
    ) -> Any:
        def tap(ev: Any) -> None:
            if ev.event in ("shard_start", "session_start") and isinstance(ev.get("pid"), int):
                self.pids.append(ev["pid"])
            if ev.event == "test_start":
                self.started.add(ev["shard"])
            on_event(ev)

        return self.inner(rows, tap, cancel)


def _app(session: tuple[Path, Path], tmp_path: Path, faults: str = "") -> tuple[Any, Spy]:
    suite, out_root = session
    data = load_app_data("rms_norm", out_root=out_root, tilegym=None, env={})
    env = {**CHILD_ENV, **({"RUNNER_FIXTURE_FAULTS": faults} if faults else {})}
    spy = Spy(
        ShardedRerun(
            "rms_norm",
            data.candidate_backend,
            suite,
            ("0", "1"),
            slots=2,
            probe=False,
            scratch_parent=tmp_path,
            env=env,
            extra_args=("-p", "visible_header"),
        )
    )
    data.sharded = spy
    return make_app(data, prewarm=False), spy


async def _open_panel(app: Any, pilot: Any) -> ShardedRunScreen:
    await settle(pilot)  # the Ratios table loaded (prewarm off, no run yet: every worker ends)
    await pilot.press("R")
    await until(pilot, lambda: isinstance(app.screen, ShardedRunScreen), "R opens the sharded panel")
    screen = app.screen
    assert isinstance(screen, ShardedRunScreen)
    return screen


async def _start_until_both_shards_test(pilot: Any, spy: Spy) -> None:
    """Enter, then wait until each of the two shards has started a test (a hang, in these tests)."""
    await pilot.press("enter")
    # the shards' pytest children report through a worker thread that (hung) never ends: poll
    await poll(pilot, lambda: spy.started == {0, 1}, "both shards started a test", rounds=600, step=0.2)
    assert spy.started == {0, 1}


async def test_g_reruns_every_shown_config_over_two_slots_and_merges_into_a_scratch_root(
    session, tmp_path, monkeypatch
):
    app, spy = _app(session, tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open_panel(app, pilot)
        title = str(screen.query_one("#sharded-title").render())
        assert "Re-run 3 config(s) (triton + cutile: 6 node ids) over 2 GPU slots (0, 1)" in title
        assert screen.state == "ready" and not spy.pids  # nothing runs before Enter
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await settle(pilot)  # the run's outcome shown (its worker ended)
        outcome = screen.outcome
        assert screen.state == "finished" and outcome is not None and not outcome.cancelled, outcome
        panel = screen.query_one(ShardPanel)
        assert [(s.index, s.state, s.device, s.finished, s.planned) for s in panel.shards] == [
            (0, "complete", "0", 4, 4),
            (1, "complete", "1", 2, 2),
        ]
        assert "6/6 configs finished, 0 failed · 2/2 shard(s) complete" in panel.totals()
        log = "\n".join(screen.query_one("#sharded-log", Log).lines)
        assert sum(1 for ln in log.splitlines() if ln.startswith("[")) == 6  # the CLI's own progress lines
        assert "[6/6] s" in log and "== merged plan" in log
        status = str(screen.query_one("#sharded-status").render())
        assert "geomean" in status and "merged into" in status
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, RatiosScreen), "Escape back on Ratios")
        assert isinstance(app.screen, RatiosScreen)
    # merged into a fresh scratch root: the session's own dir is untouched, E's table is the same
    scratch = outcome.merged_into
    assert scratch is not None and scratch.parent == tmp_path
    assert comparable_table(scratch) == comparable_table(session[1])
    line = next(s for s in outcome.summary if s.startswith("geomean"))
    old, new = (float(w.rstrip("x")) for w in line.split() if w.endswith("x") and w[0].isdigit())
    assert old == new  # the fixture replays the same recorded medians
    measured = json.loads((scratch / "rms_norm/workbench/session.json").read_text())["runs"]["candidate"][
        "measured_on"
    ]
    assert sorted({w["device"] for w in measured.values()}) == ["0", "1"]
    # the summary's "open it with" line, pasted, opens the merged scratch root (issue 36: advice runs)
    import shlex

    import cutile_workbench.tui.app as app_module
    from cutile_workbench.cli import main
    from cutile_workbench.tui.loaders import load_app_data

    opened: list[Path] = []
    monkeypatch.setattr(
        app_module,
        "run_app",
        lambda kernel, *, out_root, tilegym, **_k: (
            opened.append(load_app_data(kernel, out_root=out_root, tilegym=tilegym).out_root) or 0
        ),
    )
    hint = next(s for s in outcome.summary if "open it with: " in s).split("open it with: ", 1)[1]
    assert main(shlex.split(hint)[1:]) == 0 and opened == [scratch]


async def test_escape_cancels_every_worker_and_merges_nothing(session, tmp_path):
    # SYNTHETIC hangs: one config of each shard never returns
    app, spy = _app(session, tmp_path, faults="triton-4096-1024:hang,triton-8192-8192:hang")
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open_panel(app, pilot)
        await _start_until_both_shards_test(pilot, spy)
        assert screen.check_action("close", ()) is False  # Escape cancels; it never just hides a run
        await pilot.press("escape")
        assert screen.cancel_event.is_set() and screen.state in ("cancelling", "finished")
        await app.workers.wait_for_complete()
        await settle(pilot)  # the cancelled outcome shown (every worker ended)
        assert screen.outcome.cancelled and screen.outcome.rc == 2
        assert {s.state for s in screen.query_one(ShardPanel).shards} == {"cancelled"}
        assert "cancelled: every worker was stopped; nothing merged" in str(
            screen.query_one("#sharded-status").render()
        )
    scratch = next(tmp_path.glob("cutile-workbench-sharded-*"))
    assert not (scratch / "rms_norm/reports").exists()  # nothing merged
    assert len(spy.pids) == 4 and not still_alive(spy.pids)  # 2 workers + 2 pytest children gone


async def test_quitting_the_app_mid_run_leaves_no_worker_behind(session, tmp_path):
    app, spy = _app(session, tmp_path, faults="triton-4096-1024:hang,triton-8192-8192:hang")
    async with app.run_test(size=(160, 48)) as pilot:
        await _open_panel(app, pilot)
        await _start_until_both_shards_test(pilot, spy)
        await pilot.press("ctrl+q")
    assert len(spy.pids) == 4 and not still_alive(spy.pids)


async def test_a_dropped_ssh_session_sighup_cancels_the_run_and_leaves_the_app(session, tmp_path):
    """SIGHUP (the SSH session dropped) would kill the app at once and leave the shard workers, which
    run in sessions of their own, measuring for hours: while a run is on, it cancels the run instead."""
    import signal

    app, spy = _app(session, tmp_path, faults="triton-4096-1024:hang,triton-8192-8192:hang")
    before = signal.getsignal(signal.SIGHUP)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open_panel(app, pilot)
        await _start_until_both_shards_test(pilot, spy)
        # never send a SIGHUP this pytest process has no handler for: it would end the test run
        assert signal.getsignal(signal.SIGHUP) not in (signal.SIG_DFL, before)
        os.kill(os.getpid(), signal.SIGHUP)
        # the wait is for the app to stop; a cap of rounds ends a hung test
        await poll(pilot, lambda: not app.is_running, "SIGHUP stopped the app", rounds=1200, step=0.1)
    assert screen.cancel_event.is_set()
    assert signal.getsignal(signal.SIGHUP) == before  # restored
    assert len(spy.pids) == 4 and not still_alive(spy.pids)


async def test_g_without_a_sharded_runner_says_why(session, tmp_path):
    app, _ = _app(session, tmp_path)
    app.data.sharded = None
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)  # the Ratios screen loaded
        ratios = app.screen
        # issue #20: G always answers; without a runner (fewer than 2 GPUs, no --gpus) it says so
        assert ratios.check_action("sharded_rerun", ()) is True
        await pilot.press("R")
        await until(
            pilot,
            lambda: any(
                "R shards the shown configs over 2 or more GPUs" in str(n.message)
                or "no GPU visible" in str(n.message)
                for n in app._notifications
            ),
            "R says why it cannot shard",
        )
        assert any(
            "R shards the shown configs over 2 or more GPUs" in str(n.message)
            or "no GPU visible" in str(n.message)
            for n in app._notifications
        )
        app.data.sharded_unavailable = "this workspace has no suite to re-run (open it with --tilegym DIR)"
        assert ratios.check_action("sharded_rerun", ()) is True
        await pilot.press("R")
        await until(
            pilot,
            lambda: any("no suite to re-run" in str(n.message) for n in app._notifications),
            "R says the workspace has no suite",
        )
        assert isinstance(app.screen, RatiosScreen)
        assert any("no suite to re-run" in str(n.message) for n in app._notifications)


async def test_a_failed_collection_is_shown_not_raised(session, tmp_path):
    app, spy = _app(session, tmp_path)
    (tmp_path / "empty").mkdir()
    broken = dataclasses.replace(spy.inner, cwd=tmp_path / "empty")  # no test file there: collection fails
    app.data.sharded = broken
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open_panel(app, pilot)
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await settle(pilot)  # the failure shown (the run's worker ended)
        assert screen.state == "finished" and screen.outcome is None
        status = str(screen.query_one("#sharded-status").render())
        assert status.startswith("failed: ") and "collecting" in status and "nothing merged" in status
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, RatiosScreen), "Escape back on Ratios")
        assert isinstance(app.screen, RatiosScreen)


def test_sharded_rerunner_needs_two_gpus_or_an_explicit_selection(tmp_path, monkeypatch):
    """The recorded rms_norm profile session (its suite re-runs from the package); GPUs are SYNTHETIC
    (CUDA_VISIBLE_DEVICES counts, a fake nvidia-smi for an explicit --gpus)."""
    ws = open_workspace("rms_norm", out_root=None, env={})
    assert sharded_rerunner(ws, "cutile", environ={"CUDA_VISIBLE_DEVICES": "0"}) == (None, "")
    many, why = sharded_rerunner(ws, "cutile", environ={"CUDA_VISIBLE_DEVICES": "0,1,2,3"})
    assert many is not None and many.slots == 4 and many.gpus is None and not why
    fake_nvidia_smi(tmp_path, monkeypatch, "0, GPU-0a0a0a0a-0000-0000-0000-000000000000, NVIDIA H200")
    one, _ = sharded_rerunner(ws, "cutile", "0,0", environ={})  # an explicit choice: even one GPU, twice
    assert one is not None and one.gpus == ("0", "0") and one.slot_label() == "2 GPU slots (0, 0)"
    with pytest.raises(InputError, match="no GPU '3' here"):
        sharded_rerunner(ws, "cutile", "0,3", environ={})
    with pytest.raises(InputError, match="--gpus expects"):
        sharded_rerunner(ws, "cutile", "zero", environ={})
    monkeypatch.setenv("FAKE_SMI_GPUS", "")
    with pytest.raises(InputError, match="nvidia-smi lists no GPU"):
        sharded_rerunner(ws, "cutile", "0", environ={})


def test_sharded_rerunner_refuses_a_recorded_tilegym_session_without_a_checkout(tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path, monkeypatch, "0, GPU-0a0a0a0a-0000-0000-0000-000000000000, NVIDIA H200")
    ws = open_workspace("matmul", out_root=None, env={})
    runner, why = sharded_rerunner(ws, "cutile-rs", "0,0", environ={})
    assert runner is None and "needs --tilegym DIR" in why
    assert sharded_rerunner(ws, "cutile-rs", environ={"CUDA_VISIBLE_DEVICES": "0,1"}) == (None, "")


def test_the_app_takes_gpus_on_the_command_line(tmp_path, monkeypatch):
    from cutile_workbench.cli import main

    monkeypatch.setattr(
        "cutile_workbench.tui.app.WorkbenchApp.run", lambda self: int(self.data.sharded.slots)
    )
    fake_nvidia_smi(tmp_path, monkeypatch, "0, GPU-0a0a0a0a-0000-0000-0000-000000000000, NVIDIA H200")
    monkeypatch.delenv("CUTILE_KERNEL_OUT_ROOT", raising=False)
    monkeypatch.delenv("TILEGYM_PATH", raising=False)
    assert main(["rms_norm", "--gpus", "0,0,0"]) == 3  # the app got 3 slots
    assert main(["rms_norm", "--gpus", "7"]) == 2  # bad input: exit 2 before the app starts
    assert os.environ.get("FAKE_SMI_GPUS")
