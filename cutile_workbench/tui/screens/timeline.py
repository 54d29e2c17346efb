"""Timeline screen: launches of one config (candidate vs baseline lanes), details, live runs.

Live runs use a thread worker (``exclusive``: a new run cancels the old one; ``exit_on_error``
off: a failing runner becomes an error modal, not a crash). The worker only posts messages.
Escape cancels a running run (the key exists only while one runs: ``check_action``).

The screen follows the selection (issue #20): opened with ``2`` it shows the row highlighted on
Ratios; the side panel follows the lane cursor and the launch selection; ``a`` swaps the lanes
for the per-kernel aggregate of the config (``services.timeline.summarize_set``, the table of the
``timeline`` command); the ncu panel shows each metric's candidate-vs-reference difference in %,
green where the candidate is better and red where worse. The status line under the lanes says
the zoom mode, the resolution and the window relative to the call's host start.
"""

from __future__ import annotations

import re
import threading
from functools import partial
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, ProgressBar, Static
from textual.worker import Worker, WorkerState

from cutile_workbench.errors import WorkbenchError
from cutile_workbench.model import LaunchSet, RatioRow
from cutile_workbench.services.timeline import same_backend
from cutile_workbench.tui.chrome import WorkbenchFooter, WorkbenchHeader
from cutile_workbench.tui.host import PaletteCommand
from cutile_workbench.tui.live import Batcher, dispatch_event
from cutile_workbench.tui.messages import LiveFailed, LiveFinished, LiveLaunches, LiveProgress, LiveRecord
from cutile_workbench.tui.screens.base import WorkbenchScreen
from cutile_workbench.tui.widgets.launch_timeline import LaunchTimeline, format_ns, launch_details, phase_tag
from cutile_workbench.tui.widgets.ratio_table import ALARM_STYLE

#: ncu panel rows where less is better for the candidate (time, traffic, spills) and where more is
#: (throughput, occupancy); other rows (registers, shared memory) have no better direction
LOWER_IS_BETTER = frozenset({"time", "DRAM rd", "DRAM wr", "spill B", "spill req"})
HIGHER_IS_BETTER = frozenset({"DRAM GB/s", "DRAM %pk", "SM %pk", "tensor %", "occ ach", "occ theo"})
_NUMBER = re.compile(r"^-?[\d,]*\.?\d+")


def delta_text(metric: str, cand: str, ref: str) -> Text:
    """``+88.7%``: the candidate's difference from the reference, green when better, red when worse
    (by the metric's direction), dim without a direction; "—" when a side has no number."""
    c, r = (_NUMBER.match(x.strip()) for x in (cand, ref))
    if c is None or r is None:
        return Text("—", style="dim", justify="right")
    cv, rv = (float(m.group().replace(",", "")) for m in (c, r))
    if rv == 0:
        return Text("=" if cv == 0 else "—", style="dim", justify="right")
    pct = (cv - rv) / abs(rv) * 100
    if abs(pct) < 0.05:
        return Text("=", style="dim", justify="right")
    if metric in LOWER_IS_BETTER:
        style = "green" if pct < 0 else ALARM_STYLE
    elif metric in HIGHER_IS_BETTER:
        style = "green" if pct > 0 else ALARM_STYLE
    else:
        style = "dim"
    return Text(f"{pct:+.1f}%", style=style, justify="right")


