"""Ratios screen: the E table (RatioTable), severity bar, filter, variant tabs, row → timeline.

The header carries the comparability flag of the ratios (``AppData.conditions``: a short flag
naming the difference, "comparability unknown: …" when it cannot be checked, nothing when
comparable); the full text is the ``#conditions`` line under the table (hidden when comparable).

Layout by priority (issue #20): the table shows each config as its varying fields and drops
columns the terminal cannot fit in ``cutile_workbench.tui.widgets.ratio_table.COLUMNS``' ``drop_rank`` order; the
``#detail`` line under it always carries the highlighted row's full id and every number of the
row (the dropped columns included). A variant tab or a filter makes the severity bar re-state the
geomean, CI, severity and verdict of the rows shown, labelled "variant …" / "filtered …", under
which E's whole-table result stays. ``c`` shows the chart (ratio per config with CI whiskers and
the 1.05 edge, the highlighted config's raw samples). L and R always answer: they act (after
asking: both run on the GPU), or say what is missing. Moves: ↑/↓ or j/k, PgUp/PgDn, g/Home the
first row, G/End the last; / filters over every shown column (Escape clears).
"""

from __future__ import annotations

from functools import partial
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.timer import Timer
from textual.widgets import Input, Static, Tab, Tabs

from cutile_workbench.model import RatioRow
from cutile_workbench.model import RatioTable as RatioTableModel
from cutile_workbench.services.stage_e import subset_summary
from cutile_workbench.tui.chrome import WorkbenchFooter, WorkbenchHeader
from cutile_workbench.tui.host import PaletteCommand
from cutile_workbench.tui.screens.base import WorkbenchScreen
from cutile_workbench.tui.widgets.ratio_chart import RatioChart
from cutile_workbench.tui.widgets.ratio_table import (
    ALARM_STYLE,
    COLUMNS,
    PENDING_CELL,
    RatioTable,
    config_labels,
    ratio_text,
    sol_text,
)
from cutile_workbench.tui.widgets.severity_bar import SeverityBar

ALL_TAB = "all"
_PENDING_NAMES = {"ci": "CI", "id": "identity", "sol": "SOL"}


def pending_words(pending: frozenset[str]) -> str:
    """``CI, identity, SOL, launches and conditions``: what the status line says is still loading."""
    names = [_PENDING_NAMES[k] for k in ("ci", "id", "sol") if k in pending]
    return ", ".join([*names, "launches and conditions"])


NO_GPU_LIVE = (
    "no GPU visible: L re-runs a config live on this machine's NVIDIA GPU "
    "(this is a recorded session; run the app on a GPU node)"
)
NO_GPU_SHARDED = (
    "no GPU visible: R re-runs the shown configs sharded over this node's GPUs (2 or more, or --gpus)"
)
ONE_GPU_SHARDED = "one GPU here: R shards the shown configs over 2 or more GPUs (or name slots with --gpus)"


