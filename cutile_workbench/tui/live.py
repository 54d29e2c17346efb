"""Live runs: turn a runner's JSON-lines events into typed messages; replay a recorded stream.

Contract: :func:`dispatch_event` maps one event (``cutile_workbench.artifacts.events.Event`` or a dict with
``event``) onto messages through a :class:`Batcher` (launch sets are grouped and flushed at most
every ``interval_s``, so a fast stream does not flood the message queue). Malformed ``launches``
payloads raise :class:`~cutile_workbench.errors.InputError` naming the event line. :class:`ReplayRunner`
is a :class:`~cutile_workbench.tui.data.LiveRunner` that re-emits a recorded ``events.jsonl`` (with its
original pacing scaled by ``speed``), used for the recorded session and in tests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from textual.message import Message

from cutile_workbench.model import LaunchSet, RatioRow
from cutile_workbench.services.timeline import VERSION, sets_from_document
from cutile_workbench.tui.messages import LiveLaunches, LiveProgress, LiveRecord


def _kind_fields(ev: Any) -> tuple[str, Mapping[str, Any], int | None]:
    if isinstance(ev, Mapping):
        return str(ev.get("event") or ev.get("kind") or ""), ev, None
    return str(getattr(ev, "event", "")), getattr(ev, "fields", {}), getattr(ev, "line", None)


class Batcher:
    """Collects launch sets and posts them as one message per interval."""

    def __init__(self, post: Callable[[Message], Any], interval_s: float = 0.05) -> None:
        self.post = post
        self.interval_s = interval_s
        self.pending: list[LaunchSet] = []
        self.last = 0.0
        self.done = 0
        self.total = 0

    def add(self, sets: list[LaunchSet]) -> None:
        self.pending.extend(sets)
        if time.monotonic() - self.last >= self.interval_s:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.post(LiveLaunches(self.pending))
            self.pending = []
        self.last = time.monotonic()


def dispatch_event(ev: Any, batch: Batcher, source: str = "<live events>") -> None:
    kind, fields, line = _kind_fields(ev)
    if kind == "collected":
        batch.total = len(fields.get("nodeids") or [])
        batch.post(LiveProgress(batch.done, batch.total))
    elif kind == "test_finish":
        batch.done += 1
        batch.post(LiveProgress(batch.done, max(batch.total, batch.done), str(fields.get("nodeid", ""))))
    elif kind == "record":
        bench = fields.get("benchmark") or {}
        framework = str(fields.get("framework", ""))
        median = None
        try:
            median = float(bench[framework]["forward"]["median"])  # benchmark_fn_cupti key, ms
        except (KeyError, TypeError, ValueError):
            median = None
        batch.post(
            LiveRecord(str(fields.get("nodeid", "")), framework, str(fields.get("params", "")), median)
        )
    elif kind == "launches":
        doc = {
            "version": VERSION,
            "sets": [
                {k: fields[k] for k in ("nodeid", "backend", "params", "calls") if k in fields}
                | {"source": fields.get("source", "cupti")}
            ],
        }
        where = f"{source}:{line}" if line is not None else source
        batch.add(sets_from_document(doc, where))  # InputError names the event line
    elif kind == "session_finish":
        batch.flush()


class ReplayRunner:
    """Replays a recorded event stream as if it were a live run (filtered to the chosen configs)."""

    def __init__(self, events_path: Path, *, speed: float = 20.0, max_gap_s: float = 0.2) -> None:
        self.events_path = Path(events_path)
        self.events_source = str(self.events_path)
        self.speed = speed
        self.max_gap_s = max_gap_s

    def __call__(
        self, rows: Sequence[RatioRow], on_event: Callable[[Any], None], cancel: threading.Event
    ) -> int:
        from cutile_workbench.services.runs import read_events

        wanted = {r.params for r in rows}
        events = read_events(self.events_path, allow_truncated_tail=True)
        prev_ts: float | None = None
        for ev in events:
            if cancel.is_set():
                return 130
            params = ev.get("params")
            nodeid = str(ev.get("nodeid", ""))
            if wanted and params is None and nodeid and not any(p in nodeid for p in wanted):
                continue
            if wanted and params is not None and params not in wanted:
                continue
            if prev_ts is not None and self.speed > 0:
                gap = min(self.max_gap_s, max(0.0, (ev.ts - prev_ts) / self.speed))
                if cancel.wait(gap):
                    return 130
            prev_ts = ev.ts
            on_event(ev)
        return 0
