"""OverviewTable: one row per kernel dir of an out root (no I/O: rows come from the service).

Contract: :meth:`OverviewTable.show` replaces the rows with the given
:class:`~cutile_workbench.stages.e.overview.OverviewRow` values, keeping only those whose text matches the
filter (kernel, verdicts, severity, candidate, problem; case-insensitive), in the given order.
Each row's key is its kernel name (:meth:`selected_kernel`). Columns in priority order: kernel,
E verdict, geomean (red above E's 1.05 band), severity, worst config and ratio, matched/configs,
F verdicts, candidate (STAND-IN on yellow), comparability, source of E's numbers, regression and
last run; a broken dir says BROKEN and its problem in the worst-config column.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable

from cutile_workbench.model import E_SOURCE_SHORT, OVERVIEW_COLUMNS, OverviewRow

COLUMNS = OVERVIEW_COLUMNS  # the one column list the CLI prints too


def row_text(r: OverviewRow) -> str:
    """What the filter matches against."""
    return " ".join(
        str(x)
        for x in (
            r.kernel,
            r.e_verdict,
            r.severity,
            r.candidate,
            r.problem,
            r.comparability,
            r.regression,
            *r.f_verdicts.values(),
            "stand-in" if r.stand_in else "",
        )
    ).lower()


def _cells(r: OverviewRow) -> tuple[Text | str, ...]:
    if r.problem:
        return (
            r.kernel,
            Text("BROKEN", style="bold red"),
            "—",
            "—",
            Text(r.problem, style="red"),
            *("—",) * (len(COLUMNS) - 5),
        )
    geo = (
        Text("—")
        if r.geomean is None
        else Text(f"{r.geomean:.4f}", style="green" if r.in_band else "bold red")
    )
    worst = (
        "—" if r.worst_config is None or r.worst_ratio is None else f"{r.worst_config} {r.worst_ratio:.2f}x"
    )
    matched = "—" if r.configs is None else f"{r.matched}/{r.configs}"
    f = ",".join(f"{s}:{v}" for s, v in r.f_verdicts.items()) or "—"
    cand: Text | str = r.candidate or "—"
    if r.stand_in:
        cand = Text(f"STAND-IN {r.candidate}", style="bold black on yellow")
    comp = Text(r.comparability or "—", style="bold red" if r.comparability == "not_comparable" else "")
    reg = Text(r.regression or "—", style="bold red" if (r.regression or "").endswith("regressed") else "")
    ident = Text(r.identity_mark, style="bold red" if r.identity_mark == "CHECK" else "")
    return (
        r.kernel,
        r.e_verdict or "—",
        geo,
        r.severity or "—",
        worst,
        matched,
        f,
        cand,
        ident,
        comp,
        E_SOURCE_SHORT.get(r.e_source or "", "—"),
        reg,
        (r.last_run or "—").replace("T", " "),
    )


class OverviewTable(DataTable[Text | str]):
    """Kernel rows (module contract)."""

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True
        self.fixed_columns = 1
        self.add_columns(*COLUMNS)

    def show(self, rows: Sequence[OverviewRow], filter_text: str = "") -> int:
        """Replace the rows; returns how many are shown."""
        self.clear()
        needle = filter_text.strip().lower()
        shown = 0
        for r in rows:
            if needle and needle not in row_text(r):
                continue
            self.add_row(*_cells(r), key=r.kernel)
            shown += 1
        return shown

    def selected_kernel(self) -> str | None:
        if self.row_count == 0:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        return None if key.value is None else str(key.value)
