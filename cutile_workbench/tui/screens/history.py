"""History screen (mode 6): every run of the config highlighted on Ratios, with flags and provenance.

Contract: the history is :func:`cutile_workbench.services.history.kernel_history` (the same the
``history`` command prints), bound by the loader as ``AppData.history_loader`` and run in a
thread worker when the screen first mounts (the app pre-mounts it after the first paint) or on
``r`` (reload: a live run appended entries); ``AppData.history`` holds the result (tests inject
it). The config shown follows ``app.selected_row`` (the Ratios highlight) whenever the screen is
shown; ``c`` steps through the configs of the history. One row per backend with its trend;
the highlighted backend's runs, oldest first, each with its change from the previous run
(decided on the raw samples; ``inconclusive`` when they cannot decide); the highlighted run's
provenance beside them (GPU, driver, clocks, throttle reasons, harness, …). A load error is
shown on the screen and as an error modal; nothing is written except what the import stores in
an out root's ``workbench/history.sqlite``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from cutile_workbench.errors import WorkbenchError
from cutile_workbench.tui.chrome import WorkbenchFooter
from cutile_workbench.tui.history_rows import series_rows
from cutile_workbench.tui.host import PaletteCommand
from cutile_workbench.tui.screens.base import WorkbenchScreen
from cutile_workbench.tui.widgets.history_view import ProvenancePanel, RunsTable, SeriesRow, SeriesTable

if TYPE_CHECKING:
    from cutile_workbench.model import RatioRow
    from cutile_workbench.services.history import KernelHistory


class HistoryScreen(WorkbenchScreen):
    SCREEN_TITLE = "History"
    ABOUT = (
        "Every recorded run of the config highlighted on Ratios: one row per backend with a trend of its "
        "medians, then that backend's runs (oldest first) with the change from the previous run — + regression, "
        "- improvement, = same, ~ inconclusive — decided by a Mann-Whitney U test on the raw samples plus a "
        "bootstrap CI of the median ratio (never on a bare percentage: runs with medians only are inconclusive), "
        "and ⚠ when the two runs were measured under different conditions. Right: the highlighted run's "
        "provenance (GPU, driver, MIG, clocks start → end, throttle reasons, harness and its knobs, TileGym "
        "commit, cutile-rs library hash). c: next config · b: next backend · r: reload (after a live run)."
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "c",
            "next_config",
            "Next config",
            tooltip="Show the next config of the history",
            id="history-config",
        ),
        Binding(
            "b",
            "next_series",
            "Next backend",
            tooltip="Show the runs of the next backend",
            id="history-backend",
        ),
        Binding(
            "r",
            "reload",
            "Reload",
            tooltip="Read the history again (a live run appends to it)",
            id="history-reload",
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.loading = False
        self.error: str | None = None
        self.params: str | None = None  # the config shown
        self.func_key: str | None = None

    def compose(self) -> ComposeResult:
        yield self.header()
        yield Static(id="history-title")
        with Horizontal(id="history-body"):
            with Vertical(id="history-main"):
                yield SeriesTable(id="series")
                yield RunsTable(id="runs")
            yield ProvenancePanel(id="provenance")
        yield Static(id="history-status")
        yield WorkbenchFooter()

    @property
    def history(self) -> KernelHistory | None:
        return self.data.history

    def on_mount(self) -> None:
        if self.torn_down():
            return
        self.query_one(RunsTable).focus()
        if self.history is None and self.data.history_loader is not None:
            self.action_reload()
        else:
            self.follow_selection()

    def on_resize(self) -> None:
        self.query_one(RunsTable).compact = self.size.width < 100

    def on_screen_resume(self) -> None:
        if not self.torn_down():
            self.follow_selection()

    # ------------------------------------------------------------------ loading
    def action_reload(self) -> None:
        if self.data.history_loader is None or self.loading:
            return
        self.loading = True
        self._title(Text("reading the run history (import, statistics)…", style="dim"))
        self.refresh_bindings()
        self.load_history()

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="history",
        description="loading the run history",
    )
    def load_history(self) -> None:
        assert self.data.history_loader is not None
        history = self.data.history_loader()
        self.app.call_from_thread(self._loaded, history)

    def _loaded(self, history: KernelHistory) -> None:
        self.loading = False
        self.error = None
        self.data.history = history
        self.refresh_bindings()
        shown, self.params = self.params, None
        if shown is not None and shown in history.configs():  # a reload keeps the config in view
            self.show_config(shown, self.func_key)
        else:
            self.follow_selection()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "history" or event.state != WorkerState.ERROR:
            return
        self.loading = False
        error = event.worker.error
        self.error = str(error) if isinstance(error, WorkbenchError) else f"{type(error).__name__}: {error}"
        self.refresh_bindings()
        self._empty()
        self.wb.show_error(error if isinstance(error, WorkbenchError) else self.error, "Run history")

    # ------------------------------------------------------------------ what is shown
    def follow_selection(self) -> None:
        """Show the config highlighted on Ratios (if the history has it), else keep the current one."""
        row = getattr(self.wb, "selected_row", None)
        if self.history is None:
            self._empty()
            return
        if row is not None and row.params in self.history.configs():
            if (row.params, row.func_key) != (self.params, self.func_key):
                self.show_config(row.params, row.func_key)
        elif self.params is None:
            configs = self.history.configs()
            self.show_config(configs[0] if configs else None, None)

    def _empty(self) -> None:
        if self.loading:
            return
        if self.error:
            why = f"the run history could not be read: {self.error}"
        elif self.data.history_loader is None:
            why = "no run history for this data source"
        else:
            why = "the run history is not loaded yet"
        self._title(Text(why, style="bold red" if self.error else "dim"))

    def show_config(self, params: str | None, func_key: str | None) -> None:
        history = self.history
        if history is None:
            self._empty()
            return
        self.params, self.func_key = params, func_key
        rows = series_rows(history, params, func_key) if params is not None else []
        table = self.query_one(SeriesTable)
        table.set_series(rows)
        if rows:
            table.move_cursor(row=0, animate=False)
            self.show_series(rows[0])
        else:
            self.show_series(None)
        n_runs = len({r.key for s in rows for r in s.runs})
        configs = history.configs()
        where = f"{configs.index(params) + 1}/{len(configs)}" if params in configs else f"0/{len(configs)}"
        if params is None:
            title = Text(
                "no runs in the history yet: run the kernel, or open an out root with perf logs", style="dim"
            )
        elif not rows:
            title = Text(f"{params}: no runs of this config in the history", style="yellow")
        else:
            title = Text()
            title.append(params, style="bold")
            title.append(f"  · config {where} · {n_runs} run{'s' if n_runs != 1 else ''}")
        self._title(title)
        self._status(history)

    def show_series(self, series: SeriesRow | None) -> None:
        runs = self.query_one(RunsTable)
        runs.set_runs(series.runs if series else ())
        self.query_one(ProvenancePanel).show_run(series.label if series else "", runs.current_run)

    def _title(self, text: Text) -> None:
        self.query_one("#history-title", Static).update(text)

    def _status(self, history: KernelHistory) -> None:
        where = (
            f"store {history.store}"
            if history.persisted
            else (
                "recorded session imported in memory (nothing written)"
                if history.source == "recorded"
                else "kernel dir's logs imported in memory (nothing written; `run` records)"
            )
        )
        text = Text(f"{len(history.runs)} runs · {where} · {history.policy}", style="dim")
        if history.skipped:
            text.append(f" · {len(history.skipped)} log(s) not imported", style="yellow")
        for line in history.ignored:  # a malformed analysis.json read on without: file and line, here too
            text.append(f" · {line}", style="yellow")
        self.query_one("#history-status", Static).update(text)

    def on_series_table_series_highlighted(self, event: SeriesTable.SeriesHighlighted) -> None:
        self.show_series(event.series)

    def on_runs_table_run_highlighted(self, event: RunsTable.RunHighlighted) -> None:
        series = self.query_one(SeriesTable).current_series
        self.query_one(ProvenancePanel).show_run(series.label if series else "", event.run)

    # ------------------------------------------------------------------ actions
    def action_next_config(self) -> None:
        if self.history is None:
            return
        configs = self.history.configs()
        if not configs:
            return
        i = configs.index(self.params) + 1 if self.params in configs else 0
        self.show_config(configs[i % len(configs)], None)
        row = self.selected_config()
        if row is not None:  # the config picked here is the one every screen shows next (issue #34)
            self.wb.selected_row = row

    def selected_config(self) -> RatioRow | None:
        """The E row of the config shown (None when E has no row for it)."""
        table = self.data.table
        if table is None or self.params is None:
            return None
        return next(
            (
                r
                for r in table.rows
                if r.params == self.params and (self.func_key is None or r.func_key == self.func_key)
            ),
            None,
        )

    def action_next_series(self) -> None:
        table = self.query_one(SeriesTable)
        if table.row_count > 1:
            table.move_cursor(row=(table.cursor_row + 1) % table.row_count, animate=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "next_config":
            return self.history is not None and len(self.history.configs()) > 1
        if action == "next_series":
            return self.query_one(SeriesTable).row_count > 1
        if action == "reload":
            if self.data.history_loader is None:
                return False
            return None if self.loading else True
        return True

    def palette_commands(self) -> list[PaletteCommand]:
        out: list[PaletteCommand] = []
        if self.history is not None and len(self.history.configs()) > 1:
            out.append(("history: next config", self.params or "", self.action_next_config))
        if self.data.history_loader is not None and not self.loading:
            out.append(("history: reload", "Read the run history again", self.action_reload))
        return out
