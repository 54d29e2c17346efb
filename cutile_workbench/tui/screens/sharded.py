"""Sharded re-run panel (``R`` on Ratios): the shown configs re-run over the node's GPUs, live per shard.

Contract:
- Opened with the rows to re-run and ``AppData.sharded`` (a
  :class:`~cutile_workbench.services.sharded.ShardedRerun`, or any callable with its ``describe(rows)`` and
  ``(rows, on_event, cancel) -> ShardedOutcome``). It first says what would run; Enter starts it.
- The run is a thread worker that feeds the service's events to the CLI's own line printer
  (:class:`~cutile_workbench.run.scaleout.console.ConsolePrinter`: its thread-safe
  :class:`~cutile_workbench.run.scaleout.progress.ProgressBoard` and the same lines as ``run --gpus``) and
  posts only the outcome; every 0.1 s the screen renders a board snapshot into the
  :class:`~cutile_workbench.tui.widgets.shard_panel.ShardPanel` (fed that data only) and appends the new lines to the log.
- Escape while it runs cancels (the service stops every worker and its pytest child; nothing is
  merged) and the panel stays until the run has really ended; Escape otherwise closes. Leaving the
  app while it runs cancels too and waits for the workers to be gone (no orphaned workers); so do
  SIGHUP (a dropped SSH session), SIGTERM and SIGINT while it runs (:mod:`cutile_workbench.infra.cancel`).
- A failure (collection, GPUs, an unreadable shard at merge) is shown in the panel, never raised.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Log, Static
from textual.worker import Worker, WorkerState

from cutile_workbench.errors import WorkbenchError
from cutile_workbench.model import RatioRow
from cutile_workbench.services.sharded import ConsolePrinter, install_cancel_handlers, restore_handlers
from cutile_workbench.tui.chrome import WorkbenchFooter
from cutile_workbench.tui.data import ShardedRunner
from cutile_workbench.tui.widgets.shard_panel import ShardPanel

BOARD_INTERVAL_S = 0.1  # how often the panel shows the board
LOG_LINES = 5000  # the progress log keeps this many lines (a line per config and shard event)
#: how long leaving the app waits for a cancelled run's workers (the executor's SIGKILL grace is 15 s)
EXIT_WAIT_S = 30.0


@dataclass
class ShardedDone(Message):
    outcome: Any  # ShardedOutcome, or None when the run failed (``error`` says why)
    error: str = ""


class _Lines:
    """A text stream the CLI's line printer writes to (run thread); the screen takes the new lines (UI)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def write(self, text: str) -> None:
        with self._lock:
            self.lines.extend(ln for ln in text.splitlines() if ln.strip())

    def flush(self) -> None:
        pass

    def take(self) -> list[str]:
        with self._lock:
            taken, self.lines = self.lines, []
        return taken


