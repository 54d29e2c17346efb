"""Ratios screen: the E table (RatioTable), severity bar, filter, variant tabs, row → timeline.

The header carries the comparability flag of the ratios (``AppData.conditions``: a short flag
naming the difference, "comparability unknown: …" when it cannot be checked, nothing when
comparable); the full text is the ``#conditions`` line under the table (hidden when comparable).
"""

from __future__ import annotations

from functools import partial
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Input, Static, Tab, Tabs

from widgets.ratio_table import COLUMNS, RatioTable
from widgets.severity_bar import SeverityBar
from workbench.tui.chrome import WorkbenchHeader
from workbench.tui.host import PaletteCommand
from workbench.tui.screens.base import WorkbenchScreen

ALL_TAB = "all"



class RatiosScreen(WorkbenchScreen):
    SCREEN_TITLE = "Ratios"
    ABOUT = (
        "One row per config: baseline backend and median, candidate median, ratio = candidate/baseline, "
        "bootstrap CI, launches per measured call (candidate/baseline; red when the candidate launches "
        "more), SOL c/b (each side's share of the GPU's measured peak: DRAM for memory-bound kernels, "
        "FLOP/s for matmul/bmm; — without a work model), the row verdict (PASS ≤ 1.05x) and id (who ran: own, "
        "REF, LIB, NONE, ?). The bar shows "
        "the geomean with its CI on the "
        "1.05 / 1.10 / 1.50 severity scale. Enter opens the row's launch timeline."
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter", tooltip="Filter rows by text (params, backend, verdict)",
                id="ratios-filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="ratios-clear-filter"),
        Binding("v", "next_variant", "Variant", tooltip="Next variant tab", id="ratios-variant"),
        Binding("t", "open_timeline", "Timeline", tooltip="Open the selected row's launch timeline",
                id="ratios-timeline"),
        Binding("L", "live_rerun", "Re-run live", tooltip="Re-run the selected config live on this GPU",
                id="ratios-live"),
        Binding("G", "sharded_rerun", "Re-run on GPUs", tooltip="Re-run every shown config sharded over this "
                "node's GPUs, with per-shard progress", id="ratios-sharded"),
    ]

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
        urgent = bool(trust is not None and trust.warning) or (cond is not None and cond.state == "not_comparable")
        return WorkbenchHeader(self.SCREEN_TITLE, notice=" · ".join(notices), urgent=urgent, id="header")

    def compose(self) -> ComposeResult:
        yield self.header()
        yield Tabs(id="variants")
        yield SeverityBar(self.data.table, id="severity")
        filter_input = Input(placeholder="filter (Enter to apply, Escape to clear)", id="filter")
        filter_input.display = False
        yield filter_input
        yield RatioTable(self.data.table.rows if self.data.table else (), sol=self.data.sol,
                         marks=self.data.identity_marks(), id="table")
        conditions = Static(self._conditions_text(), id="conditions")
        conditions.display = bool(self.data.conditions and self.data.conditions.short)
        yield conditions
        yield Static(id="status")
        yield Footer()

    def on_mount(self) -> None:
        tabs = self.query_one("#variants", Tabs)
        variants = self.variants()
        tabs.display = len(variants) > 1
        for v in [ALL_TAB, *variants]:
            tabs.add_tab(Tab(v, id=f"variant-{v}"))
        self.query_one(RatioTable).focus()
        self.update_status()
        if self.data.table is None:
            self.query_one("#status", Static).update(Text("no ratio table: run E (or open an out root with logs)"))

    def _conditions_text(self) -> Text:
        cond = self.data.conditions
        if cond is None or not cond.short:
            return Text()
        text = Text()
        for i, line in enumerate(cond.lines):
            if i:
                text.append("\n")
            text.append("⚠ " if cond.state == "not_comparable" else "? ",
                        style="bold red" if cond.state == "not_comparable" else "bold")
            text.append(line)
        return text

    def on_resize(self) -> None:
        self.table.compact = self.size.width < 100

    def variants(self) -> list[str]:
        if self.data.table is None:
            return []
        return sorted({r.variant for r in self.data.table.rows if r.variant})

    @property
    def table(self) -> RatioTable:
        return self.query_one(RatioTable)

    def update_status(self) -> None:
        t = self.table
        total = len(self.data.table.rows) if self.data.table else 0
        bits = [f"{len(t.shown_rows)}/{total} rows", f"sort {t.sort_key}{' ▼' if t.reverse else ' ▲'}"]
        if t.filter_text:
            bits.append(f"filter '{t.filter_text}'")
        if t.slow_only:
            bits.append("slow only")
        if t.variant:
            bits.append(f"variant {t.variant}")
        self.query_one("#status", Static).update(Text("  ·  ".join(bits)))

    def on_data_table_row_highlighted(self) -> None:
        self.wb.selected_row = self.table.current_row
        self.refresh_bindings()

    def on_ratio_table_view_changed(self) -> None:
        self.update_status()
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
        tab_id = event.tab.id or ""
        v = tab_id.removeprefix("variant-")
        self.table.variant = None if v == ALL_TAB else v
        self.update_status()

    def action_next_variant(self) -> None:
        self.query_one("#variants", Tabs).action_next_tab()

    def on_ratio_table_row_chosen(self, event: RatioTable.RowChosen) -> None:
        self.wb.open_timeline(event.row)

    def action_open_timeline(self) -> None:
        row = self.table.current_row
        if row is not None:
            self.wb.open_timeline(row)

    def action_live_rerun(self) -> None:
        if self.data.runner is None:
            if self.data.live_unavailable:
                self.notify(self.data.live_unavailable, severity="warning", timeout=8)
            return
        row = self.table.current_row
        if row is not None:
            self.wb.open_timeline(row, live=True)

    def action_sharded_rerun(self) -> None:
        if self.data.sharded is None:
            if self.data.sharded_unavailable:
                self.notify(self.data.sharded_unavailable, severity="warning", timeout=8)
            return
        rows = list(self.table.shown_rows)
        if rows:
            from workbench.tui.screens.sharded import ShardedRunScreen

            self.app.push_screen(ShardedRunScreen(rows, self.data.sharded))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter" and getattr(self.app, "back_code", None) is not None:
            # opened from the overview: with nothing to clear, Escape goes back there (the app's binding)
            return bool(self.table.filter_text or self.query_one("#filter", Input).display)
        if action == "sharded_rerun":  # offered with >= 2 GPUs or an explicit --gpus only
            if self.data.sharded is None:
                return True if self.data.sharded_unavailable else False
            return True if self.table.shown_rows else None
        if action == "live_rerun":
            if self.data.runner is None:
                # no GPU/runner here: hide the key, unless there is a GPU and a reason to tell
                return True if self.data.live_unavailable else False
            return True if self.table.current_row is not None else None
        if action in ("open_timeline",):
            return True if self.table.current_row is not None else None
        if action == "next_variant":
            return len(self.variants()) > 1
        return True

    def palette_commands(self) -> list[PaletteCommand]:
        table = self.table
        out: list[PaletteCommand] = [(f"ratios: sort by {col.label}", f"Sort rows by {col.label}",
                                      partial(table.sort_by, col.key)) for col in COLUMNS]
        out.append(("ratios: show all rows" if table.slow_only else "ratios: show slow rows only",
                    "Toggle the slow-only filter (ratio > 1.05 or NA)", table.action_toggle_slow))
        out.append(("ratios: filter…", "Filter rows by text", self.action_filter))
        if table.current_row is not None:
            out.append(("ratios: open timeline of selected row", table.current_row.params, self.action_open_timeline))
            if self.data.runner is not None:
                out.append(("live: re-run selected config", table.current_row.params, self.action_live_rerun))
        if self.data.sharded is not None and table.shown_rows:
            out.append((f"live: re-run the {len(table.shown_rows)} shown configs over {self.data.sharded.slot_label()}",
                        "Sharded over this node's GPUs, per-shard progress, merged into a scratch out root",
                        self.action_sharded_rerun))
        return out
