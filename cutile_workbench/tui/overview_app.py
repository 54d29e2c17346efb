"""The TUI's first screen when no kernel is named: every kernel dir of the out root at a glance.

Contract: :class:`OverviewApp` shows an :class:`~cutile_workbench.stages.e.overview.Overview` (built by the
service before the app starts, or again on ``r``) as a table — sort with ``s`` (geomean worst
first → kernel → severity → last run), filter with ``/`` (Escape clears), ``Enter`` opens the
highlighted kernel: the app exits returning that kernel's name, and :func:`run_overview` opens
the kernel's workbench (its Ratios screen) with ``Escape`` there coming back here. Under the
table: the totals line (kernels per severity, broken dirs, geomean of the geomeans) and the
geomean strip (every kernel against E's 1.05 band). A broken kernel dir is a row, never an
error; an out root that cannot be listed is the start-up error of ``run_overview`` (exit 2).
Keys answer on every press: Enter on a broken row says why it cannot open.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Input, Static

from cutile_workbench.errors import WorkbenchError
from cutile_workbench.services.overview import (
    SEVERITY_ORDER,
    SORT_KEYS,
    Overview,
    geomean_strip,
    overview,
    sort_rows,
)
from cutile_workbench.tui.app_bindings import OVERVIEW_BINDINGS
from cutile_workbench.tui.chrome import WorkbenchFooter
from cutile_workbench.tui.widgets.overview_table import OverviewTable

#: what :func:`WorkbenchApp` returns when Escape on its Ratios screen asks to come back here
BACK_TO_OVERVIEW = 64


def totals_text(ov: Overview) -> Text:
    per = ov.per_severity
    g = ov.geomean_of_geomeans
    text = Text(no_wrap=False)
    text.append(f"{len(ov.rows)} kernels: ", style="bold")
    text.append(", ".join(f"{s} {per[s]}" for s in (*SEVERITY_ORDER, "none") if per[s]))
    text.append(f"; broken {ov.broken}" if ov.broken else "")
    text.append(" · geomean of geomeans ")
    text.append("—" if g is None else f"{g:.4f}", style="bold")
    if any(r.stand_in for r in ov.rows):
        text.append("  STAND-IN rows are not real cutile-rs", style="bold black on yellow")
    return text


class OverviewApp(App[str | None]):
    TITLE = "cutile-workbench overview"
    CSS = """
    #ov-header { height: 1; background: $panel; text-wrap: nowrap; text-overflow: ellipsis; }
    #ov-filter { height: 3; border: tall $accent; }
    #ov-table { height: 1fr; }
    #ov-totals { height: auto; padding: 0 1; }
    #ov-strip { height: auto; max-height: 12; padding: 0 1; }
    #ov-status { height: 1; padding: 0 1; color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = OVERVIEW_BINDINGS

    def __init__(self, data: Overview, *, sort: str = "geomean", cursor_kernel: str | None = None) -> None:
        super().__init__()
        self.overview = data
        self.sort = sort
        self.filter_text = ""
        self.cursor_kernel = cursor_kernel

    def compose(self) -> ComposeResult:
        yield Static(id="ov-header")
        filt = Input(placeholder="filter (Enter to apply, Escape to clear)", id="ov-filter")
        filt.display = False
        yield filt
        yield OverviewTable(id="ov-table")
        yield Static(id="ov-totals")
        yield Static(id="ov-strip")
        yield Static(id="ov-status")
        yield WorkbenchFooter()  # this app's keys, Quit and Help first at every width (issue #34)

    def on_mount(self) -> None:
        self.refresh_all()
        self.query_one(OverviewTable).focus()

    def refresh_all(self) -> None:
        ov = self.overview
        header = Text(no_wrap=True, overflow="ellipsis")
        header.append(" Overview ", style="bold reverse")
        header.append(f" {ov.root} ", style="bold")
        header.append(f"│ sort {self.sort}" + (f" │ filter {self.filter_text!r}" if self.filter_text else ""))
        self.query_one("#ov-header", Static).update(header)
        table = self.query_one(OverviewTable)
        shown = table.show(sort_rows(ov.rows, self.sort), self.filter_text)
        if self.cursor_kernel is not None and self.cursor_kernel in {r.kernel for r in ov.rows}:
            try:
                table.move_cursor(row=table.get_row_index(self.cursor_kernel))
            except Exception:  # filtered out: the cursor stays on the first row
                pass
        self.query_one("#ov-totals", Static).update(totals_text(ov))
        self.query_one("#ov-strip", Static).update(
            Text("\n".join(geomean_strip(ov, legend=False)), no_wrap=True, overflow="ellipsis")
        )
        self.query_one("#ov-status", Static).update(
            f"{shown} of {len(ov.rows)} shown · geomeans on a log scale, | = E's 1.05 band · from: md = current "
            "performance.md, logs = computed (logs* = md stale)"
        )

    def action_help(self) -> None:
        """F1 / ?: what the overview is for and every key of this app active now (not Textual's)."""
        from cutile_workbench.tui.modals import HelpScreen
        from cutile_workbench.tui.screens.base import help_rows, typed_key

        about = (
            "Every kernel dir of the out root: its geomean, severity and verdict, from its current "
            "performance.md or computed from its logs. Enter opens the kernel (Escape there comes back)."
        )
        rows = help_rows(self.screen, own=self)
        listed = {description for _key, description, _tip in rows}
        for b in OVERVIEW_BINDINGS:  # shadowed by the focused table's own key (Enter): still this app's
            if isinstance(b, Binding) and b.description and b.description not in listed:
                listed.add(b.description)
                rows.append((b.key_display or typed_key(b.key), b.description, b.tooltip or ""))
        self.push_screen(HelpScreen("Overview — help", about, rows))

    def action_cycle_sort(self) -> None:
        self.sort = SORT_KEYS[(SORT_KEYS.index(self.sort) + 1) % len(SORT_KEYS)]
        self.refresh_all()
        self.notify(f"sorted by {self.sort}", timeout=2)

    def action_filter(self) -> None:
        filt = self.query_one("#ov-filter", Input)
        filt.display = True
        filt.value = self.filter_text
        filt.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.filter_text = event.value
        event.input.display = False
        self.refresh_all()
        self.query_one(OverviewTable).focus()

    def action_clear_filter(self) -> None:
        filt = self.query_one("#ov-filter", Input)
        filt.display = False
        self.filter_text = ""
        self.refresh_all()
        self.query_one(OverviewTable).focus()

    def action_reload(self) -> None:
        try:
            self.overview = overview(Path(self.overview.root), sort=self.sort)
        except WorkbenchError as exc:
            self.notify(str(exc), title="cannot read the out root", severity="error", markup=False)
            return
        self.refresh_all()
        self.notify("out root read again", timeout=2)

    def action_open_kernel(self) -> None:
        kernel = self.query_one(OverviewTable).selected_kernel()
        if kernel is None:
            self.notify("no kernel dir under this out root", severity="warning")
            return
        row = next(r for r in self.overview.rows if r.kernel == kernel)
        if row.problem:
            self.notify(
                f"{kernel}: {row.problem}",
                title="cannot open a broken kernel dir",
                severity="error",
                markup=False,
                timeout=10,
            )
            return
        self.exit(kernel)

    def on_data_table_row_selected(self, event: OverviewTable.RowSelected) -> None:
        event.stop()
        self.action_open_kernel()

    def action_quit_overview(self) -> None:
        self.exit(None)


