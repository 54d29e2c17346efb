"""Typed messages posted by the live-run worker (thread) to the Timeline screen.

``post_message`` is thread-safe; the worker never touches widgets. High-rate progress is
coalesced with ``can_replace`` (only the newest pending progress survives in the queue), and
launch batches are grouped by :class:`cutile_workbench.tui.live.Batcher` before they are posted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.message import Message

from cutile_workbench.model import LaunchSet


@dataclass
class LiveProgress(Message):
    done: int
    total: int
    nodeid: str = ""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LiveProgress)


@dataclass
class LiveLaunches(Message):
    sets: list[LaunchSet] = field(default_factory=list)


@dataclass
class LiveRecord(Message):
    """A per-config result arrived (framework, params, forward median)."""

    nodeid: str
    framework: str
    params: str
    median_ms: float | None


@dataclass
class LiveFinished(Message):
    rc: int
    cancelled: bool


@dataclass
class LiveFailed(Message):
    error: str
