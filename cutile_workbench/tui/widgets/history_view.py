"""History widgets: one config's series (trend per backend), its runs with flags, and a run's provenance.

Contract: fed :class:`SeriesRow` / :class:`RunRow` values (built by ``cutile_workbench/tui`` from the
history service); never reads files. :class:`SeriesTable` lists one config's series (backend,
role, a sparkline of the medians, latest median, last change) and posts
:class:`SeriesTable.SeriesHighlighted`; :class:`RunsTable` lists the runs of one series, oldest
first, with the change from the previous run — ``+`` regression (red), ``-`` improvement (green),
``=`` same, ``~`` inconclusive (yellow) — its median ratio, bootstrap CI and p (or ``—`` when
not tested), and ``⚠`` when the two runs' conditions differ; it posts
:class:`RunsTable.RunHighlighted`. ``compact`` (narrow terminals) keeps run time, median, n and
the change (GPU, driver, clocks and every other fact are the panel's). :class:`ProvenancePanel` shows one run's conditions and why its change was decided
so. Cell text is ``rich.text.Text`` (never markup): GPU names and paths are user data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable, Static

CHANGE_STYLE = {"regression": "bold red", "improvement": "bold green", "same": "", "inconclusive": "yellow"}


@dataclass(frozen=True)
class RunRow:
    """One run of one series, display-ready; ``change`` None for the series' first run."""

    key: str
    when: str
    median_ms: float
    n_samples: int
    change: str | None = None  # regression | improvement | same | inconclusive
    symbol: str = ""
    ratio: float | None = None
    ci: tuple[float, float] | None = None
    p_value: float | None = None
    reason: str = ""  # why the change was decided so (the statistics, stated)
    condition_flags: tuple[str, ...] = ()  # how this run's conditions differ from the previous run's
    notes: tuple[str, ...] = ()  # launches/call or top kernel changed, ...
    gpu: str = ""
    driver: str = ""
    harness: str = ""
    clocks: str = ""
    throttling: str = ""
    facts: tuple[tuple[str, str], ...] = ()  # every provenance fact, for the panel


@dataclass(frozen=True)
class SeriesRow:
    """One backend's series of the shown config."""

    key: str
    label: str  # backend (and phase when not forward)
    role: str  # candidate | baseline
    trend: str  # sparkline of the medians
    runs: tuple[RunRow, ...]

    @property
    def latest(self) -> RunRow | None:
        return self.runs[-1] if self.runs else None


def change_text(run: RunRow) -> Text:
    """``+ regression ×1.105`` (styled), ``first run`` for the first point."""
    if run.change is None:
        return Text("first run", style="dim")
    text = Text(f"{run.symbol} {run.change}", style=CHANGE_STYLE.get(run.change, ""))
    if run.ratio is not None:
        text.append(f" ×{run.ratio:.3f}")
    if run.condition_flags:
        text.append(" ⚠", style="bold yellow")
    return text


def ci_text(run: RunRow) -> str:
    return "—" if run.ci is None else f"{run.ci[0]:.3f}–{run.ci[1]:.3f}"


def p_text(run: RunRow) -> str:
    if run.p_value is None:
        return "—"
    return "<1e-300" if run.p_value < 1e-300 else f"{run.p_value:.2g}"


@dataclass(frozen=True)
class _Col:
    key: str
    label: str
    compact: bool  # shown on narrow terminals too


RUN_COLUMNS: tuple[_Col, ...] = (
    _Col("when", "run time (UTC)", True),
    _Col("median", "median ms", True),
    _Col("n", "n", True),
    _Col("change", "vs previous run", True),
    _Col("ci", "99% CI", False),
    _Col("p", "p", False),
    _Col("throttling", "throttling", False),
)


def run_cells(run: RunRow) -> dict[str, Text]:
    return {
        "when": Text(run.when),
        "median": Text(f"{run.median_ms:.6f}", justify="right"),
        "n": Text(str(run.n_samples) if run.n_samples else "-", justify="right"),
        "change": change_text(run),
        "ci": Text(ci_text(run)),
        "p": Text(p_text(run), justify="right"),
        "throttling": Text(
            run.throttling, style="bold red" if run.throttling not in ("none", "not recorded") else ""
        ),
    }


class RunsTable(DataTable[Text]):
    """The runs of one series, oldest first; the newest is highlighted when a series is shown."""

    DEFAULT_CSS = """
    RunsTable { height: 1fr; }
    """

    compact: reactive[bool] = reactive(False, init=False)

    class RunHighlighted(Message):
        def __init__(self, run: RunRow | None) -> None:
            super().__init__()
            self.run = run

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.runs: list[RunRow] = []

    def set_runs(self, runs: Sequence[RunRow]) -> None:
        """Show ``runs`` with the newest highlighted (the run a reader looks at first)."""
        self.runs = list(runs)
        self._rebuild(len(self.runs) - 1)

    def watch_compact(self) -> None:
        self._rebuild(self.cursor_row)

    @property
    def current_run(self) -> RunRow | None:
        if not self.runs or not 0 <= self.cursor_row < len(self.runs):
            return None
        return self.runs[self.cursor_row]

    def _rebuild(self, cursor: int) -> None:
        cols = [c for c in RUN_COLUMNS if c.compact or not self.compact]
        self.clear(columns=True)
        for c in cols:
            self.add_column(Text(c.label), key=c.key)
        for run in self.runs:
            cells = run_cells(run)
            self.add_row(*(cells[c.key] for c in cols), key=run.key)
        if self.runs:
            self.move_cursor(row=min(max(cursor, 0), len(self.runs) - 1), animate=False)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.post_message(self.RunHighlighted(self.current_run))


