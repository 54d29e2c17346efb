"""Progress of a sharded run: tail the shards' ``progress.jsonl`` files, keep per-shard counters.

Contract:
- :class:`ProgressTail` reads one shard's stream incrementally (by byte offset; a line is handed
  out only once it is complete, so a file read while a worker writes it is never misparsed). A
  malformed line is skipped and reported once as a ``scaleout_note`` event, never raised. A file
  that shrank (the shard was reset for a rerun) is read again from its start.
- Every event a tail returns carries ``shard`` (int). Worker events keep their own fields
  (``role``, ``backend``, the runner's ``attempt``...).
- :class:`ProgressBoard` folds the whole stream (worker events and the service's ``scaleout_*``
  events) into per-shard counters — planned, finished, failed, state, host, GPU — that a face
  (CLI line printer, TUI) renders; it is thread-safe and does no I/O; :meth:`ProgressBoard.snapshot`
  hands out copies (the TUI's worker thread posts them to the screen).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cutile_workbench.artifacts.events import Event, read_events
from cutile_workbench.errors import InputError
from cutile_workbench.model import ShardProgress as ShardProgress  # a value the faces show: in the model

#: worker events not forwarded to the progress stream (bulky; the shard layout keeps them)
NOT_FORWARDED = frozenset({"launches", "progress"})

OnEvent = Callable[[Event], None]


def scaleout_event(kind: str, **fields: Any) -> Event:
    """An event made by the scale-out service itself (``source: scaleout``)."""
    return Event(event=kind, ts=time.time(), fields={"source": "scaleout", **fields})


class ProgressTail:
    """Incremental reader of one shard's progress stream."""

    def __init__(self, path: Path, shard: int) -> None:
        self.path = Path(path)
        self.shard = shard
        self._offset = 0
        self._pending = b""
        self._lineno = 0
        self._warned = False

    def poll(self) -> list[Event]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(0, 2)
                size = fh.tell()
                if size < self._offset:  # reset for a rerun: start over
                    self._offset, self._pending, self._lineno = 0, b"", 0
                fh.seek(self._offset)
                data = fh.read()
        except OSError:
            return []
        self._offset += len(data)
        self._pending += data
        *lines, self._pending = self._pending.split(b"\n")
        out: list[Event] = []
        for raw in lines:
            self._lineno += 1
            if not raw.strip():
                continue
            try:
                parsed = read_events([raw.decode("utf-8", errors="replace") + "\n"], source=str(self.path))
            except InputError as exc:
                if not self._warned:
                    self._warned = True
                    out.append(
                        scaleout_event(
                            "scaleout_note",
                            shard=self.shard,
                            note=f"{self.path}:{self._lineno}: skipped malformed progress line "
                            f"({exc.message})",
                        )
                    )
                continue
            for ev in parsed:
                out.append(Event(event=ev.event, ts=ev.ts, fields={**ev.fields, "shard": self.shard}))
        return out


class TailSet:
    """Tails of several shards, polled together; hands every event to ``on_event`` in file order."""

    def __init__(self, paths: Mapping[int, Path], on_event: OnEvent | None) -> None:
        self.tails = {i: ProgressTail(p, i) for i, p in paths.items()}
        self.on_event = on_event

    def poll(self, shards: Iterable[int] | None = None) -> int:
        n = 0
        for i in self.tails if shards is None else shards:
            tail = self.tails.get(i)
            if tail is None:
                continue
            for ev in tail.poll():
                n += 1
                if self.on_event is not None:
                    self.on_event(ev)
        return n


@dataclass
class ProgressBoard:
    """Per-shard counters from the event stream (see the module contract)."""

    shards: dict[int, ShardProgress] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def shard(self, index: int) -> ShardProgress:
        return self.shards.setdefault(index, ShardProgress(index))

    def feed(self, ev: Event) -> None:
        with self._lock:
            if ev.event == "scaleout_plan":
                for s in ev.get("shards") or []:
                    sp = self.shard(int(s["index"]))
                    sp.planned = int(s.get("configs", 0))
                    sp.state = str(s.get("state", sp.state))
                return
            index = ev.get("shard")
            if not isinstance(index, int):
                return
            sp = self.shard(index)
            if ev.get("device") is not None and ev.event in ("scaleout_shard_state", "shard_start"):
                sp.device = str(ev.get("device"))
            if ev.event == "scaleout_shard_state":
                sp.state = str(ev.get("state", sp.state))
                sp.host = str(ev.get("host") or sp.host)
                sp.gpu = str(ev.get("gpu") or sp.gpu)
                sp.detail = str(ev.get("detail") or "")
            elif ev.event == "shard_start":
                sp.state = "running"
                sp.host = str(ev.get("host") or "")
                sp.gpu = str(ev.get("gpu_name") or "")
            elif ev.event == "test_start":
                sp.running = str(ev.get("nodeid"))
            elif ev.event == "test_finish":
                sp.finished += 1
                sp.running = None
                if ev.get("outcome") == "failed":
                    sp.failed += 1
            elif ev.event == "shard_finish":
                sp.state = str(ev.get("state", sp.state))
                sp.running = None

    def snapshot(self) -> list[ShardProgress]:
        """Copies of the shards' counters, by index (safe to hand to another thread)."""
        with self._lock:
            return [replace(s) for _i, s in sorted(self.shards.items())]

    def totals(self) -> tuple[int, int, int]:
        """``(finished, planned, failed)`` over all shards."""
        with self._lock:
            return (
                sum(s.finished for s in self.shards.values()),
                sum(s.planned for s in self.shards.values()),
                sum(s.failed for s in self.shards.values()),
            )
