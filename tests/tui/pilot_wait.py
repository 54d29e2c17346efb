"""Pilot helpers that wait for state, never for a fixed time (issue #35 item 1), and type like a fast typist.

- :func:`drain`: one round of "every queue processed": a callback is queued behind whatever waits
  at the app and at every node of the screen (``call_later``), after the screen's pending refresh
  was made (``Pilot.wait_for_animation``: animations done, then the refresh and its after-refresh
  callbacks run now instead of at the next frame timer); returns, once every callback has run,
  how many other messages those nodes processed meanwhile. Event-driven: no sleep, no poll.
- :func:`workers_done`: every started worker finished (a cancelled one counts as finished).
- :func:`settle`: :func:`drain` until a round finds the app quiet: every worker finished, no
  widget of the screen ``busy`` (the Report preview's rebuild), no typed key still held by the app
  (``keys_pending``), the same screen, and no message processed but the round's own callbacks.
  Textual's ``pilot.pause()`` is not used: it sleeps in 20 ms steps until the process looks idle
  by CPU time, so on a loaded box it returns early (the app was only descheduled) or late.
- :func:`until`: drain until ``predicate()`` holds (a quiet round waits for the first worker to
  finish, not for all: a state reached while a worker runs is seen). Both are bounded by a number of rounds, not by
  seconds, so a loaded box only makes them slower. Each fails naming what never happened.
- :func:`poll`: for state OUTSIDE the app's queues (a child process started, a file a run
  writes, the app stopped): each round checks, drains the queues, then sleeps ``step`` seconds,
  because what is waited on lives in another process or thread that no queue of the app reports
  on. Bounded by a number of rounds too (generous: a loaded box only makes it slower).
- :func:`key_handled`: the key just pressed came back handled (``keys_pending`` back to 0): for a key
  that must change nothing, where no new state can be named.
- :func:`type_fast`: hand every key to the app's queue at once, as a terminal does when several
  keys arrive in one read; ``pilot.press`` lets the app go idle between keys, which hides the
  races a fast typist meets.
"""

from __future__ import annotations

import asyncio
import unicodedata
from collections.abc import Callable
from typing import Any

from textual import events
from textual.worker import WorkerCancelled, WorkerState

ROUNDS = 400  # drains of the queues: far more than any state here needs (each key takes 1-3)
POLL_ROUNDS = 2400  # rounds of poll: at its default step at least 120 s, a cap that ends a hung test
POLL_STEP_S = 0.05
STOP_CHECK_S = 0.5  # how often drain looks whether a node it waits on stopped (never a result)


async def drain(pilot: Any) -> int:
    """One round: the pending refresh made, then every queue of the app and the screen processed up
    to a callback queued now. Returns the number of messages processed meanwhile besides those."""
    app = pilot.app
    if _stopping(app):
        return 0
    await pilot.wait_for_animation()
    try:
        screen = app.screen
    except Exception:  # no screen (the app is quitting): nothing left to drain
        return 0
    if _stopping(app):  # checked with no await before the posts below: a stopping app may never run them
        return 0
    nodes = [app, *screen.walk_children(with_self=True)]
    nodes = [node for node in nodes if node.is_running and node.is_attached]
    waiting = set(range(len(nodes)))
    done = asyncio.Event()
    ours: set[int] = set()
    processed = [0]

    def ran_at(index: int) -> Callable[[], None]:
        def ran() -> None:
            waiting.discard(index)
            if not waiting:
                done.set()

        return ran

    def seen(message: object) -> None:
        if id(message) not in ours:
            processed[0] += 1

    for node in nodes:
        node.message_signal.subscribe(node, seen, immediate=True)
    try:
        for index, node in enumerate(nodes):
            message = events.Callback(callback=ran_at(index))
            ours.add(id(message))
            if not node.post_message(message):  # closing: nothing will run there
                ran_at(index)()
        await _all_ran(done, nodes, waiting)
    finally:
        for node in nodes:
            node.message_signal.unsubscribe(node)
    return processed[0]


def _stopping(app: Any) -> bool:
    """The app was asked to exit (``return_code`` set) or stopped: a callback posted now may never run."""
    return app.return_code is not None or not app.is_running


async def _all_ran(done: asyncio.Event, nodes: list[Any], waiting: set[int]) -> None:
    """Wait for every node's callback. A node that stopped meanwhile (the app exiting while a
    :func:`poll` waits) never runs its callback: it counts as drained, so drain cannot hang."""
    if done.is_set():
        return
    waiter = asyncio.ensure_future(done.wait())
    try:
        while not done.is_set():
            await asyncio.wait({waiter}, timeout=STOP_CHECK_S)
            for index in [i for i in waiting if not nodes[i].is_running]:
                waiting.discard(index)
            if not waiting:
                return
    finally:
        waiter.cancel()


