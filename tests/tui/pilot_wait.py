"""Pilot helpers that wait for state, never for a fixed time (issue #35 item 1), and type like a fast typist.

- :func:`settle`: every worker of the app finished, no widget of the screen ``busy`` (the Report
  preview's rebuild), no typed key still held by the app (``keys_pending``), then the message queues drained (``pilot.pause()`` with no delay: Textual's
  "process idle", not a sleep).
- :func:`until`: drain the queues until ``predicate()`` holds; bounded by a number of rounds, not
  by seconds, so a loaded box only makes it slower. Fails naming what never happened.
- :func:`type_fast`: hand every key to the app's queue at once, as a terminal does when several
  keys arrive in one read; ``pilot.press`` lets the app go idle between keys, which hides the
  races a fast typist meets.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any

from textual import events

ROUNDS = 400  # drains of the queues: far more than any state here needs (each key takes 1-3)


async def settle(pilot: Any) -> None:
    """Wait until every worker of the app has finished and the queues are drained."""
    app = pilot.app
    for _ in range(ROUNDS):
        await app.workers.wait_for_complete()
        await pilot.pause()
        busy = [w for w in app.screen.query("*") if getattr(w, "busy", False) is True]
        if getattr(app, "keys_pending", 0):  # keys the app holds until the one before is done
            continue
        if not busy and not any(w.is_running for w in app.workers):
            return
    raise AssertionError("workers still running (or widgets busy) after settling")


async def until(pilot: Any, predicate: Callable[[], object], what: str = "") -> None:
    """Drain the queues (and finished workers) until ``predicate()`` is true."""
    for _ in range(ROUNDS):
        if predicate():
            return
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
    if not predicate():
        raise AssertionError(f"never happened: {what or getattr(predicate, '__doc__', '') or predicate}")


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
