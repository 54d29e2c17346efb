"""Timeline screen: launches of one config (candidate vs baseline lanes), details, live runs.

Live runs use a thread worker (``exclusive``: a new run cancels the old one; ``exit_on_error``
off: a failing runner becomes an error modal, not a crash). The worker only posts messages.
Escape cancels a running run (the key exists only while one runs: ``check_action``).
"""

from __future__ import annotations

import gc
import threading
from functools import partial
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Footer, ProgressBar, Static
from textual.worker import Worker, WorkerState

from widgets.launch_timeline import LaunchTimeline, launch_details, phase_tag
from workbench.diagnosis import same_backend
from workbench.errors import WorkbenchError
from workbench.model import LaunchSet, RatioRow
from workbench.tui.chrome import WorkbenchHeader
from workbench.tui.host import PaletteCommand
from workbench.tui.live import Batcher, dispatch_event
from workbench.tui.messages import LiveFailed, LiveFinished, LiveLaunches, LiveProgress, LiveRecord
from workbench.tui.screens.base import WorkbenchScreen


class TimelineScreen(WorkbenchScreen):
    SCREEN_TITLE = "Timeline"
    ABOUT = (
        "Per measured call, a candidate lane and a baseline lane; every GPU activity the call caused "
        "is a bar: kernel █, memcpy ▓, memset ▒. More bars in a candidate lane than in its baseline "
        "lane = extra launches per call (a wrapper bug). Select a launch (Tab) to see grid, block, "
        "registers, shared memory and duration. The side panel shows the config's ncu probe "
        "(`cutile-workbench probe`), candidate beside reference, when one is filed. Live runs stream "
        "bars and per-config results as they arrive; Escape cancels."
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel_live", "Cancel run", tooltip="Stop the live run", id="timeline-cancel"),
        Binding("L", "live", "Run live", tooltip="Re-run this config live on this GPU", id="timeline-live"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.row: RatioRow | None = None
        self.live_running = False
        self.cancel_event = threading.Event()
        self.live_results: list[LiveRecord] = []
        #: measurement sets seen per (nodeid, backend) in the live run: the 2nd is the backward one
        self._live_sets: dict[tuple[str, str], int] = {}

    def compose(self) -> ComposeResult:
        yield self.header()
        yield Static(Text("no config selected: press 1 and Enter on a row"), id="title")
        yield ProgressBar(total=None, show_eta=False, id="progress", classes="hidden")
        with Horizontal(id="timeline-body"):
            yield LaunchTimeline(id="timeline")
            with Vertical(id="side"):
                yield Static(Text("select a launch: Tab / Shift+Tab"), id="details")
                yield Static(id="probe-title")
                yield DataTable(id="probe", cursor_type="none", zebra_stripes=True)
                yield DataTable(id="live-results", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#live-results", DataTable).add_columns("framework", "params", "median ms")
        self.query_one("#probe", DataTable).can_focus = False  # read-only numbers: Tab stays on the lanes
        self.query_one(LaunchTimeline).focus()
        if self.wb.pending_row is not None:
            self.show_row(self.wb.pending_row, live=self.wb.pending_live)

    def on_screen_resume(self) -> None:
        if self.wb.pending_row is not None and self.is_mounted:
            self.show_row(self.wb.pending_row, live=self.wb.pending_live)

    @property
    def timeline(self) -> LaunchTimeline:
        return self.query_one(LaunchTimeline)

    def show_row(self, row: RatioRow, *, live: bool = False) -> None:
        self.wb.pending_row = None
        self.wb.pending_live = False
        self.row = row
        cand, base = self.data.sets_for(row)
        self.timeline.set_sets(self._measurements(cand), self._measurements(base))
        # The config's sets and lanes (100k+ objects) live while it is shown: move them out of the
        # cyclic GC's reach, as the app does after load, or a generation-2 pass over them lands in a
        # frame (80-145 ms seen in bench/tui_start.py). They hold no cycles: refcounting frees them.
        gc.freeze()
        ratio = "NA" if row.ratio is None else f"{row.ratio:.3f}x"
        lc = f"{row.candidate_launches if row.candidate_launches is not None else '?'}"
        lb = f"{row.baseline_launches if row.baseline_launches is not None else '?'}"
        title = Text(f"{row.params}  ratio {ratio}  launches/call {lc}/{lb}  vs {row.baseline_backend or '—'}")
        if row.candidate_harness or row.baseline_harness:
            title.append(f"  harness {row.candidate_harness or '?'}/{row.baseline_harness or '?'}", style="dim")
        if self.data.stand_in:
            title.append(f"  STAND-IN candidate {self.data.candidate_backend}", style="bold black on yellow")
        if cand is None and base is None:
            title.append("  — no launch captures for this config", style="yellow")
        self.query_one("#title", Static).update(title)
        self.query_one("#details", Static).update(Text("select a launch: Tab / Shift+Tab"))
        self.show_probe(row)
        self.refresh_bindings()
        if live:
            self.action_live()

    def show_probe(self, row: RatioRow) -> None:
        """The config's filed ncu probes side by side (candidate, reference), or how to get them."""
        from workbench.services.probe import probe_rows

        rows = probe_rows(self.data.probes, self.data.candidate_backend, row, compact=True)
        table = self.query_one("#probe", DataTable)
        table.clear(columns=True)
        title = self.query_one("#probe-title", Static)
        table.set_class(not rows, "hidden")  # a class, not .display: the narrow layout's CSS still hides it
        if not rows:
            title.update(Text(f"no ncu probe for this config: cutile-workbench probe {self.data.kernel} "
                              f"--config {row.params}", style="dim"))
            return
        title.update(Text("ncu probe (one profiled call)", style="bold"))
        table.add_columns("ncu", "cand", "ref")
        for metric, cand, ref in rows:
            table.add_row(Text(metric), Text(cand, justify="right"), Text(ref, justify="right"))

    def _measurements(self, first: LaunchSet | None) -> list[LaunchSet]:
        """``first`` and the test's other measurement sets of the same backend (forward, then backward)."""
        if first is None:
            return []
        same = [s for s in self.data.sets_of_test(first.nodeid) if s.backend == first.backend and s.calls]
        return same if first in same else [first]

    def on_launch_timeline_launch_selected(self, event: LaunchTimeline.LaunchSelected) -> None:
        lane = event.lane
        text = Text(f"{lane.role} {lane.backend} call #{lane.call.index}\n", style="bold")
        text.append(launch_details(event.launch).replace("  ", "\n"))
        self.query_one("#details", Static).update(text)

    # ------------------------------------------------------------------ live
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_live":
            return self.live_running
        if action == "live":
            if self.data.runner is None:
                return False
            return True if (self.row is not None and not self.live_running) else None
        return True

    def action_live(self) -> None:
        if self.data.runner is None or self.row is None or self.live_running:
            return
        self.live_running = True
        self.cancel_event = threading.Event()
        self.live_results.clear()
        self._live_sets.clear()
        self.query_one("#live-results", DataTable).clear()
        self.timeline.set_sets(None, None)
        bar = self.query_one("#progress", ProgressBar)
        bar.remove_class("hidden")
        bar.update(total=None, progress=0)
        self.wb.live = True
        self.query_one(WorkbenchHeader).refresh_text()
        self.refresh_bindings()
        self.run_live(self.row)

    def action_cancel_live(self) -> None:
        if self.live_running:
            self.cancel_event.set()
            self.notify("cancelling the live run…", severity="warning")

    @work(thread=True, exclusive=True, exit_on_error=False, group="live", description="live run")
    def run_live(self, row: RatioRow) -> None:
        runner = self.data.runner
        assert runner is not None
        batch = Batcher(self.post_message)
        cancel = self.cancel_event
        source = str(getattr(runner, "events_source", "<live events>"))  # names the file in errors
        try:
            rc = runner([row], lambda ev: dispatch_event(ev, batch, source), cancel)
        except WorkbenchError as e:
            self.post_message(LiveFailed(str(e)))
            rc = 2
        finally:
            batch.flush()
        self.post_message(LiveFinished(rc, cancel.is_set()))

    def on_live_progress(self, msg: LiveProgress) -> None:
        bar = self.query_one("#progress", ProgressBar)
        bar.update(total=max(1, msg.total), progress=msg.done)

    def on_live_launches(self, msg: LiveLaunches) -> None:
        assert self.row is not None
        for s in msg.sets:
            self._append_set(s)

    def _append_set(self, s: LaunchSet) -> None:
        assert self.row is not None
        if s.params != self.row.params:
            return
        # a row names its baseline as E's log does (``triton_tileir``); live records say ``triton``
        role = "baseline" if same_backend(s.backend, self.row.baseline_backend) else "candidate"
        key = (s.nodeid, s.backend)
        index = self._live_sets.get(key, 0)  # a test measures forward, then backward
        self._live_sets[key] = index + 1
        if index == 1:
            self.timeline.tag_phase(role, s.backend, phase_tag(0, 2))
        for call in s.calls:
            self.timeline.append_call(role, s.backend, call, phase_tag(index, index + 1))

    def on_live_record(self, msg: LiveRecord) -> None:
        self.live_results.append(msg)
        median = "—" if msg.median_ms is None else f"{msg.median_ms:.4f}"
        self.query_one("#live-results", DataTable).add_row(Text(msg.framework), Text(msg.params), Text(median))

    def on_live_failed(self, msg: LiveFailed) -> None:
        self.wb.show_error(msg.error, "Live run failed")

    def on_live_finished(self, msg: LiveFinished) -> None:
        self.live_running = False
        self.query_one("#progress", ProgressBar).add_class("hidden")
        self.refresh_bindings()
        if msg.cancelled:
            self.notify("live run cancelled", severity="warning")
        else:
            self.notify(f"live run finished (exit {msg.rc}): {self.timeline.launch_count} launches")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "live" and event.state == WorkerState.ERROR:
            self.live_running = False
            self.query_one("#progress", ProgressBar).add_class("hidden")
            self.refresh_bindings()
            self.wb.show_error(f"{type(event.worker.error).__name__}: {event.worker.error}", "Live run crashed")

    def palette_commands(self) -> list[PaletteCommand]:
        tl = self.timeline
        out: list[PaletteCommand] = [("timeline: fit", "Fit the longest call", tl.action_fit),
                                     ("timeline: zoom in", "Zoom in 2x", partial(tl.action_zoom, 2.0)),
                                     ("timeline: zoom out", "Zoom out 2x", partial(tl.action_zoom, 0.5))]
        if self.live_running:
            out.append(("live: cancel run", "Stop the live run", self.action_cancel_live))
        elif self.data.runner is not None and self.row is not None:
            out.append(("live: run this config", self.row.params, self.action_live))
        return out