async def workers_done(app: Any) -> None:
    """Every worker started so far finished. A cancelled one counts as finished: a key's exclusive
    worker cancels the one an earlier key started (the Report preview, History), and
    ``workers.wait_for_complete()`` raised ``WorkerCancelled`` for it (long storm rms_norm-160x48-2)."""
    for worker in list(app.workers):
        if worker.state == WorkerState.PENDING:  # not started yet: a later round waits for it
            continue
        try:
            await worker.wait()
        except WorkerCancelled:
            pass


def _quiet(app: Any) -> bool:
    """No worker running, no widget of the screen busy, no typed key held by the app."""
    if getattr(app, "keys_pending", 0):  # keys the app holds until the one before is done
        return False
    if any(w.is_running for w in app.workers):
        return False
    try:
        screen = app.screen
    except Exception:  # quitting
        return True
    return not any(getattr(w, "busy", False) is True for w in screen.query("*"))


async def settle(pilot: Any) -> None:
    """Wait until every worker of the app has finished and the queues are drained (state, not time)."""
    app = pilot.app
    for _ in range(ROUNDS):
        await workers_done(app)
        try:
            before = app.screen
        except Exception:
            return  # quitting: no screen to settle
        others = await drain(pilot)
        if others == 0 and _quiet(app) and app.screen is before:
            return
    raise AssertionError("workers still running, widgets busy or messages still flowing after settling")


async def until(pilot: Any, predicate: Callable[[], object], what: str = "") -> None:
    """Drain the queues until ``predicate()`` is true. A round that saw no message waits for the
    first running worker to finish (a load whose result the predicate may need); a round that saw
    messages drains again at once, so a state reached while a worker still runs (a key held
    during a plan) is seen without waiting for that worker."""
    for _ in range(ROUNDS):
        if predicate():
            return
        if await drain(pilot) == 0:
            await _first_worker_done(pilot.app)
    if not predicate():
        raise AssertionError(f"never happened: {what or getattr(predicate, '__doc__', '') or predicate}")


async def poll(
    pilot: Any,
    predicate: Callable[[], object],
    what: str,
    *,
    rounds: int = POLL_ROUNDS,
    step: float = POLL_STEP_S,
) -> None:
    """Wait for ``predicate()`` on state OUTSIDE the app's queues: a child process's pid file, shards
    that started a test, a run's outcome written by a worker thread, the app having stopped.
    :func:`until` cannot see those (it drains queues and waits on workers; a worker that never ends,
    as a hung child's, would hold it). Each round checks ``predicate()``, drains the app's queues
    (the app's reaction to what happened outside, and what the next lines read), then sleeps
    ``step`` seconds: the sleep is the wait itself, since what is waited on lives in another
    process or thread and no queue of the app says when it changed. Bounded by ``rounds``, not by
    seconds (a loaded box only makes each round slower); fails with ``never happened: <what>``."""
    app = pilot.app
    for _ in range(rounds):
        if predicate():
            return
        if not _stopping(app):
            await drain(pilot)
        await asyncio.sleep(step)
    if not predicate():
        raise AssertionError(f"never happened: {what}")


async def key_handled(pilot: Any) -> None:
    """The key just pressed came back handled, every binding it ran included: a drain lets the app
    read it (it is then in flight), and its KeyHandled reaching the app ends ``keys_pending``. For a
    key that must change nothing, where no new state can be named."""
    await drain(pilot)
    await until(pilot, lambda: getattr(pilot.app, "keys_pending", 0) == 0, "the key came back handled")


async def _first_worker_done(app: Any) -> None:
    running = [w for w in app.workers if w.state == WorkerState.RUNNING]
    if not running:
        return
    waits = [asyncio.ensure_future(w.wait()) for w in running]
    done, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    for task in done:  # its outcome is the app's to handle (a failed load shows an error)
        task.exception()


def _key_event(key: str) -> events.Key:
    if len(key) == 1:
        return events.Key(key if key.isalnum() else _name_of(key), key)
    try:
        char: str | None = unicodedata.lookup(key.upper().replace("_", " "))
    except KeyError:
        char = None
    if key in ("enter",):
        char = "\r"
    elif key in ("escape",):
        char = "\x1b"
    elif key in ("tab",):
        char = "\t"
    elif (
        key.startswith(("up", "down", "left", "right", "home", "end", "page", "ctrl+", "f")) and len(key) > 1
    ):
        char = None
    return events.Key(key, char)


def _name_of(char: str) -> str:
    from textual.keys import _character_to_key

    return _character_to_key(char)


def type_fast(pilot: Any, *keys: str) -> None:
    """Queue ``keys`` (Pilot's names: ``"down"``, ``"3"``, ``"slash"`` or ``"/"``) in one go."""
    app = pilot.app
    for key in keys:
        event = _key_event(key)
        event.set_sender(app)
        app.post_message(event)
