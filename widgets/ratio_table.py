"""RatioTable: the E table as an interactive DataTable (sort, filter, slow-only, variant).

Contract: fed ``workbench.model.RatioRow`` objects (``set_rows``); never reads files. The view
state (sort column, direction, filter text, slow-only, variant) lives in reactives and the
visible row list is computed by the pure function :func:`visible_rows`, so the CLI and tests
can reproduce exactly what the table shows. Enter posts :class:`RatioTable.RowChosen`.
Cell text is passed as ``rich.text.Text`` (never markup) because params strings are user data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey

from workbench.model import RatioRow

SLOW_THRESHOLD = 1.05  # contract §5.1: a row above this is flagged INVESTIGATE


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    sort_value: Callable[[RatioRow], Any]


def _launches(row: RatioRow) -> str:
    c = "?" if row.candidate_launches is None else str(row.candidate_launches)
    b = "?" if row.baseline_launches is None else str(row.baseline_launches)
    return f"{c}/{b}"


COLUMNS: tuple[Column, ...] = (
    Column("config", "config", lambda r: r.params),
    Column("variant", "variant", lambda r: r.variant or ""),
    Column("baseline", "baseline", lambda r: r.baseline_backend or ""),
    Column("base_ms", "base ms", lambda r: r.baseline_ms),
    Column("cand_ms", "cand ms", lambda r: r.candidate_ms),
    Column("ratio", "ratio", lambda r: r.ratio),
    Column("ci", "CI", lambda r: r.ci_low),
    Column("launches", "launch c/b", lambda r: (r.candidate_launches or 0) - (r.baseline_launches or 0)),
    Column("verdict", "verdict", lambda r: r.row_verdict),
)
COLUMN_KEYS: tuple[str, ...] = tuple(c.key for c in COLUMNS)
_BY_KEY = {c.key: c for c in COLUMNS}
COMPACT_HIDDEN = ("variant", "baseline", "ci")
#: rows added before the first paint (a screenful and then some); the rest follow right after
FIRST_BATCH = 80


def row_key(row: RatioRow) -> str:
    return f"{row.func_key}\x1f{row.params}\x1f{row.variant or ''}"


def is_slow(row: RatioRow) -> bool:
    """Slow = above the E threshold, or NA (a missing row is never 'fine')."""
    return row.ratio is None or row.ratio > SLOW_THRESHOLD


def visible_rows(
    rows: Sequence[RatioRow],
    *,
    filter_text: str = "",
    slow_only: bool = False,
    variant: str | None = None,
    sort_key: str = "config",
    reverse: bool = False,
) -> list[RatioRow]:
    """The rows the table shows, in order. ``None`` sort values always sort last."""
    needle = filter_text.strip().lower()
    out = [
        r
        for r in rows
        if (variant is None or r.variant == variant)
        and (not slow_only or is_slow(r))
        and (
            not needle
            or needle in r.params.lower()
            or needle in r.func_key.lower()
            or needle in (r.baseline_backend or "").lower()
            or needle in r.row_verdict.lower()
        )
    ]
    get = _BY_KEY[sort_key].sort_value
    present = [r for r in out if get(r) is not None]
    absent = [r for r in out if get(r) is None]
    present.sort(key=get, reverse=reverse)
    return present + absent


def _fmt_ms(v: float | None) -> str:
    return "—" if v is None else f"{v:.4f}"


def row_cells(row: RatioRow) -> list[Text]:
    """Display cells of one row (styled by verdict; never parsed as markup)."""
    ci = "—" if row.ci_low is None or row.ci_high is None else f"{row.ci_low:.3f}–{row.ci_high:.3f}"
    ratio = "NA" if row.ratio is None else f"{row.ratio:.3f}x"
    verdict = row.row_verdict
    vstyle = {"PASS": "green", "INVESTIGATE": "bold red", "NA": "yellow"}[verdict]
    launches = Text(_launches(row))
    if (
        row.candidate_launches is not None
        and row.baseline_launches is not None
        and row.candidate_launches > row.baseline_launches
    ):
        launches.stylize("bold red")  # extra launches per call = the classic wrapper bug
    return [
        Text(row.params),
        Text(row.variant or ""),
        Text(row.baseline_backend or "—"),
        Text(_fmt_ms(row.baseline_ms), justify="right"),
        Text(_fmt_ms(row.candidate_ms), justify="right"),
        Text(ratio, style=vstyle if verdict != "PASS" else "", justify="right"),
        Text(ci),
        launches,
        Text(verdict if not row.reason else f"{verdict} ({row.reason})", style=vstyle),
    ]


class RatioTable(DataTable[Text]):
    """One row per config; view state in reactives; Enter → :class:`RowChosen`."""

    DEFAULT_CSS = """
    RatioTable { height: 1fr; }
    RatioTable > .ratiotable--sorted { text-style: bold underline; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = DataTable.COMPONENT_CLASSES | {"ratiotable--sorted"}

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "cycle_sort", "Sort", tooltip="Sort by the next column", id="ratios-sort"),
        Binding("r", "reverse_sort", "Reverse", tooltip="Reverse the sort order", id="ratios-reverse"),
        Binding("o", "toggle_slow", "Slow only", tooltip="Show only rows with ratio > 1.05 or NA",
                id="ratios-slow"),
    ]

    sort_key: reactive[str] = reactive("config", init=False)
    reverse: reactive[bool] = reactive(False, init=False)
    filter_text: reactive[str] = reactive("", init=False)
    slow_only: reactive[bool] = reactive(False, init=False)
    variant: reactive[str | None] = reactive(None, init=False)
    #: narrow terminals: drop the variant / baseline / CI columns (the screen sets it below 100 cols)
    compact: reactive[bool] = reactive(False, init=False)

    class RowChosen(Message):
        """Enter on a row: the screen opens its timeline (or offers a live re-run)."""

        def __init__(self, row: RatioRow) -> None:
            super().__init__()
            self.row = row

    class ViewChanged(Message):
        """Posted after every rebuild (sort, filter, slow-only, variant or new rows)."""

    def __init__(self, rows: Sequence[RatioRow] = (), **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self._all: list[RatioRow] = list(rows)
        self._shown: list[RatioRow] = []
        self._ready = False  # reactives set before mount must not touch the (absent) app
        self._generation = 0  # bumped per rebuild; a deferred _add_rest of an older one is dropped

    # ------------------------------------------------------------------ data
    def set_rows(self, rows: Sequence[RatioRow]) -> None:
        self._all = list(rows)
        self._rebuild()

    @property
    def shown_rows(self) -> list[RatioRow]:
        return list(self._shown)

    @property
    def current_row(self) -> RatioRow | None:
        if not self._shown or self.cursor_row < 0 or self.cursor_row >= len(self._shown):
            return None
        return self._shown[self.cursor_row]

    def on_mount(self) -> None:
        self._ready = True
        self._rebuild()

    def _label(self, col: Column) -> Text:
        if col.key != self.sort_key:
            return Text(col.label)
        return Text(col.label + (" ▼" if self.reverse else " ▲"), style="bold")

    def _rebuild(self) -> None:
        if not self._ready:
            return
        keep = self.current_row
        self._shown = visible_rows(
            self._all,
            filter_text=self.filter_text,
            slow_only=self.slow_only,
            variant=self.variant,
            sort_key=self.sort_key,
            reverse=self.reverse,
        )
        cols = self.visible_columns()
        keep_idx = [COLUMN_KEYS.index(c.key) for c in cols]
        all_cells = [[cells[i] for i in keep_idx] for cells in map(row_cells, self._shown)]
        # Fixed widths from every row (cheap: cell_len), so rows added after the first paint
        # never make the columns jump.
        widths = [max([self._label(c).cell_len, *(row[j].cell_len for row in all_cells)])
                  for j, c in enumerate(cols)]
        target = self._shown.index(keep) if keep is not None and keep in self._shown else -1
        upto = len(all_cells) if target >= FIRST_BATCH else min(len(all_cells), FIRST_BATCH)
        self._generation += 1
        with self.app.batch_update():
            self.clear(columns=True)
            for col, w in zip(cols, widths, strict=True):
                self.add_column(self._label(col), key=col.key, width=w)
            for r, cells in zip(self._shown[:upto], all_cells[:upto], strict=True):
                self.add_row(*cells, key=row_key(r))
            if target >= 0:
                self.move_cursor(row=target, animate=False)
        if upto < len(all_cells):
            # first paint shows a screenful; the rest is added right after it (same order)
            self.call_after_refresh(self._add_rest, self._generation, upto, all_cells)
        self.post_message(self.ViewChanged())

    def _add_rest(self, generation: int, start: int, all_cells: list[list[Text]]) -> None:
        if generation != self._generation:
            return  # a newer rebuild (sort/filter) replaced this one
        with self.app.batch_update():
            for r, cells in zip(self._shown[start:], all_cells[start:], strict=True):
                self.add_row(*cells, key=row_key(r))

    def watch_sort_key(self) -> None:
        self._rebuild()

    def watch_reverse(self) -> None:
        self._rebuild()

    def watch_filter_text(self) -> None:
        self._rebuild()

    def watch_slow_only(self) -> None:
        self._rebuild()

    def watch_variant(self) -> None:
        self._rebuild()

    def watch_compact(self) -> None:
        # rebuilt after the resize settles: rebuilding inside the resize pass leaves the
        # auto-width columns sized by their labels only
        self.call_after_refresh(self._rebuild)

    def visible_columns(self) -> list[Column]:
        hidden = COMPACT_HIDDEN if self.compact else ()
        return [c for c in COLUMNS if c.key not in hidden]

    # ------------------------------------------------------------------ actions
    def action_cycle_sort(self) -> None:
        i = COLUMN_KEYS.index(self.sort_key)
        self.sort_key = COLUMN_KEYS[(i + 1) % len(COLUMN_KEYS)]

    def action_reverse_sort(self) -> None:
        self.reverse = not self.reverse

    def action_toggle_slow(self) -> None:
        self.slow_only = not self.slow_only

    def sort_by(self, key: str) -> None:
        """Sort by ``key``; the same key twice flips the direction (like a header click)."""
        if key not in _BY_KEY:
            raise KeyError(key)
        if key == self.sort_key:
            self.reverse = not self.reverse
        else:
            self.sort_key = key

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """Fast path of DataTable's width pass for our one-line ``Text`` cells.

        The stock pass renders every cell through Rich ``measure`` (~0.3 s for 500 rows x 9
        columns on a loaded 2-core box, i.e. a third of the first-paint budget); a one-line
        ``Text`` is exactly ``cell_len`` wide. Anything else falls back to the stock pass.
        Textual is pinned (==8.2.8), and ``tests/test_widgets_render.py`` pins the widths.
        """
        rows = list(new_rows)
        columns = self.ordered_columns
        for key in rows:
            cells = self._data.get(key)
            if cells is None:
                continue
            for column in columns:
                cell = cells.get(column.key)
                if not isinstance(cell, Text) or "\n" in cell.plain:
                    super()._update_dimensions(rows)
                    return
                column.content_width = max(column.content_width, cell.cell_len)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(str(event.column_key.value))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        row = self.current_row
        if row is not None:
            self.post_message(self.RowChosen(row))