class ShardedRunScreen(ModalScreen[None]):
    """The panel (see the module contract)."""

    DEFAULT_CSS = """
    ShardedRunScreen { align: center middle; }
    ShardedRunScreen #sharded { width: 96%; height: 90%; border: thick $accent; background: $surface; padding: 0 1; }
    ShardedRunScreen #sharded-title { height: auto; text-style: bold; margin-bottom: 1; }
    ShardedRunScreen #shards { height: auto; max-height: 12; margin-bottom: 1; }
    ShardedRunScreen #sharded-log { height: 1fr; color: $text-muted; border-top: solid $panel; }
    ShardedRunScreen #sharded-status { height: auto; border-top: solid $panel; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "start", "Start", tooltip="Start the sharded re-run", id="sharded-start"),
        Binding(
            "escape",
            "cancel_run",
            "Cancel run",
            tooltip="Stop every shard's worker; nothing is merged",
            id="sharded-cancel",
        ),
        Binding("escape", "close", "Close", tooltip="Close the panel", id="sharded-close"),
    ]

    def __init__(self, rows: Sequence[RatioRow], runner: ShardedRunner) -> None:
        super().__init__()
        self.rows = list(rows)
        self.runner = runner
        self.state = "ready"  # ready | running | cancelling | finished
        self.cancel_event = threading.Event()
        self.ended = threading.Event()  # the worker thread has returned
        self.outcome: Any = None
        self.sink = _Lines()
        self.printer = ConsolePrinter(self.sink)  # type: ignore[arg-type]  # fed by the run thread only
        self._ticker: Timer | None = None
        self._previous_handlers: dict[int, Any] = {}

    def compose(self) -> ComposeResult:
        with Vertical(id="sharded"):
            yield Static(Text(f"Sharded re-run — {self.runner.describe(self.rows)}"), id="sharded-title")
            panel = ShardPanel(id="shards")
            panel.display = False  # until Enter: nothing is planned yet
            yield panel
            yield Log(id="sharded-log", max_lines=LOG_LINES)
            yield Static(Text("Enter starts · Escape closes"), id="sharded-status")
        yield WorkbenchFooter()

    # ------------------------------------------------------------------ keys
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "start":
            return self.state == "ready"
        if action == "cancel_run":
            return self.state in ("running", "cancelling")
        if action == "close":
            return self.state in ("ready", "finished")
        return True

    def action_start(self) -> None:
        if self.state != "ready":
            return
        self.state = "running"
        self._status("running: Escape cancels (every worker is stopped, nothing merged)")
        self.refresh_bindings()
        self.query_one(ShardPanel).display = True
        self._ticker = self.set_interval(BOARD_INTERVAL_S, self._show_progress)
        # SIGHUP (the SSH session dropped) or SIGTERM would kill the app at once and leave the
        # workers (sessions of their own) running: they cancel the run and leave the app instead.
        loop = asyncio.get_running_loop()

        def on_signal(_signum: int) -> None:
            self.cancel_event.set()
            loop.call_soon_threadsafe(self.app.exit)

        self._previous_handlers = install_cancel_handlers(on_signal)
        self.run_sharded()

    def action_cancel_run(self) -> None:
        if self.state == "running":
            self.state = "cancelling"
            self.cancel_event.set()
            self._status("cancelling: stopping every shard's worker and its pytest child…", "warning")
            self.refresh_bindings()

    def action_close(self) -> None:
        if self.state in ("ready", "finished"):
            self.dismiss(None)

    # ------------------------------------------------------------------ the run (thread)
    @work(thread=True, exclusive=True, exit_on_error=False, group="sharded", description="sharded re-run")
    def run_sharded(self) -> None:
        outcome, error = None, ""
        try:  # the service calls on_event from this thread only: the printer is never shared
            outcome = self.runner(self.rows, self.printer, self.cancel_event)
        except WorkbenchError as exc:
            error = str(exc)
        finally:
            self.ended.set()
        self.post_message(ShardedDone(outcome, error))

    # ------------------------------------------------------------------ the panel (UI thread)
    def _show_progress(self) -> None:
        self.query_one(ShardPanel).show(self.printer.board.snapshot())
        lines = self.sink.take()
        if lines:
            log = self.query_one("#sharded-log", Log)
            follow = log.is_vertical_scroll_end  # keep following the tail unless the user scrolled up
            log.write_lines(lines, scroll_end=False)
            if follow:  # once the new lines are laid out (an immediate scroll clamps to the old end)
                self.call_after_refresh(log.scroll_end, animate=False, x_axis=False)

    def on_sharded_done(self, msg: ShardedDone) -> None:
        if self._ticker is not None:
            self._ticker.stop()
        restore_handlers(self._previous_handlers)
        self._previous_handlers = {}
        self._show_progress()
        self.state = "finished"
        self.outcome = msg.outcome
        if msg.outcome is None:
            self._status(f"failed: {msg.error}\nnothing merged · Escape closes", "error")
            self.notify(msg.error, title="Sharded re-run failed", severity="error", timeout=15, markup=False)
        else:
            summary = "\n".join(msg.outcome.summary)
            self._status(f"{summary}\nEscape closes", "warning" if msg.outcome.rc else "success")
            self.notify(
                "sharded re-run "
                + ("cancelled" if msg.outcome.cancelled else f"finished (exit {msg.outcome.rc})"),
                severity="warning" if msg.outcome.rc else "information",
                timeout=8,
            )
        self.refresh_bindings()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "sharded" and event.state == WorkerState.ERROR:  # a bug of ours, not a crash
            self.post_message(ShardedDone(None, f"{type(event.worker.error).__name__}: {event.worker.error}"))

    def on_unmount(self) -> None:
        # Leaving the app mid-run: the workers run in sessions of their own, so stop them here and
        # wait for the run to end (bounded: the executor SIGKILLs a worker after its grace).
        if self.state in ("running", "cancelling") and not self.ended.is_set():
            self.cancel_event.set()
            self.ended.wait(EXIT_WAIT_S)
        restore_handlers(self._previous_handlers)
        self._previous_handlers = {}

    def _status(self, text: str, tone: str = "") -> None:
        style = {"warning": "yellow", "error": "bold red", "success": "green"}.get(tone, "")
        self.query_one("#sharded-status", Static).update(Text(text, style=style))