class RatiosScreen(WorkbenchScreen):
    SCREEN_TITLE = "Ratios"
    ABOUT = (
        "One row per config: baseline backend and median, candidate median, ratio = candidate/baseline, "
        "bootstrap CI, launches per measured call (candidate/baseline; red when the candidate launches "
        "more), SOL c/b (each side's share of the GPU's measured peak: DRAM for memory-bound kernels, "
        "FLOP/s for matmul/bmm; — without a work model), the row verdict (PASS ≤ 1.05x) and id (who ran: own, "
        "REF, LIB, NONE, ?). The bar shows "
        "the geomean with its CI on the "
        "1.05 / 1.10 / 1.50 severity scale; on a variant tab or under a filter it re-states the geomean, CI, "
        "severity and verdict of the rows shown (labelled variant / filtered), E's whole-table line under it. "
        "The config column shows only the fields that vary between configs; the line under the table has the "
        "highlighted row's full id and every number. A narrow terminal drops columns in this order: variant, "
        "baseline, base ms, cand ms, SOL, CI, launches (config, ratio and verdict always stay). "
        "Verdicts: PASS (ratio ≤ 1.05), INVESTIGATE (> 1.05), NA (no valid ratio; the reason is in the detail "
        "line). c: chart of the ratios (bars from 1.0x, ├┤ 95% CI, ┊ the 1.05 edge) and the highlighted "
        "config's raw samples, candidate over baseline. Enter opens the row's launch timeline."
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "slash",
            "filter",
            "Filter",
            tooltip="Filter rows by text (params, backend, verdict)",
            id="ratios-filter",
        ),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="ratios-clear-filter"),
        Binding("v", "next_variant", "Variant", tooltip="Next variant tab", id="ratios-variant"),
        Binding(
            "t",
            "open_timeline",
            "Timeline",
            tooltip="Open the selected row's launch timeline",
            id="ratios-timeline",
        ),
        Binding(
            "L",
            "live_rerun",
            "Re-run live",
            tooltip="Re-run the selected config live on this GPU",
            id="ratios-live",
        ),
        Binding(
            "c",
            "toggle_chart",
            "Chart",
            tooltip="Ratio per config with CI whiskers and the 1.05 edge; "
            "the highlighted config's raw samples",
            id="ratios-chart",
        ),
        Binding(
            "R",
            "sharded_rerun",
            "Re-run on GPUs",
            tooltip="Re-run every shown config sharded over this node's GPUs, with per-shard progress",
            id="ratios-sharded",
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._scope_timer: Timer | None = None  # the pending bootstrap of a variant/filter's CI
        self._keys_state: tuple[bool | None, ...] | None = None  # last refreshed (_refresh_keys)

    def header(self) -> WorkbenchHeader:
        cond = self.data.conditions
        trust = self.data.trust
        notices = []
        if trust is not None and trust.warning:  # issue 18: rows that do not measure the candidate come first
            bad = sum(1 for i in trust.identities.values() if i.not_candidate)
            notices.append(f"⚠ {bad} row(s) did not run the candidate's kernel (id column)")
        if cond is not None and cond.short:
            notices.append(cond.short)
        if not notices:
            return super().header()
        urgent = bool(trust is not None and trust.warning) or (
            cond is not None and cond.state == "not_comparable"
        )
        return WorkbenchHeader(self.SCREEN_TITLE, notice=" · ".join(notices), urgent=urgent, id="header")

    def compose(self) -> ComposeResult:
        yield self.header()
        yield Tabs(id="variants")
        yield SeverityBar(self.data.table, id="severity")
        filter_input = Input(placeholder="filter (Enter to apply, Escape to clear)", id="filter")
        filter_input.display = False
        yield filter_input
        yield RatioTable(
            self.data.table.rows if self.data.table else (),
            sol=self.data.sol,
            marks=self.data.identity_marks(),
            on_current=self._follow_cursor,
            pending=self.data.pending,
            id="table",
        )
        yield Static(id="detail")
        chart = RatioChart(id="chart")
        chart.display = False
        yield chart
        conditions = Static(self._conditions_text(), id="conditions")
        conditions.display = bool(self.data.conditions and self.data.conditions.short)
        yield conditions
        yield Static(id="status")
        problems = Static(self._problems_text(), id="problems")
        problems.display = bool(self.data.problems)
        yield problems
        yield WorkbenchFooter()

    def on_mount(self) -> None:
        self._set_up()

    async def data_reloaded(self) -> None:
        """The whole session's data replaced the quick first screen's (issue 31 item 3): built again
        from it. Keys typed meanwhile were held by the app, so the view state is still the first one."""
        await self.recompose()
        self._set_up()

    def _set_up(self) -> None:
        tabs = self.query_one("#variants", Tabs)
        variants = self.variants()
        tabs.display = len(variants) > 1
        for v in [ALL_TAB, *variants]:
            tabs.add_tab(Tab(v, id=f"variant-{v}"))
        # Focused now, not through Widget.focus's call_later: the first frame shows the table
        # focused and the first key reaches it without a second pass (issue #34)
        self.set_focus(self.query_one(RatioTable))
        self.update_status()

    def _problems_text(self) -> Text:
        """The first load problem (file, line) and how many: it stays while the data lacks what it
        refused (issue #34; a toast left after 30 s); ``i`` lists every one."""
        problems = self.data.problems
        if not problems:
            return Text()
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        text = Text("⚠ ", style="bold")
        # what a problem took out of this view comes first, with its cause (a column that is
        # simply absent reads as "not computed"; issue #34: a cut session.json dropped the id column)
        costs = [(what, str(e)) for view, what, e in self.data.narrowed if view == "ratios"]
        if costs:
            cause = costs[0][1]
            whats = "; ".join(what for what, why in costs if why == cause)
            text.append(f"{whats}: {cause}{more} · i lists the load problems")
        else:
            text.append(f"{problems[0]}{more} · i lists the load problems")
        return text

    def _conditions_text(self) -> Text:
        cond = self.data.conditions
        if cond is None or not cond.short:
            return Text()
        text = Text()
        for i, line in enumerate(cond.lines):
            if i:
                text.append("\n")
            text.append(
                "⚠ " if cond.state == "not_comparable" else "? ",
                style=ALARM_STYLE if cond.state == "not_comparable" else "bold",
            )
            text.append(line)
        return text

    def _labels(self) -> dict[str, str]:
        return config_labels([r.params for r in self.data.table.rows]) if self.data.table else {}

    def variants(self) -> list[str]:
        if self.data.table is None:
            return []
        return sorted({r.variant for r in self.data.table.rows if r.variant})

    @property
    def table(self) -> RatioTable:
        return self.query_one(RatioTable)

    def update_status(self) -> None:
        if self.data.table is None:  # says why where the rows would be (the first load problem)
            why = f": {self.data.problems[0]}" if self.data.problems else ""
            text = f"no ratio table{why or ': run E (or open an out root with logs)'}"
            self.query_one("#status", Static).update(Text(text, style="bold" if why else ""))
            return
        t = self.table
        total = len(self.data.table.rows) if self.data.table else 0
        bits = [f"{len(t.shown_rows)}/{total} rows", f"sort {t.sort_key}{' ▼' if t.reverse else ' ▲'}"]
        if t.filter_text:
            bits.append(f"filter '{t.filter_text}'")
        if t.slow_only:
            bits.append("slow only")
        if t.variant:
            bits.append(f"variant {t.variant}")
        if t.dropped_columns:
            n = len(t.dropped_columns)  # which ones: F1 states the order, the detail line has their values
            bits.append(f"{n} column{'s' if n != 1 else ''} in the detail line")
        if self.data.pending:
            bits.append(f"loading {pending_words(self.data.pending)}… keys wait until it is in (q quits)")
        self.query_one("#status", Static).update(Text("  ·  ".join(bits)))

    def update_scope(self) -> None:
        """The severity bar re-states the shown rows when a variant tab or a filter narrows them."""
        t = self.table
        whole = self.data.table
        if whole is None:
            return
        shown = t.shown_rows
        n = f"{len(shown)} row{'s' if len(shown) != 1 else ''}"
        if t.filter_text or t.slow_only:
            scope = f"filtered ({n})" if not t.variant else f"variant {t.variant}, filtered ({n})"
        elif t.variant:
            scope = f"variant {t.variant} ({n})"
        else:
            scope = ""
        bar = self.query_one(SeverityBar)
        if not scope:  # the whole table's CI still being drawn on a quick first screen: "computing"
            bar.set_scope("", None, whole, ci_pending="ci" in self.data.pending)
            return
        if not shown:  # an empty result has no geomean and no verdict: the bar says nothing matched
            if self._scope_timer is not None:
                self._scope_timer.stop()
            self._scope_timer = None
            bar.set_scope(scope, None, whole)
            return
        # geomean, severity and verdict now; the CI (a joint bootstrap: 2000 resamples of every
        # shown row) in a thread once the filter stops changing, so typing stays responsive
        quick = subset_summary(whole.kernel, shown, self.data.samples, n_boot=0)
        has_samples = bool(shown) and all(
            (r.func_key, r.params) in self.data.samples for r in shown if r.status == "OK"
        )
        bar.set_scope(scope, quick, whole, ci_pending=has_samples)
        if self._scope_timer is not None:
            self._scope_timer.stop()
        self._scope_timer = None
        if has_samples:
            self._scope_timer = self.set_timer(0.2, partial(self.bootstrap_scope, scope, list(shown)))

    @work(thread=True, exclusive=True, group="subset-ci", exit_on_error=False)
    def bootstrap_scope(self, scope: str, rows: list[RatioRow]) -> None:
        whole = self.data.table
        if whole is None:
            return
        full = subset_summary(whole.kernel, rows, self.data.samples)
        self.app.call_from_thread(self._scope_done, scope, rows, full)

    def _scope_done(self, scope: str, rows: list[RatioRow], full: RatioTableModel) -> None:
        if self.table.shown_rows != rows:  # the view changed meanwhile: a newer bootstrap follows
            return
        self.query_one(SeverityBar).set_scope(scope, full, self.data.table)

    def update_detail(self) -> None:
        """Every number of the highlighted row, its full id first (the table may show less)."""
        row = self.table.current_row
        detail = self.query_one("#detail", Static)
        if row is None:
            detail.update(Text())
            return
        text = Text(row.params, style="bold")
        ci = "—" if row.ci_low is None or row.ci_high is None else f"{row.ci_low:.3f}–{row.ci_high:.3f}"
        if "ci" in self.data.pending:
            ci = PENDING_CELL
        ms = ("—" if v is None else f"{v:.4f}" for v in (row.candidate_ms, row.baseline_ms))
        cand_ms, base_ms = ms
        bits = [
            f"ratio {ratio_text(row)} CI {ci}",
            f"cand {cand_ms} / {row.baseline_backend or '—'} {base_ms} ms",
            f"launches {row.candidate_launches if row.candidate_launches is not None else '?'}/"
            f"{row.baseline_launches if row.baseline_launches is not None else '?'}",
            f"SOL {PENDING_CELL if 'sol' in self.data.pending else sol_text(self.data.sol.get((row.func_key, row.params)))}",
        ]
        if row.variant:
            bits.insert(0, f"variant {row.variant}")
        text.append("\n" + " · ".join(bits))
        if row.reason:
            text.append(f" · {row.row_verdict}: {row.reason}", style="yellow")
        ident = self.data.identity_line(row.params)  # issue 18: the id column may be the only trace
        if ident:
            text.append(f" · {ident}", style=ALARM_STYLE if not ident.startswith("id own") else "dim")
        detail.update(text)
        chart = self.query_one(RatioChart)
        if chart.display:
            self._fill_chart(row)

    def _fill_chart(self, row: RatioRow | None) -> None:
        labels = self._labels()
        samples = self.data.samples.get((row.func_key, row.params)) if row is not None else None
        focus = labels.get(row.params, row.params) if row is not None else ""
        self.query_one(RatioChart).show(self.table.shown_rows, labels, samples, focus)

    def action_toggle_chart(self) -> None:
        """The chart takes the place of the detail line and the conditions (both stay one key away:
        c again, i) so that the table keeps its rows at 80x24."""
        chart = self.query_one(RatioChart)
        chart.display = not chart.display
        self.query_one("#detail", Static).display = not chart.display
        conditions = self.query_one("#conditions", Static)
        conditions.display = not chart.display and bool(self.data.conditions and self.data.conditions.short)
        if chart.display:
            self._fill_chart(self.table.current_row)

    def selected_config(self) -> RatioRow | None:
        return self.table.current_row

    def on_screen_resume(self) -> None:
        # another screen picked a config (History's c): the cursor goes to it when it is shown here
        wanted = self.wb.selected_row
        if wanted is not None and wanted is not self.table.current_row and self.table.move_to_row(wanted):
            return  # the cursor moves to it (its highlight message follows)
        # not shown here (slow only, a filter, a variant tab hides it): the row under the cursor is
        # the selected config, as every other screen will show it
        row = self.table.current_row
        if row is not None:
            self.wb.selected_row = row

    def _follow_cursor(self) -> None:
        """The app's selection and the detail line are the row under the cursor as soon as it changes
        (a move, a sort, a filter, Escape, a resize rebuild), not when the highlight message comes:
        a check (or a key) between the two saw the previous row."""
        if not self.is_current:
            return  # a rebuild while another screen is shown keeps that screen's pick
        row = self.table.current_row
        if row is not None:
            self.wb.selected_row = row
            self.update_detail()  # the detail line names it at once too

    def on_data_table_row_highlighted(self) -> None:
        self.wb.selected_row = self.table.current_row
        self.update_detail()
        self._refresh_keys()

    def on_ratio_table_view_changed(self) -> None:
        self.update_status()
        self.update_scope()
        self.update_detail()
        self._refresh_keys()

    #: the actions whose enabled state (check_action) follows the table's rows and filter
    _DYNAMIC_ACTIONS = ("clear_filter", "open_timeline", "next_variant")

    def _refresh_keys(self) -> None:
        """Refresh the footer's keys only when one of them changed state: a refresh recomposes
        the footer (~35 widgets restyled), and a move, sort or filter key rarely changes any
        (issue #34: twice per key before)."""
        state = tuple(self.check_action(action, ()) for action in self._DYNAMIC_ACTIONS)
        if state != self._keys_state:
            self._keys_state = state
            self.refresh_bindings()

    def action_filter(self) -> None:
        inp = self.query_one("#filter", Input)
        inp.value = self.table.filter_text
        # Show and focus synchronously: keys typed right after "/" are already queued, and a
        # deferred focus (or a class change not yet restyled) would let them reach the table.
        inp.display = True
        self.set_focus(inp)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.table.filter_text = event.value
        self.update_status()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.table.focus()

    def action_clear_filter(self) -> None:
        inp = self.query_one("#filter", Input)
        inp.value = ""
        inp.display = False
        self.table.filter_text = ""
        self.table.focus()
        self.update_status()

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        self._show_variant(event.tab.id or "")

    def _show_variant(self, tab_id: str) -> None:
        v = tab_id.removeprefix("variant-")
        self.table.variant = None if v == ALL_TAB else v  # unchanged: no rebuild (a reactive)
        self.update_status()

    def action_next_variant(self) -> None:
        """The next tab's rows are in the table when this returns, not when the Tabs' message comes
        back: keys typed after ``v`` (``v ↓ 6``) are already queued and act on what ``v`` shows."""
        tabs = self.query_one("#variants", Tabs)
        tabs.action_next_tab()
        self._show_variant(tabs.active)

    def on_ratio_table_row_chosen(self, event: RatioTable.RowChosen) -> None:
        self.wb.open_timeline(event.row)

    def action_open_timeline(self) -> None:
        row = self.table.current_row
        if row is not None:
            self.wb.open_timeline(row)

    def action_live_rerun(self) -> None:
        if self.data.runner is None:
            self.notify(
                self.data.live_unavailable or NO_GPU_LIVE, severity="warning", timeout=8, markup=False
            )
            return
        row = self.table.current_row
        if row is None:
            self.notify("no row highlighted: nothing to re-run", severity="warning")
            return
        if self.rerun_refused():  # the doctor's checks first: never ask to confirm a run that cannot start
            return
        from cutile_workbench.tui.modals import ConfirmModal

        lines = [
            f"config: {row.params}",
            "",
            "Runs the perf test of this config on this machine's GPU (the Timeline shows it live;",
            "Escape there cancels). Start it?",
        ]

        def answered(yes: bool | None) -> None:
            if yes:
                self.wb.open_timeline(row, live=True)
            else:
                self.notify("nothing run")

        self.app.push_screen(ConfirmModal("Re-run live on the GPU", lines), answered)

    def action_sharded_rerun(self) -> None:
        if self.data.sharded is None:
            why = self.data.sharded_unavailable or (
                NO_GPU_SHARDED if self.data.runner is None else ONE_GPU_SHARDED
            )
            self.notify(why, severity="warning", timeout=8, markup=False)
            return
        if self.rerun_refused():  # the doctor's checks, before any GPU work
            return
        rows = list(self.table.shown_rows)
        if not rows:
            self.notify("no rows shown: clear the filter (Escape) to re-run them", severity="warning")
        else:
            from cutile_workbench.tui.screens.sharded import ShardedRunScreen

            self.app.push_screen(ShardedRunScreen(rows, self.data.sharded))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter":
            # with nothing to clear, Escape goes back a level (the app's binding: a screen, the overview)
            return bool(self.table.filter_text or self.query_one("#filter", Input).display)
        # L and G always answer (issue #20): without a GPU they say so instead of doing nothing
        if action in ("sharded_rerun", "live_rerun"):
            return True
        if action in ("open_timeline",):
            return True if self.table.current_row is not None else None
        if action == "next_variant":
            return len(self.variants()) > 1
        return True

    def palette_commands(self) -> list[PaletteCommand]:
        table = self.table
        out: list[PaletteCommand] = [
            (f"ratios: sort by {col.label}", f"Sort rows by {col.label}", partial(table.sort_by, col.key))
            for col in COLUMNS
        ]
        out.append(
            (
                "ratios: show all rows" if table.slow_only else "ratios: show slow rows only",
                "Toggle the slow-only filter (ratio > 1.05 or NA)",
                table.action_toggle_slow,
            )
        )
        out.append(("ratios: reverse sort", "Reverse the sort order", table.action_reverse_sort))
        out.append(("ratios: filter…", "Filter rows by text", self.action_filter))
        if len(self.variants()) > 1:
            out.append(("ratios: next variant", "Show the next variant tab", self.action_next_variant))
        chart_shown = self.is_mounted and self.query_one(RatioChart).display
        out.append(
            (
                "ratios: hide chart" if chart_shown else "ratios: show chart",
                "Ratio per config with CI whiskers; the highlighted config's raw samples",
                self.action_toggle_chart,
            )
        )
        if table.current_row is not None:
            out.append(
                ("ratios: open timeline of selected row", table.current_row.params, self.action_open_timeline)
            )
            if self.data.runner is not None:
                out.append(("live: re-run selected config", table.current_row.params, self.action_live_rerun))
        if self.data.sharded is not None and table.shown_rows:
            out.append(
                (
                    f"live: re-run the {len(table.shown_rows)} shown configs over {self.data.sharded.slot_label()}",
                    "Sharded over this node's GPUs, per-shard progress, merged into a scratch out root",
                    self.action_sharded_rerun,
                )
            )
        return out