def run_overview(
    root: Path, *, tilegym: Path | None, keymap: Path | None = None, gpus: str | None = None
) -> int:
    """Overview → kernel → back, until the user quits (module contract); the exit code of the CLI."""
    from cutile_workbench.tui.app import make_app
    from cutile_workbench.tui.catalog import known_bindings
    from cutile_workbench.tui.keymap import load_keymap
    from cutile_workbench.tui.loaders import load_app_data

    try:
        data = overview(root)
    except WorkbenchError as exc:
        print(f"cutile-workbench: {exc}", file=sys.stderr)
        return exc.exit_code
    sort, cursor = "geomean", None
    while True:
        app = OverviewApp(data, sort=sort, cursor_kernel=cursor)
        kernel = app.run()
        if not kernel:
            return 0
        sort, cursor = app.sort, kernel
        try:
            kdata = load_app_data(kernel, out_root=root, tilegym=tilegym, gpus=gpus)
        except WorkbenchError as exc:  # the dir changed since it was listed
            print(f"cutile-workbench: {exc}", file=sys.stderr)
            continue
        rc = make_app(
            kdata, keymap=load_keymap(keymap, known=known_bindings), back_code=BACK_TO_OVERVIEW
        ).run()
        if rc != BACK_TO_OVERVIEW:
            return int(rc or 0)
        data = app.overview