class TimelineScreen(WorkbenchScreen):
    SCREEN_TITLE = "Timeline"
    ABOUT = (
        "Per measured call, a candidate lane and a baseline lane, aligned on t0 = the call's host start "
        "(the ruler counts from it, in the unit it names). The host call is drawn ─; every GPU activity "
        "the call caused is a bar in it: kernel █, memcpy ▓, memset ▒. More bars in a candidate lane than "
        'in its baseline lane = extra launches per call (a wrapper bug). The view starts at "fit '
        'kernels" (first to last launch); 0 toggles the whole call, +/- zoom, ←/→ pan, and the line '
        "under the lanes states the window. ↑/↓ move between lanes and Tab / Shift+Tab between launches "
        "(on across lanes); the panel follows both: grid, block, registers, shared memory, duration. "
        "a: the per-kernel aggregate (launches per call, µs per launch; the `timeline` command's table). "
        "The ncu panel shows the config's probe (`cutile-workbench probe`), candidate beside reference "
        "with the difference in % (green: candidate better, red: worse), when one is filed. Live runs "
        "stream bars and per-config results as they arrive; Escape cancels."
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel_live", "Cancel run", tooltip="Stop the live run", id="timeline-cancel"),
        Binding("L", "live", "Run live", tooltip="Re-run this config live on this GPU", id="timeline-live"),
        Binding(
            "a",
            "aggregate",
            "Per kernel",
            tooltip="Per-kernel aggregate (launches/call, µs per launch) ⇄ lanes",
            id="timeline-aggregate",
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.row: RatioRow | None = None
        self.live_running = False
        self.cancel_event = threading.Event()
        self.live_results: list[LiveRecord] = []
        #: the Ratios highlight when this screen last followed it (an explicit open is not overridden)
        self._followed: RatioRow | None = None
        #: measurement sets seen per (nodeid, backend) in the live run: the 2nd is the backward one
        self._live_sets: dict[tuple[str, str], int] = {}

    def compose(self) -> ComposeResult:
        yield self.header()
        yield Static(Text("no config selected: press 1 and Enter on a row"), id="title")
        yield ProgressBar(total=None, show_eta=False, id="progress", classes="hidden")
        with Horizontal(id="timeline-body"):
            with Vertical(id="lanes"):
                yield LaunchTimeline(id="timeline")
                aggregate: DataTable[Text] = DataTable(id="aggregate", cursor_type="row", zebra_stripes=True)
                aggregate.display = False
                yield aggregate
                yield Static(id="scale")
            with Vertical(id="side"):
                yield Static(Text("select a launch: Tab / Shift+Tab"), id="details")
                with Vertical(id="probe-box"):
                    yield Static(id="probe-title")
                    yield DataTable(id="probe", cursor_type="none", zebra_stripes=True)
                yield DataTable(id="live-results", cursor_type="row", classes="hidden")
        yield WorkbenchFooter()

    def on_mount(self) -> None:
        if self.torn_down():
            return
        self.query_one("#live-results", DataTable).add_columns("framework", "params", "median ms")
        self.query_one("#probe", DataTable).can_focus = False  # read-only numbers: Tab stays on the lanes
        self.query_one(LaunchTimeline).focus()
        self._follow()

    def on_screen_resume(self) -> None:
        if self.is_mounted and not self.torn_down():
            self._follow()

    def _follow(self) -> None:
        """Show the row asked for (Enter/t/L on Ratios), else the row highlighted on Ratios (``2``)."""
        selection = self.wb.selected_row
        if self.wb.pending_row is not None:
            self.show_row(self.wb.pending_row, live=self.wb.pending_live)
        elif selection is not None and selection is not self._followed and not self.live_running:
            self.show_row(selection)  # the Ratios highlight moved since: follow it
        self._followed = selection

    def on_launch_timeline_view_moved(self) -> None:
        self.update_scale()

    def update_scale(self) -> None:
        tl = self.timeline
        text = Text(tl.scale_text(), style="dim")
        text.append(" · 0 fit kernels ⇄ call · a per kernel", style="dim")
        self.query_one("#scale", Static).update(text)

    @property
    def timeline(self) -> LaunchTimeline:
        return self.query_one(LaunchTimeline)

    def show_row(self, row: RatioRow, *, live: bool = False) -> None:
        self.wb.pending_row = None
        self.wb.pending_live = False
        self.row = row
        cand, base = self.data.sets_for(row)
        self.timeline.set_sets(self._measurements(cand), self._measurements(base))
        ratio = "NA" if row.ratio is None else f"{row.ratio:.3f}x"
        lc = f"{row.candidate_launches if row.candidate_launches is not None else '?'}"
        lb = f"{row.baseline_launches if row.baseline_launches is not None else '?'}"
        title = Text(  # one line each, cut with "…": a wrapped first line pushed the id line out at 80x24
            f"{row.params}  ratio {ratio}  launches/call {lc}/{lb}  vs {row.baseline_backend or '—'}",
            no_wrap=True,
            overflow="ellipsis",
        )
        if row.candidate_harness or row.baseline_harness:
            title.append(
                f"  harness {row.candidate_harness or '?'}/{row.baseline_harness or '?'}", style="dim"
            )
        if self.data.stand_in:
            title.append(f"  STAND-IN candidate {self.data.candidate_backend}", style="bold black on yellow")
        if cand is None and base is None:
            title.append("  — no launch captures for this config", style="yellow")
        trust_bits = [
            b for b in (self.data.identity_line(row.params), self.data.reference_config_line(row.params)) if b
        ]
        if trust_bits:  # issue 18: who ran the candidate side, and the config the reference ran
            ident = self.data.trust.identities.get(row.params) if self.data.trust is not None else None
            alarm = ident is not None and ident.not_candidate
            title.append("\n" + "  ·  ".join(trust_bits), style=ALARM_STYLE if alarm else "dim")
        self.query_one("#title", Static).update(title)
        self.query_one("#details", Static).update(Text("select a launch: Tab / Shift+Tab"))
        self.show_probe(row)
        if self.query_one("#aggregate", DataTable).display:  # built on demand: 100k launches cost
            self.show_aggregate()
        self.refresh_bindings()
        if live:
            self.start_live()  # asked on Ratios already (L there confirms first)

    def show_probe(self, row: RatioRow) -> None:
        """The config's filed ncu probes side by side (candidate, reference), or how to get them."""
        from cutile_workbench.services.probe import probe_advice, probe_rows

        rows = probe_rows(self.data.probes, self.data.candidate_backend, row, compact=True)
        table = self.query_one("#probe", DataTable)
        table.clear(columns=True)
        title = self.query_one("#probe-title", Static)
        table.set_class(not rows, "hidden")  # a class, not .display: the narrow layout's CSS still hides it
        if not rows:
            title.update(
                Text(
                    "no ncu probe for this config: "
                    + probe_advice(self.data.kernel, row.params, row.func_key, self.data.locator),
                    style="dim",
                )
            )
            return
        title.update(Text("ncu probe (1 call) · Δ = cand vs ref", style="bold"))
        table.add_columns("ncu", "cand", "ref", "Δ")
        for metric, cand, ref in rows:
            table.add_row(
                Text(metric),
                Text(cand, justify="right"),
                Text(ref, justify="right"),
                delta_text(metric, cand, ref),
            )

    def show_aggregate(self) -> None:
        """Per kernel and side: launches per call and µs per launch (the ``timeline`` command's table)."""
        from cutile_workbench.services.timeline import summarize_set

        table = self.query_one("#aggregate", DataTable)
        table.clear(columns=True)
        if self.row is None:
            return
        # the numbers first: mangled kernel names are long and a narrow terminal cuts from the right
        table.add_columns(
            "side", "launches/call", "median µs", "min µs", "max µs", "grid", "block", "kind", "kernel"
        )
        cand, base = self.data.sets_for(self.row)
        for role, sets in (("cand", self._measurements(cand)), ("base", self._measurements(base))):
            for s in sets:
                summary = summarize_set(s, role)
                for k in summary["kernels"]:
                    t = k["per_launch_us"]
                    table.add_row(
                        Text(role),
                        Text(f"{k['launches_per_call']:g}", justify="right"),
                        *(
                            Text("—" if key not in t else f"{t[key]:.2f}", justify="right")
                            for key in ("median", "min", "max")
                        ),
                        Text("×".join(map(str, k["grid"])) if k["grid"] else "—"),
                        Text("×".join(map(str, k["block"])) if k["block"] else "—"),
                        Text(k["kind"]),
                        Text(k["name"]),
                    )

    def action_aggregate(self) -> None:
        aggregate = self.query_one("#aggregate", DataTable)
        show = not aggregate.display
        if show:
            self.show_aggregate()
        aggregate.display = show
        self.timeline.display = not show
        (aggregate if show else self.timeline).focus()

    def on_launch_timeline_lane_changed(self, event: LaunchTimeline.LaneChanged) -> None:
        lane = event.lane
        text = Text(f"{lane.role} {lane.backend} call #{lane.call.index}\n", style="bold")
        host = lane.call.host_end_ns - lane.call.host_start_ns
        text.append(f"{len(lane.launches)} launch(es) · host call {format_ns(host)}")
        if lane.launches:
            text.append(f" · first launch at {format_ns(lane.starts[0])}")
        self.query_one("#details", Static).update(text)

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
        """L: a live run on the GPU, after a yes (issue #34: no GPU run without asking)."""
        if self.data.runner is None or self.row is None or self.live_running:
            return
        from cutile_workbench.tui.modals import ConfirmModal

        lines = [f"config: {self.row.params}", "", "Runs its perf test on this machine's GPU. Start it?"]
        self.app.push_screen(
            ConfirmModal("Re-run live on the GPU", lines), lambda yes: self.start_live() if yes else None
        )

    def start_live(self) -> None:
        """Start the live run of the row shown (the caller asked already)."""
        if self.data.runner is None or self.row is None or self.live_running:
            return
        if self.rerun_refused():  # the doctor's checks, before any GPU work
            return
        self.live_running = True
        self.cancel_event = threading.Event()
        self.live_results.clear()
        self._live_sets.clear()
        results = self.query_one("#live-results", DataTable)
        results.clear()
        results.remove_class("hidden")  # shown only for a live run (an empty table explains nothing)
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
        self.query_one("#live-results", DataTable).add_row(
            Text(msg.framework), Text(msg.params), Text(median)
        )

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
            self.wb.show_error(
                f"{type(event.worker.error).__name__}: {event.worker.error}", "Live run crashed"
            )

    def palette_commands(self) -> list[PaletteCommand]:
        tl = self.timeline
        out: list[PaletteCommand] = [
            ("timeline: fit", "Fit kernels ⇄ the whole call", tl.action_fit),
            (
                "timeline: per-kernel aggregate",
                "Launches per call and µs per launch by kernel",
                self.action_aggregate,
            ),
            ("timeline: zoom in", "Zoom in 2x", partial(tl.action_zoom, 2.0)),
            ("timeline: zoom out", "Zoom out 2x", partial(tl.action_zoom, 0.5)),
        ]
        if self.live_running:
            out.append(("live: cancel run", "Stop the live run", self.action_cancel_live))
        elif self.data.runner is not None and self.row is not None:
            out.append(("live: run this config", self.row.params, self.action_live))
        return out
