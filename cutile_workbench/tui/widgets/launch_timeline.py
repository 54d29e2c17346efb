"""LaunchTimeline: per measured call, candidate and baseline lanes of GPU launches (line API).

Contract: fed ``cutile_workbench.model.LaunchSet`` objects (``set_sets``) or live ``CallCapture``s
(``append_call``); never reads files. Line 0 is a time ruler; every other line is one lane =
one measured call of one backend, time relative to that call's host start so calls line up.
Each launch is a bar whose glyph and colour say its kind (kernel █, memcpy ▓, memset ▒); the
host call itself (host start to host end) is drawn as ``─`` under them, so a kernel's place in
its call is visible. The ruler states the origin (t0 = the call's host start) and the unit of
its labels. Zoom modes (``zoom_mode``): "fit kernels" (the default: the window spans the first
launch to the last over every lane, so kernels 400 µs into a call are not a sliver), "fit call"
(the whole host span; ``0`` toggles the two) and "zoomed" (``+``/``-``). Moving the lane cursor
always posts :class:`LaneChanged` (and selects the lane's first launch), Tab walks the launches
across lanes.
Rendering is O(width · log n) per line (bisect over per-lane start arrays, skipping launches
hidden inside an already painted cell) and strips are LRU-cached by view state, so 100k
launches paint well under 50 ms per frame (``bench/tui_start.py`` measures it).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from cutile_workbench.model import CallCapture, Launch, LaunchSet

GUTTER = 16  # lane label width (cells)
GLYPH = {"kernel": "█", "memcpy": "▓", "memset": "▒"}
MIN_NS_PER_CELL = 1.0


@dataclass
class Lane:
    """One measured call of one backend, with launches sorted by start (offset ns)."""

    role: str  # "candidate" | "baseline"
    backend: str
    call: CallCapture
    launches: list[Launch]
    starts: list[int]  # launch start - call.host_start_ns, sorted
    ends: list[int]  # launch end - call.host_start_ns, same order
    #: which measurement set of the test the call belongs to ("fwd", "bwd"; "" when the test has one)
    phase: str = ""

    @property
    def label(self) -> str:
        tag = "cand" if self.role == "candidate" else "base"
        phase = f" {self.phase}" if self.phase else ""
        return f"#{self.call.index} {tag}{phase} {len(self.launches)}L"

    @property
    def span_ns(self) -> int:
        if not self.launches:
            return max(1, self.call.host_end_ns - self.call.host_start_ns)
        return max(ln.end_ns for ln in self.launches) - self.call.host_start_ns


def make_lane(role: str, backend: str, call: CallCapture, phase: str = "") -> Lane:
    launches = sorted(call.launches, key=lambda x: x.start_ns)
    base = call.host_start_ns
    return Lane(
        role,
        backend,
        call,
        launches,
        [x.start_ns - base for x in launches],
        [x.end_ns - base for x in launches],
        phase,
    )


def phase_tag(index: int, count: int) -> str:
    """Lane tag of a test's ``index``-th measurement set of ``count`` (TileGym measures forward, then
    backward): "" for a test with one set, else ``fwd``, ``bwd``, ``m3``…"""
    if count < 2:
        return ""
    return ("fwd", "bwd")[index] if index < 2 else f"m{index + 1}"


def _as_sets(side: LaunchSet | Sequence[LaunchSet] | None) -> list[LaunchSet]:
    if side is None:
        return []
    return [side] if isinstance(side, LaunchSet) else list(side)


def format_ns(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.3g}ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.3g}µs"
    return f"{ns:.0f}ns"


def launch_details(launch: Launch) -> str:
    """Plain-text details of one launch (grid, block, regs, smem, duration)."""
    # the numbers first: a narrow details pane cuts from the bottom, and mangled names are long
    parts = [f"{launch.kind} {format_ns(launch.duration_ns)}"]
    if launch.grid:
        parts.append("grid {}x{}x{}".format(*launch.grid))
    if launch.block:
        parts.append("block {}x{}x{}".format(*launch.block))
    if launch.registers_per_thread is not None:
        parts.append(f"regs {launch.registers_per_thread}")
    if launch.static_smem is not None or launch.dynamic_smem is not None:
        parts.append(f"smem {launch.static_smem or 0}+{launch.dynamic_smem or 0} B")
    if launch.bytes is not None:
        parts.append(f"{launch.bytes} B {launch.copy_kind or ''}".rstrip())
    if launch.stream_id is not None:
        parts.append(f"stream {launch.stream_id}")
    parts.append(launch.display_name)
    return "  ".join(parts)


class LaunchTimeline(ScrollView, can_focus=True):
    """Lanes of launch bars; zoom/pan by keys; selection posts :class:`LaunchSelected`."""

    DEFAULT_CSS = """
    LaunchTimeline { height: 1fr; background: $surface; }
    LaunchTimeline > .launchtimeline--ruler { color: $text-muted; }
    LaunchTimeline > .launchtimeline--candidate { color: $accent; }
    LaunchTimeline > .launchtimeline--baseline { color: $secondary; }
    LaunchTimeline > .launchtimeline--kernel { color: $primary; }
    LaunchTimeline > .launchtimeline--kernel-alt { color: $primary-lighten-3; }
    LaunchTimeline > .launchtimeline--memcpy { color: $warning; }
    LaunchTimeline > .launchtimeline--memset { color: $error; }
    LaunchTimeline > .launchtimeline--selected { color: $text; background: $accent; }
    LaunchTimeline > .launchtimeline--cursor-lane { background: $boost; }
    LaunchTimeline > .launchtimeline--host { color: $text-muted; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "launchtimeline--ruler",
        "launchtimeline--candidate",
        "launchtimeline--baseline",
        "launchtimeline--kernel",
        "launchtimeline--kernel-alt",
        "launchtimeline--memcpy",
        "launchtimeline--memset",
        "launchtimeline--selected",
        "launchtimeline--cursor-lane",
        "launchtimeline--host",
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left,h", "pan(-1)", "Pan ←", tooltip="Pan left a quarter screen", id="timeline-pan-left"),
        Binding("right,l", "pan(1)", "Pan →", tooltip="Pan right a quarter screen", id="timeline-pan-right"),
        Binding("plus,equals_sign", "zoom(2)", "Zoom +", tooltip="Zoom in 2x", id="timeline-zoom-in"),
        Binding("minus", "zoom(0.5)", "Zoom −", tooltip="Zoom out 2x", id="timeline-zoom-out"),
        Binding(
            "0",
            "fit",
            "Fit",
            tooltip="Fit kernels (first to last launch) ⇄ fit the whole host call",
            id="timeline-fit",
        ),
        Binding("up,k", "lane(-1)", "Lane ↑", show=False, id="timeline-lane-up"),
        Binding("down,j", "lane(1)", "Lane ↓", show=False, id="timeline-lane-down"),
        Binding(
            "tab",
            "step(1)",
            "Next launch",
            tooltip="Select the next launch (on to the next lane at the end)",
            id="timeline-next",
        ),
        Binding("shift+tab", "step(-1)", "Prev launch", show=False, id="timeline-prev"),
    ]

    ns_per_cell: reactive[float] = reactive(1000.0, init=False)
    origin_ns: reactive[float] = reactive(0.0, init=False)
    cursor_lane: reactive[int] = reactive(0, init=False)
    # always_update: re-selecting launch 0 of a new lane must still tell the panel
    selected: reactive[int] = reactive(-1, init=False, always_update=True)  # launch index in the cursor lane

    class LaunchSelected(Message):
        def __init__(self, lane: Lane, launch: Launch) -> None:
            super().__init__()
            self.lane = lane
            self.launch = launch

    class ViewMoved(Message):
        """Zoom, pan or fit changed the window (the screen restates it)."""

    class LaneChanged(Message):
        """The lane cursor moved (a lane without launches included)."""

        def __init__(self, lane: Lane) -> None:
            super().__init__()
            self.lane = lane

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lanes: list[Lane] = []
        self._user_zoomed = False
        #: "fit kernels" (default) | "fit call" | "zoomed"
        self.zoom_mode = "fit kernels"
        self._cache: LRUCache[tuple[Any, ...], Strip] = LRUCache(1024)
        self._style_cache: dict[tuple[bool, str], dict[str, Style]] = {}

    # ------------------------------------------------------------------ data
    def set_sets(
        self,
        candidate: LaunchSet | Sequence[LaunchSet] | None,
        baseline: LaunchSet | Sequence[LaunchSet] | None,
    ) -> None:
        """Show one config: lanes interleave candidate call i, baseline call i. A side given as
        several sets (a test's forward and backward measurements, in order) shows each set's
        calls in turn, the lanes tagged ``fwd``/``bwd``."""
        cands = _as_sets(candidate)
        bases = _as_sets(baseline)
        lanes: list[Lane] = []
        for p in range(max(len(cands), len(bases))):
            cand = cands[p].calls if p < len(cands) else []
            base = bases[p].calls if p < len(bases) else []
            for i in range(max(len(cand), len(base))):
                if i < len(cand):
                    lanes.append(make_lane("candidate", cands[p].backend, cand[i], phase_tag(p, len(cands))))
                if i < len(base):
                    lanes.append(make_lane("baseline", bases[p].backend, base[i], phase_tag(p, len(bases))))
        self.lanes = lanes
        self._user_zoomed = False
        if self.zoom_mode == "zoomed":  # a new config starts fitted
            self.zoom_mode = "fit kernels"
        self.cursor_lane = 0
        self.selected = -1
        self._relayout()

    def append_call(self, role: str, backend: str, call: CallCapture, phase: str = "") -> None:
        """Live: one more measured call arrived."""
        self.lanes.append(make_lane(role, backend, call, phase))
        self._relayout()

    def tag_phase(self, role: str, backend: str, phase: str) -> None:
        """Live: a second measurement set of ``backend`` arrived; tag the untagged lanes of the first."""
        for lane in self.lanes:
            if lane.role == role and lane.backend == backend and not lane.phase:
                lane.phase = phase
        self._cache.clear()
        self.refresh()

    def clear(self) -> None:
        self.set_sets(None, None)

    @property
    def launch_count(self) -> int:
        return sum(len(ln.launches) for ln in self.lanes)

    @property
    def selected_launch(self) -> Launch | None:
        if not self.lanes or self.selected < 0:
            return None
        lane = self.lanes[self.cursor_lane]
        return lane.launches[self.selected] if self.selected < len(lane.launches) else None

    def _plot_width(self) -> int:
        return max(8, self.size.width - GUTTER)

    def _relayout(self) -> None:
        self._cache.clear()
        self.virtual_size = Size(self.size.width, len(self.lanes) + 1)
        if not self._user_zoomed:
            self._fit()
        self.refresh()
        self.post_message(self.ViewMoved())

    def _fit(self) -> None:
        """The window of the zoom mode: first to last launch ("fit kernels"), or the whole call."""
        with_launches = [ln for ln in self.lanes if ln.launches]
        if self.zoom_mode == "fit kernels" and with_launches:
            first = min(ln.starts[0] for ln in with_launches)
            last = max(max(ln.ends) for ln in with_launches)
            span = max(1, last - first)
            origin = max(0.0, first - span * 0.02)
            npc = max(MIN_NS_PER_CELL, span * 1.05 / self._plot_width())
        else:
            span = max(
                (max(ln.span_ns, ln.call.host_end_ns - ln.call.host_start_ns) for ln in self.lanes),
                default=1000,
            )
            origin, npc = 0.0, max(MIN_NS_PER_CELL, span * 1.02 / self._plot_width())
        self.set_reactive(LaunchTimeline.ns_per_cell, npc)
        self.set_reactive(LaunchTimeline.origin_ns, origin)

    def on_resize(self) -> None:
        self._relayout()

    def watch_ns_per_cell(self) -> None:
        self._cache.clear()
        self.refresh()
        self.post_message(self.ViewMoved())

    def watch_origin_ns(self) -> None:
        self._cache.clear()
        self.refresh()
        self.post_message(self.ViewMoved())

    def watch_cursor_lane(self, old: int, new: int) -> None:
        self.refresh()
        # keep the cursor lane on screen (line 0 is the ruler)
        self.scroll_to_region(self._lane_region(new), animate=False)

    def watch_selected(self) -> None:
        self.refresh()
        launch = self.selected_launch
        if launch is not None:
            self.post_message(self.LaunchSelected(self.lanes[self.cursor_lane], launch))

    def _lane_region(self, lane: int) -> Any:
        from textual.geometry import Region

        return Region(0, lane + 1, 1, 1)

    # ------------------------------------------------------------------ actions
    def action_pan(self, direction: int) -> None:
        self.origin_ns = max(0.0, self.origin_ns + direction * self._plot_width() * self.ns_per_cell / 4)

    def action_zoom(self, factor: float) -> None:
        self._user_zoomed = True
        self.zoom_mode = "zoomed"
        centre = self.origin_ns + self._plot_width() * self.ns_per_cell / 2
        launch = self.selected_launch
        if launch is not None:  # zoom around the selection, which is where the eye is
            centre = launch.start_ns - self.lanes[self.cursor_lane].call.host_start_ns
        new = max(MIN_NS_PER_CELL, self.ns_per_cell / factor)
        self.ns_per_cell = new
        self.origin_ns = max(0.0, centre - self._plot_width() * new / 2)

    def action_fit(self) -> None:
        """Fit kernels; pressed again (or from the call fit), the whole host call."""
        self.zoom_mode = (
            "fit call" if self.zoom_mode == "fit kernels" and not self._user_zoomed else "fit kernels"
        )
        self._user_zoomed = False
        self._fit()
        self._cache.clear()
        self.refresh()
        self.post_message(self.ViewMoved())

    def action_lane(self, delta: int) -> None:
        if self.lanes:
            self.cursor_lane = min(max(0, self.cursor_lane + delta), len(self.lanes) - 1)
            self.post_message(self.LaneChanged(self.lanes[self.cursor_lane]))
            self.selected = -1 if not self.lanes[self.cursor_lane].launches else 0

    def action_step(self, delta: int) -> None:
        if not self.lanes:
            return
        lane = self.lanes[self.cursor_lane]
        target = self.selected + delta
        if not lane.launches or not 0 <= target < len(lane.launches):
            # past this lane's last (first) launch: on to the next (previous) lane that has launches
            i = self.cursor_lane + delta
            while 0 <= i < len(self.lanes) and not self.lanes[i].launches:
                i += delta
            if not 0 <= i < len(self.lanes):
                return
            self.cursor_lane = i
            lane = self.lanes[i]
            self.post_message(self.LaneChanged(lane))
            target = 0 if delta > 0 else len(lane.launches) - 1
        self.selected = target
        # auto-pan so the selected launch is visible
        start = lane.starts[self.selected]
        width_ns = self._plot_width() * self.ns_per_cell
        if not (self.origin_ns <= start < self.origin_ns + width_ns):
            self.origin_ns = max(0.0, start - width_ns / 4)

    # ------------------------------------------------------------------ rendering
    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"launchtimeline--{name}")

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            key: tuple[Any, ...] = ("ruler", width, self.origin_ns, self.ns_per_cell)
            strip = self._cache.get(key)
            if strip is None:
                strip = self._render_ruler(width)
                self._cache[key] = strip
            return strip
        lane_no = y - 1 + int(self.scroll_offset.y)
        if lane_no >= len(self.lanes):
            return Strip.blank(width, self.rich_style)
        sel = self.selected if lane_no == self.cursor_lane else -2
        key = (
            lane_no,
            width,
            self.origin_ns,
            self.ns_per_cell,
            sel,
            lane_no == self.cursor_lane,
            len(self.lanes[lane_no].launches),
        )
        strip = self._cache.get(key)
        if strip is None:
            strip = self._render_lane(self.lanes[lane_no], width, sel, lane_no == self.cursor_lane)
            self._cache[key] = strip
        return strip

    def _render_ruler(self, width: int) -> Strip:
        """``t0=call start`` then ticks every 16 cells labelled in one unit (ns, µs or ms) for the
        whole ruler: the time since the call's host start (every lane is aligned on it)."""
        plot = max(0, width - GUTTER)
        text = [" "] * plot
        step = 16
        far = self.origin_ns + plot * self.ns_per_cell
        unit, scale = ("ms", 1e6) if far >= 1e6 else ("µs", 1e3) if far >= 1e3 else ("ns", 1.0)
        for c in range(0, plot, step):
            value = (self.origin_ns + c * self.ns_per_cell) / scale
            label = f"|{value:.3g}{unit}"
            for i, ch in enumerate(label):
                if c + i < plot:
                    text[c + i] = ch
        head = "t0=call start"[: GUTTER - 1].ljust(GUTTER)
        return Strip([Segment(head + "".join(text), self._style("ruler"))], width).crop(0, width)

    def scale_text(self) -> str:
        """The view in words, for the screen's status line: mode, resolution, window."""
        return (
            f"{self.zoom_mode} · {format_ns(self.ns_per_cell)}/cell · window {format_ns(self.origin_ns)}–"
            f"{format_ns(self.origin_ns + self._plot_width() * self.ns_per_cell)} after the call's host start"
        )

    def _lane_runs(self, lane: Lane, plot: int, selected: int) -> list[tuple[int, int, int]]:
        """Visible bars as ``(first_cell, last_cell, launch_index)`` runs, left to right.

        The first launch to reach a cell owns it; launches starting inside an already painted
        cell are skipped with one bisect (so the cost is O(bars on screen · log n), not O(n));
        the selected launch always wins its cells. Hot path: plain locals, no builtins per launch.
        """
        npc, origin = self.ns_per_cell, self.origin_ns
        starts, ends = lane.starts, lane.ends
        bisect = bisect_left
        i = bisect(starts, origin)
        if i > 0 and ends[i - 1] > origin:
            i -= 1  # a launch that began left of the window still covers its first cells
        n = len(starts)
        last_cell = plot - 1
        runs: list[tuple[int, int, int]] = []
        last = -1  # last painted cell
        sel_run: tuple[int, int, int] | None = None
        while i < n:
            a = int((starts[i] - origin) // npc)
            if a >= plot:
                break
            # last cell the launch covers (end is exclusive); a short launch still gets one cell
            b = int(-((origin - ends[i]) // npc)) - 1
            if b < a:
                b = a
            if b > last_cell:
                b = last_cell
            if i == selected:
                sel_run = (a if a > 0 else 0, b, i)
            a2 = a if a > last else last + 1
            if a2 < 0:
                a2 = 0
            if b >= a2:
                runs.append((a2, b, i))
                last = b
            nxt = bisect(starts, origin + (last + 1) * npc)
            if i < selected < nxt:
                nxt = selected  # never skip the selected launch
            i = nxt if nxt > i else i + 1
        if sel_run is None:
            return runs
        sa, sb, _ = sel_run
        out: list[tuple[int, int, int]] = []
        for a, b, idx in runs:  # cut the selection out of the runs it overlaps, then insert it
            if b < sa or a > sb:
                out.append((a, b, idx))
                continue
            if a < sa:
                out.append((a, sa - 1, idx))
            if b > sb:
                out.append((sb + 1, b, idx))
        out.append(sel_run)
        out.sort()
        return out

    def _styles(self, is_cursor: bool) -> dict[str, Style]:
        """Lane styles for this frame, computed once per (cursor lane?, theme) not per line."""
        key = (is_cursor, self.app.theme)
        cached = self._style_cache.get(key)
        if cached is None:
            base = self.rich_style
            if is_cursor:
                base = base + self._style("cursor-lane")
            cached = {
                "base": base,
                "kernel-alt": base + self._style("kernel-alt"),
                "selected": base + self._style("selected"),
                "candidate": base + self._style("candidate"),
                "baseline": base + self._style("baseline"),
                "host": base + self._style("host"),
            }
            cached.update({k: base + self._style(k) for k in GLYPH})
            self._style_cache[key] = cached
        return cached

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style_cache.clear()
        self._cache.clear()

    def _render_lane(self, lane: Lane, width: int, selected: int, is_cursor: bool) -> Strip:
        plot = max(0, width - GUTTER)
        styles = self._styles(is_cursor)
        base_style = styles["base"]
        label_style = styles["candidate" if lane.role == "candidate" else "baseline"]
        segs = [Segment(lane.label[: GUTTER - 1].ljust(GUTTER), label_style)]
        # back-to-back kernels would merge into one bar: every other kernel gets a lighter shade
        kernel_alt = styles["kernel-alt"]
        sel_style = styles["selected"]
        launches = lane.launches
        # the host call's span in cells: ``─`` where no launch is drawn
        host_a = int((0 - self.origin_ns) // self.ns_per_cell)
        host_b = (
            int(-((self.origin_ns - (lane.call.host_end_ns - lane.call.host_start_ns)) // self.ns_per_cell))
            - 1
        )
        host_style = styles["host"]

        def gap(a: int, b: int) -> list[Segment]:
            """Cells a..b-1 without a launch: the host span's line where the call was running."""
            lo, hi = max(a, host_a), min(b, host_b + 1)
            if hi <= lo:
                return [Segment(" " * (b - a), base_style)] if b > a else []
            out = []
            if lo > a:
                out.append(Segment(" " * (lo - a), base_style))
            out.append(Segment("─" * (hi - lo), host_style))
            if b > hi:
                out.append(Segment(" " * (b - hi), base_style))
            return out

        cell = 0
        pending_text, pending_style = "", None  # merge neighbouring runs that look the same
        for a, b, idx in self._lane_runs(lane, plot, selected):
            kind = launches[idx].kind
            style = styles.get(kind, styles["kernel"])
            if kind == "kernel" and idx % 2 and b > a:  # shading only helps bars ≥ 2 cells wide
                style = kernel_alt
            if idx == selected:
                style = sel_style
            text = GLYPH.get(kind, "█") * (b - a + 1)
            if a > cell:
                if pending_text:
                    segs.append(Segment(pending_text, pending_style))
                segs.extend(gap(cell, a))
                pending_text, pending_style = text, style
            elif style is pending_style:  # styles come from one cache: identity is equality
                pending_text += text
            else:
                if pending_text:
                    segs.append(Segment(pending_text, pending_style))
                pending_text, pending_style = text, style
            cell = b + 1
        if pending_text:
            segs.append(Segment(pending_text, pending_style))
        if cell < plot:
            segs.extend(gap(cell, plot))
        return Strip(segs, width).crop(0, width)