#: cells the trend column spans whatever the number of runs (issue #20: one run was one block)
TREND_WIDTH = 24


def wide_trend(
    trend: str, medians: Sequence[float], width: int = TREND_WIDTH, *, with_range: bool = True
) -> Text:
    """The series' sparkline (one level per run, oldest first) stretched over ``width`` cells,
    each run an equal share, the latest ``width`` runs when there are more; then (``with_range``)
    the range of the medians drawn, or "1 run"."""
    if not trend:
        return Text("—", style="dim")
    shown = trend[-width:]
    each = max(1, width // len(shown))
    text = Text("".join(ch * each for ch in shown).ljust(width), style="cyan")
    vals = list(medians)[-len(shown) :]
    if not with_range:
        return text
    if len(vals) < 2:
        text.append(" 1 run", style="dim")
    else:
        text.append(f" {min(vals):.4g}–{max(vals):.4g} ms", style="dim")
        if len(trend) > width:
            text.append(f" (last {width} of {len(trend)})", style="dim")
    return text


class SeriesTable(DataTable[Text]):
    """One config's series: backend, role, trend, runs, latest median, last change."""

    DEFAULT_CSS = """
    SeriesTable { height: auto; max-height: 7; }
    """
    COLUMNS: ClassVar[tuple[str, ...]] = ("backend", "role", "trend", "runs", "latest ms", "last change")

    class SeriesHighlighted(Message):
        def __init__(self, series: SeriesRow | None) -> None:
            super().__init__()
            self.series = series

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", **kwargs)
        self.series: list[SeriesRow] = []

    def set_series(self, series: Sequence[SeriesRow]) -> None:
        self.series = list(series)
        self.clear(columns=True)
        for label in self.COLUMNS:
            self.add_column(Text(label), key=label)
        for s in self.series:
            latest = s.latest
            self.add_row(
                Text(s.label, style="bold" if s.role == "candidate" else ""),
                Text(s.role),
                wide_trend(
                    s.trend,
                    [r.median_ms for r in s.runs],
                    self._trend_width(),
                    with_range=self._trend_width() == TREND_WIDTH,
                ),
                Text(str(len(s.runs)), justify="right"),
                Text(f"{latest.median_ms:.6f}" if latest else "—", justify="right"),
                change_text(latest) if latest else Text("—"),
                key=s.key,
            )
        if not self.series:
            self.post_message(self.SeriesHighlighted(None))

    def _trend_width(self) -> int:
        """Half the cells on a narrow terminal (the medians and the last change must still fit)."""
        width = self.size.width or self.app.size.width
        return TREND_WIDTH if width >= 110 else TREND_WIDTH // 2

    @property
    def current_series(self) -> SeriesRow | None:
        if not self.series or not 0 <= self.cursor_row < len(self.series):
            return None
        return self.series[self.cursor_row]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.post_message(self.SeriesHighlighted(self.current_series))


class ProvenancePanel(VerticalScroll):
    """One run: its change with CI and p, how its conditions differ from the previous run, every fact,
    then the decision stated in full (scrolls when focused: Tab)."""

    DEFAULT_CSS = """
    ProvenancePanel { height: 1fr; padding: 0 1; }
    ProvenancePanel > Static { height: auto; }
    """

    def compose(self) -> ComposeResult:
        yield Static(provenance_text("", None))

    def show_run(self, series_label: str, run: RunRow | None) -> None:
        self.query_one(Static).update(provenance_text(series_label, run))
        self.scroll_home(animate=False)


def provenance_text(series_label: str, run: RunRow | None) -> Text:
    """The panel's text (a pure function: tests read it without an app)."""
    if run is None:
        return Text("no run selected", style="dim")
    text = Text()
    text.append(f"{series_label} · run {run.key[:8]}\n", style="bold")
    text.append_text(change_text(run))
    if run.ci is not None:
        text.append(f"  CI {ci_text(run)}")
    if run.p_value is not None:
        text.append(f"  p={p_text(run)}")
    text.append("\n")
    for flag in run.condition_flags:
        text.append(f"⚠ conditions differ: {flag}\n", style="bold yellow")
    for note in run.notes:
        text.append(f"note: {note}\n")
    width = max((len(k) for k, _v in run.facts), default=0)
    for key, value in run.facts:
        text.append(f"{key:<{width}}  ", style="bold")
        text.append(
            f"{value}\n",
            style="bold red" if key == "throttling" and value not in ("none", "not recorded") else "",
        )
    if run.reason:
        text.append(f"why: {run.reason}\n", style="dim")
    text.rstrip()
    return text
