"""Issue #35 item 1: ``pilot_wait.settle`` / ``until`` wait for the state, not for the box to look idle.

Textual's ``pilot.pause()`` sleeps in 20 ms steps until the process's CPU time stops advancing, a
guess at idleness that a loaded box can fool either way. ``settle`` makes the pending refresh now and
drains every queue until a round sees nothing but its own callbacks: event-driven, no sleep. The
chain below needs one refresh per step (each step waits for the frame after it), so a settle that
stopped at the first quiet-looking moment, or did not make the refresh, sees 1 of its 30 steps
(checked: ``settle`` returning after its first round fails here with ``1 == 30``). The old
``settle`` reached the 30 steps too on this box, by sleeping (the pause count below: 1, not 0).
SYNTHETIC: a one-widget app whose key starts a chain of after-refresh steps.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pilot_wait import drain, poll, settle, until
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Static

STEPS = 30


class Chain(Static):
    """Each step repaints and schedules the next after the following refresh (a frame apart)."""

    steps_done = 0

    def step(self, left: int) -> None:
        self.steps_done += 1
        self.refresh()  # cheap: a repaint mark, so the next step waits for the frame
        if left:
            self.call_after_refresh(self.step, left - 1)


class ChainApp(App[None]):
    BINDINGS = [("x", "chain", "chain")]  # noqa: RUF012

    def compose(self) -> ComposeResult:
        yield Static("x starts the chain")
        yield Chain(id="chain")

    def action_chain(self) -> None:
        self.query_one(Chain).step(STEPS - 1)


def _no_pause(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real = Pilot.pause

    async def spy(self: Pilot[Any], delay: float | None = None) -> None:
        calls[0] += 1
        await real(self, delay)

    monkeypatch.setattr(Pilot, "pause", spy)
    return calls


async def test_settle_returns_after_every_step_the_key_scheduled(monkeypatch: pytest.MonkeyPatch) -> None:
    """All 30 frame-spaced steps done when ``settle`` returns, and no ``pilot.pause()`` on the way
    (the old ``settle`` paused: failed ``1 == 0``)."""
    app = ChainApp()
    async with app.run_test(size=(40, 6)) as pilot:
        pauses = _no_pause(monkeypatch)
        app.post_message(_key("x"))  # typed, not pressed: Pilot.press would wait on its own
        await settle(pilot)
        assert app.query_one(Chain).steps_done == STEPS
        assert pauses[0] == 0


async def test_until_drains_until_the_state_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    app = ChainApp()
    async with app.run_test(size=(40, 6)) as pilot:
        pauses = _no_pause(monkeypatch)
        app.post_message(_key("x"))
        chain = app.query_one(Chain)
        await until(pilot, lambda: chain.steps_done >= STEPS // 2, "half the chain")
        assert chain.steps_done >= STEPS // 2
        assert pauses[0] == 0


async def test_until_fails_naming_what_never_happened() -> None:
    app = ChainApp()
    async with app.run_test(size=(40, 6)) as pilot:
        with pytest.raises(AssertionError, match="the chain past its end"):
            await until(pilot, lambda: app.query_one(Chain).steps_done > STEPS, "the chain past its end")


def _key(key: str) -> Any:
    from textual import events

    return events.Key(key, key)


class ExclusiveApp(App[None]):
    """``x`` starts a worker that waits; ``y`` starts another of the same exclusive group, which
    cancels the first (as the Report preview's and History's loads do when keys come fast)."""

    BINDINGS = [("x", "first", "first"), ("y", "second", "second")]  # noqa: RUF012

    def __init__(self) -> None:
        super().__init__()
        self.first_started = asyncio.Event()
        self.second_done = False

    def action_first(self) -> None:
        self.run_worker(self._first(), group="load", exclusive=True)

    def action_second(self) -> None:
        self.run_worker(self._second(), group="load", exclusive=True)

    async def _first(self) -> None:
        self.first_started.set()
        await asyncio.Event().wait()  # never ends by itself: only the second key's worker ends it

    async def _second(self) -> None:
        self.second_done = True


async def test_settle_takes_a_superseded_worker_as_finished() -> None:
    """``settle`` waiting on a worker that a later key's exclusive worker cancels: the long storm
    rms_norm-160x48-2 failed with ``WorkerCancelled`` out of ``workers.wait_for_complete()``. A
    cancelled worker is finished; settle goes on to the one that replaced it."""
    app = ExclusiveApp()
    async with app.run_test(size=(40, 6)) as pilot:
        app.post_message(_key("x"))
        waiting = asyncio.create_task(settle(pilot))
        await app.first_started.wait()
        app.post_message(_key("y"))
        await waiting
        assert app.second_done
        assert not any(w.is_running for w in app.workers)


async def test_poll_drains_every_round_and_returns_when_the_state_holds() -> None:
    """Each round checks, then drains: the chain's frame-spaced steps advance only through the
    drains' refreshes, so with ``step=0`` (a bare yield, no time to reach a frame) the rounds alone
    bound it (30 rounds here). Checked: a poll that only slept failed ``never happened: the whole chain``."""
    app = ChainApp()
    async with app.run_test(size=(40, 6)) as pilot:
        chain = app.query_one(Chain)
        checks = [0]

        def done() -> bool:
            checks[0] += 1
            return chain.steps_done >= STEPS

        app.post_message(_key("x"))
        await poll(pilot, done, "the whole chain", rounds=2 * STEPS, step=0)
        assert chain.steps_done == STEPS and checks[0] <= 2 * STEPS + 1


async def test_poll_fails_naming_what_never_happened_after_its_rounds() -> None:
    app = ChainApp()
    async with app.run_test(size=(40, 6)) as pilot:
        checks = [0]

        def never() -> bool:
            checks[0] += 1
            return False

        with pytest.raises(AssertionError, match="never happened: the pid file"):
            await poll(pilot, never, "the pid file", rounds=7, step=0)
        assert checks[0] == 8  # 7 rounds and a last check: a number of rounds, not a time


async def test_poll_sees_the_app_stop_and_drain_never_waits_on_a_stopped_app() -> None:
    """The SIGHUP test waits for the app to stop: a drain must not post callbacks that a stopping
    app never runs (they would hang it), and a drain of a stopped app returns at once. Checked: with
    the old drain (it waited for callbacks no node would run) this test hung until killed at 30 s."""
    app = ChainApp()
    async with app.run_test(size=(40, 6)) as pilot:
        app.call_later(app.exit)
        await poll(pilot, lambda: not app.is_running, "the app stopped", step=0.01)
        assert await drain(pilot) == 0
