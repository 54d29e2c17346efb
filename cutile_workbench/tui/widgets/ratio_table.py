"""RatioTable: the E table as an interactive DataTable (sort, filter, slow-only, variant).

Contract: fed ``cutile_workbench.model.RatioRow`` objects (``set_rows``) and, optionally, each row's speed
of light (``sol``: ``(func_key, params)`` → a ``cutile_workbench.model.RowSol`` (``evidence.sol.SolRow``), shown as "SOL c/b",
the fraction of the measured peak each side reaches, "—" where there is no work model) and each row's
candidate identity mark (``marks``: params → ``own``/``REF``/``LIB``/``NONE``/``?``, the narrow "id"
column, never dropped; REF/LIB/NONE in :data:`ALARM_STYLE`; absent when identity was not computed); never reads
files. The view state (sort column, direction, filter text, slow-only, variant) lives in reactives and
the visible row list is computed by the pure function :func:`visible_rows`, so the CLI and tests
can reproduce exactly what the table shows. Enter posts :class:`RatioTable.RowChosen`.

Layout by priority (issue #20): the config column shows only the parametrize fields that vary across
the table (:func:`config_labels`); when the row does not fit the table's width, columns are dropped
by their ``drop_rank`` (:func:`fit_columns`: variant, baseline, base ms, cand ms, SOL, CI, launches;
config, ratio and verdict never), and the verdict cell is the bare word (PASS / INVESTIGATE / NA),
never cut: the NA reason and the full id go to the screen's detail line. A column is one
:class:`Column` entry in :data:`COLUMNS`: label, sort value, cell text, style, justify, drop rank.
Cell text is passed as ``rich.text.Text`` (never markup) because params strings are user data.

Work per key (issue #34, counted by ``tests/tui/test_tui_ratio_work.py``): each row's texts, widths,
cells and filter haystack are built once per data (``set_rows`` starts again); while the same
columns fit, a sort or reverse reorders the rows in the table with ``DataTable.sort`` and a filter,
slow-only or variant tab clears the rows and adds the shown ones, labels and widths set on the
columns in place; only another set of columns (a resize, new data) builds columns and rows again.
Each path shows exactly what that full build shows. Textual's public API only (``DataTable``'s
methods and its ``Column`` records; ``tests/tui/test_tui_public_textual.py`` scans for the rest).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.coordinate import Coordinate
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from cutile_workbench.model import RatioRow, RowSol, config_labels, natural_key

SLOW_THRESHOLD = 1.05  # contract §5.1: a row above this is flagged INVESTIGATE


@dataclass(frozen=True)
class CellContext:
    """What a cell may need beyond its row: the row's speed of light and its config label."""

    sol: RowSol | None
    config_label: str
    mark: str = ""  # the row's candidate identity mark (issue 18), "" when not computed


@dataclass(frozen=True)
class Column:
    """One column: label, sort value, cell text (and style) and its place in the drop order.

    ``drop_rank`` None = never dropped (config, ratio, verdict); otherwise, when the row does not
    fit the terminal, columns go in increasing ``drop_rank`` (1 first). Adding a column (e.g. a
    noise floor) is one entry in :data:`COLUMNS` with a rank.
    """

    key: str
    label: str
    sort_value: Callable[[RatioRow], Any]
    text: Callable[[RatioRow, CellContext], str]
    drop_rank: int | None = None
    justify: str = "left"  # "left" | "right"
    style: Callable[[RatioRow, str], str] = lambda row, text: ""


def _launches(row: RatioRow) -> str:
    c = "?" if row.candidate_launches is None else str(row.candidate_launches)
    b = "?" if row.baseline_launches is None else str(row.baseline_launches)
    return f"{c}/{b}"


@lru_cache(maxsize=8192)  # a pure function of the string; the table sorts by it on every key
def config_sort_key(params: str) -> tuple[tuple[int, int | str], ...]:
    """Natural order of a params string: shape fields compare as numbers (4096 before 16384)."""
    return natural_key(params)


#: the style of every alarm (INVESTIGATE, REF/LIB/NONE, extra launches; the screens' identity lines):
#: a light red that a 16-colour terminal gets as bright red (5.3:1 on black), where Textual's "red"
#: (#f4005f) comes out magenta (2.2:1, issue #34); 256 colours get 203
ALARM_STYLE = "bold #ff5f5f"
VERDICT_STYLE = {"PASS": "green", "INVESTIGATE": ALARM_STYLE, "NA": "yellow"}
#: identity marks that mean "this row does not measure the candidate" (cutile_workbench.evidence.candidate_identity)
ALARM_MARKS = frozenset({"REF", "LIB", "NONE"})


def _extra_launches(row: RatioRow) -> bool:
    """More launches per call than the baseline: the classic wrapper bug."""
    return (
        row.candidate_launches is not None
        and row.baseline_launches is not None
        and row.candidate_launches > row.baseline_launches
    )


def _ci(row: RatioRow) -> str:
    return "—" if row.ci_low is None or row.ci_high is None else f"{row.ci_low:.3f}–{row.ci_high:.3f}"


def ratio_text(row: RatioRow) -> str:
    if row.ratio is None:
        return "NA"
    if row.noise_floor is not None:  # the row's run-to-run A/A spread (issue 18 §4)
        return f"{row.ratio:.3f}x ±{row.noise_floor:.1%}"
    return f"{row.ratio:.3f}x"


#: every column, in display order; ``drop_rank`` is the order in which a narrow terminal drops them:
#: variant (the tabs say it), baseline backend, base ms, cand ms, SOL, CI, launches — config
#: (its varying fields), ratio and verdict are never dropped
COLUMNS: tuple[Column, ...] = (
    Column("config", "config", lambda r: config_sort_key(r.params), lambda r, c: c.config_label),
    Column("variant", "variant", lambda r: r.variant or "", lambda r, c: r.variant or "", drop_rank=1),
    # "triton_tileir (plain Triton)" (issue 18 §5)
    Column(
        "baseline",
        "baseline",
        lambda r: r.baseline_backend or "",
        lambda r, c: r.baseline_label or r.baseline_backend or "—",
        drop_rank=2,
    ),
    Column(
        "base_ms",
        "base ms",
        lambda r: r.baseline_ms,
        lambda r, c: _fmt_ms(r.baseline_ms),
        drop_rank=3,
        justify="right",
    ),
    Column(
        "cand_ms",
        "cand ms",
        lambda r: r.candidate_ms,
        lambda r, c: _fmt_ms(r.candidate_ms),
        drop_rank=4,
        justify="right",
    ),
    Column(
        "ratio",
        "ratio",
        lambda r: r.ratio,
        lambda r, c: ratio_text(r),
        justify="right",
        style=lambda r, t: VERDICT_STYLE[r.row_verdict] if r.row_verdict != "PASS" else "",
    ),
    Column("ci", "CI", lambda r: r.ci_low, lambda r, c: _ci(r), drop_rank=6),
    Column(
        "launches",
        "launch c/b",
        lambda r: (r.candidate_launches or 0) - (r.baseline_launches or 0),
        lambda r, c: _launches(r),
        drop_rank=7,
        style=lambda r, t: ALARM_STYLE if _extra_launches(r) else "",
    ),
    # sorted by the candidate's fraction (visible_rows' ``sol``)
    Column(
        "sol",
        "SOL c/b",
        lambda r: None,
        lambda r, c: sol_text(c.sol),
        drop_rank=5,
        justify="right",
        style=lambda r, t: "dim" if t == NO_SOL else "",
    ),
    Column(
        "verdict",
        "verdict",
        lambda r: r.row_verdict,
        lambda r, c: r.row_verdict,
        style=lambda r, t: VERDICT_STYLE[r.row_verdict],
    ),
    # candidate identity mark (issue 18), never dropped; sorted by ``marks`` (visible_rows)
    Column(
        "id",
        "id",
        lambda r: None,
        lambda r, c: c.mark,
        style=lambda r, t: ALARM_STYLE if t in ALARM_MARKS else "yellow" if t == "?" else "dim",
    ),
)

NO_SOL = "—"
#: a cell whose value a worker still computes (issue 31 item 3: never "—" or a blank, which read as "none")
PENDING_CELL = "pending"
COLUMN_KEYS: tuple[str, ...] = tuple(c.key for c in COLUMNS)
_BY_KEY = {c.key: c for c in COLUMNS}
#: cells are padded by one space on each side (DataTable's ``cell_padding``)
CELL_PADDING = 1


def fit_columns(widths: Mapping[str, int], available: int, columns: Sequence[Column] = COLUMNS) -> list[str]:
    """Keys of the columns that fit ``available`` cells (each ``width`` + padding), display order kept:
    columns are dropped by ``drop_rank`` (lowest first) until the rest fit; unranked ones stay."""
    by_key = {c.key: c for c in columns}
    keep = [k for k in widths if k in by_key]

    def total(keys: list[str]) -> int:
        return sum(widths[k] + 2 * CELL_PADDING for k in keys)

    droppable = sorted(
        (k for k in keep if by_key[k].drop_rank is not None), key=lambda k: by_key[k].drop_rank or 0
    )
    for key in droppable:
        if total(keep) <= available:
            break
        keep.remove(key)
    return keep


def row_key(row: RatioRow) -> str:
    return f"{row.func_key}\x1f{row.params}\x1f{row.variant or ''}"


def is_slow(row: RatioRow) -> bool:
    """Slow = above the E threshold, or NA (a missing row is never 'fine')."""
    return row.ratio is None or row.ratio > SLOW_THRESHOLD


def _haystack(row: RatioRow, marks: Mapping[str, str] | None) -> str:
    """What the filter matches: every column the table can show (config, variant, baseline, the
    medians and ratio as shown, launches, verdict, id mark) plus the test id and the NA reason."""
    nums = (row.baseline_ms, row.candidate_ms)
    parts = [
        row.params,
        row.func_key,
        row.variant or "",
        row.baseline_backend or "",
        *(f"{v:.4f}" for v in nums if v is not None),
        ratio_text(row),
        f"{row.candidate_launches}/{row.baseline_launches}",
        row.row_verdict,
        (marks or {}).get(row.params, ""),
        row.reason or "",
    ]
    return "\n".join(parts).lower()


def visible_rows(
    rows: Sequence[RatioRow],
    *,
    filter_text: str = "",
    slow_only: bool = False,
    variant: str | None = None,
    sort_key: str = "config",
    reverse: bool = False,
    sol: Mapping[tuple[str, str], RowSol] | None = None,
    marks: Mapping[str, str] | None = None,
    haystack: Callable[[RatioRow], str] | None = None,
) -> list[RatioRow]:
    """The rows the table shows, in order. ``None`` sort values always sort last. ``haystack``:
    what the filter matches for a row (default: :func:`_haystack`; the table passes a cached one)."""
    needle = filter_text.strip().lower()
    hay = haystack or (lambda r: _haystack(r, marks))
    out = [
        r
        for r in rows
        if (variant is None or r.variant == variant)
        and (not slow_only or is_slow(r))
        and (not needle or needle in hay(r))
    ]
    sols = sol or {}

    def by_sol(r: RatioRow) -> Any:
        return _candidate_sol(sols.get((r.func_key, r.params)))

    def by_mark(r: RatioRow) -> Any:
        return (marks or {}).get(r.params)

    get: Callable[[RatioRow], Any] = {"sol": by_sol, "id": by_mark}.get(
        sort_key, _BY_KEY[sort_key].sort_value
    )
    keyed = [(get(r), r) for r in out]  # each row's sort value once
    present = [(v, r) for v, r in keyed if v is not None]
    absent = [r for v, r in keyed if v is None]
    present.sort(key=_first, reverse=reverse)
    return [r for _, r in present] + absent


def _first(pair: tuple[Any, RatioRow]) -> Any:
    return pair[0]


def _fmt_ms(v: float | None) -> str:
    return "—" if v is None else f"{v:.4f}"


def _candidate_sol(sr: RowSol | None) -> float | None:
    return sr.candidate.sol if sr is not None and sr.candidate is not None else None


def sol_text(sr: RowSol | None) -> str:
    """``"44%/90%"``: each side's fraction of the measured peak (roofline limiter); "—" without a model."""
    if sr is None:
        return NO_SOL
    sides = [s.sol if s is not None else None for s in (sr.candidate, sr.baseline)]
    if all(v is None for v in sides):
        return NO_SOL
    return "/".join(NO_SOL if v is None else f"{v * 100:.0f}%" for v in sides)


def _row_texts(row: RatioRow, ctx: CellContext, columns: Sequence[Column]) -> list[str]:
    """Display strings of one row, one per column of ``columns``."""
    return [col.text(row, ctx) for col in columns]


class Cell(Text):
    """A cell's text: the ``rich.text.Text`` it is, with two differences that only the table sees.

    - Hashed by identity: a sort looks each row's place up by its config cell (one object per row
      and data, held by the table), without a Python call per row.
    - No ``__rich_measure__``: the table's columns have fixed widths, measured here from the cached
      display strings (:meth:`RatioTable._measure`), so DataTable's content measure of each new
      cell decides nothing, and it cost a console-size query (3 ``get_terminal_size`` calls) per
      cell: ~10,000 for 1,000 rows, on the UI thread between the first frame and the first key
      (issue #34). ``textual.render.measure`` takes a renderable without one as its default width.
    """

    __hash__ = object.__hash__
    __rich_measure__ = None  # type: ignore[assignment]


def _cells_from(row: RatioRow, strings: list[str], columns: Sequence[Column]) -> list[Text]:
    return [
        Cell(text, style=col.style(row, text), justify="right" if col.justify == "right" else "left")
        for col, text in zip(columns, strings, strict=True)
    ]


def row_cells(
    row: RatioRow, sol: RowSol | None = None, config_label: str | None = None, mark: str = ""
) -> list[Text]:
    """Display cells of one row, every column (styled by verdict; never parsed as markup)."""
    ctx = CellContext(sol, row.params if config_label is None else config_label, mark)
    return _cells_from(row, _row_texts(row, ctx, COLUMNS), COLUMNS)


def _width(text: str) -> int:
    return len(text) if text.isascii() else cell_len(text)


class RatioTable(DataTable[Text]):
    """One row per config; view state in reactives; Enter → :class:`RowChosen`."""

    DEFAULT_CSS = """
    RatioTable { height: 1fr; }
    RatioTable > .ratiotable--sorted { text-style: bold underline; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = DataTable.COMPONENT_CLASSES | {"ratiotable--sorted"}

    BINDINGS: ClassVar[list[BindingType]] = [
        # k9s / lazygit / htop moves beside DataTable's arrows, PgUp/PgDn and Home/End
        Binding("j", "cursor_down", "Down", show=False, id="ratios-down"),
        Binding("k", "cursor_up", "Up", show=False, id="ratios-up"),
        Binding("g,home", "first_row", "First row", show=False, id="ratios-first"),
        Binding("G,end", "last_row", "Last row", show=False, id="ratios-last"),
        Binding("s", "cycle_sort", "Sort", tooltip="Sort by the next column", id="ratios-sort"),
        Binding("r", "reverse_sort", "Reverse", tooltip="Reverse the sort order", id="ratios-reverse"),
        Binding(
            "o",
            "toggle_slow",
            "Slow only",
            tooltip="Show only rows with ratio > 1.05 or NA",
            id="ratios-slow",
        ),
    ]

    sort_key: reactive[str] = reactive("config", init=False)
    reverse: reactive[bool] = reactive(False, init=False)
    filter_text: reactive[str] = reactive("", init=False)
    slow_only: reactive[bool] = reactive(False, init=False)
    variant: reactive[str | None] = reactive(None, init=False)

    class RowChosen(Message):
        """Enter on a row: the screen opens its timeline (or offers a live re-run)."""

        def __init__(self, row: RatioRow) -> None:
            super().__init__()
            self.row = row

    class ViewChanged(Message):
        """Posted after every rebuild (sort, filter, slow-only, variant or new rows)."""

    def __init__(
        self,
        rows: Sequence[RatioRow] = (),
        *,
        sol: Mapping[tuple[str, str], RowSol] | None = None,
        marks: Mapping[str, str] | None = None,
        on_current: Callable[[], None] | None = None,
        pending: frozenset[str] = frozenset(),
        **kwargs: Any,
    ) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        #: the columns whose values are still being computed: their cells read PENDING_CELL
        self._pending = frozenset(pending) & frozenset(COLUMN_KEYS)
        #: called at once whenever the row under the cursor may have changed (a move, a rebuild):
        #: the RowHighlighted message follows later, after keys already queued have run
        self._on_current = on_current
        self._all: list[RatioRow] = list(rows)
        self._sol: dict[tuple[str, str], RowSol] = dict(sol or {})
        self._marks: dict[str, str] = dict(marks or {})
        self._shown: list[RatioRow] = []
        self._ready = False  # reactives set before mount must not touch the (absent) app
        self._widths: dict[str, int] = {}
        self._dropped: list[str] = []  # columns left out at this width (fit_columns)
        self._all_widths: dict[str, int] = {}  # every column's width at the last rebuild
        #: a rebuild's own cursor moves (clear, add_row, move_cursor) are not the user's: the
        #: ``on_current`` callback runs once when the rebuild is done, not once per row added
        self._quiet = False
        # Per row (by row_key), built once for the table's data (set_rows starts them again): the
        # display strings and their cell widths (every column; the widths of a view are their
        # maxima), the Text cells (built when the row is first added to the DataTable) and what
        # the filter matches. A sort, filter, slow-only or variant tab reuses them (issue #34).
        self._texts: dict[str, list[str]] = {}
        self._text_widths: dict[str, tuple[int, ...]] = {}
        self._cells: dict[str, list[Text]] = {}
        self._haystacks: dict[str, str] = {}
        self._config_labels: dict[str, str] | None = None
        #: the rows of the last measure and their widest text per column (a sort reuses them)
        self._widest: tuple[tuple[object, ...], list[int]] | None = None
        self._keys: dict[int, str] | None = None  # _key_of
        #: the view (filter, slow only, variant, data) whose rows the table holds: a sort of the
        #: same view shows the same rows, so nothing is compared row by row to know it
        self._table_view: tuple[object, ...] | None = None
        self._generation = 0  # set_rows: new data

    # ------------------------------------------------------------------ data
    def set_rows(
        self,
        rows: Sequence[RatioRow],
        sol: Mapping[tuple[str, str], RowSol] | None = None,
        marks: Mapping[str, str] | None = None,
    ) -> None:
        self._all = list(rows)
        if sol is not None:
            self._sol = dict(sol)
        if marks is not None:
            self._marks = dict(marks)
        self._forget_rows()
        self._rebuild(fresh=True)

    def _forget_rows(self) -> None:
        """New data: every cached text, width, cell and haystack is stale."""
        self._texts.clear()
        self._text_widths.clear()
        self._cells.clear()
        self._haystacks.clear()
        self._config_labels = None
        self._widest = None
        self._keys = None
        self._generation += 1

    @property
    def shown_rows(self) -> list[RatioRow]:
        return list(self._shown)

    @property
    def current_row(self) -> RatioRow | None:
        if not self._shown or self.cursor_row < 0 or self.cursor_row >= len(self._shown):
            return None
        return self._shown[self.cursor_row]

    def move_to_row(self, row: RatioRow) -> bool:
        """Put the cursor on ``row`` (same func_key and params) if it is shown; False when it is not."""
        for i, shown in enumerate(self._shown):
            if (shown.func_key, shown.params) == (row.func_key, row.params):
                self.move_cursor(row=i, animate=False)
                return True
        return False

    def on_mount(self) -> None:
        self._ready = True
        self._rebuild()

    def _label(self, col: Column) -> Text:
        if col.key != self.sort_key:
            return Text(col.label)
        return Text(col.label + (" ▼" if self.reverse else " ▲"), style="bold")

    def _texts_of(self, key: str, row: RatioRow) -> list[str]:
        """The row's display strings, every column (built once; the widths with them)."""
        texts = self._texts.get(key)
        if texts is None:
            if self._config_labels is None:
                # the config column shows the fields that vary across the whole table (stable under filters)
                self._config_labels = config_labels([r.params for r in self._all])
            ctx = CellContext(
                self._sol.get((row.func_key, row.params)),
                self._config_labels.get(row.params, row.params),
                self._marks.get(row.params, ""),
            )
            texts = _row_texts(row, ctx, COLUMNS)
            if self._pending:
                texts = [
                    PENDING_CELL if c.key in self._pending else t for c, t in zip(COLUMNS, texts, strict=True)
                ]
            self._texts[key] = texts
            self._text_widths[key] = tuple(_width(t) for t in texts)
        return texts

    def _cells_of(self, key: str, row: RatioRow) -> list[Text]:
        cells = self._cells.get(key)
        if cells is None:
            cells = self._cells[key] = _cells_from(row, self._texts_of(key, row), COLUMNS)
        return cells

    def _key_of(self) -> dict[int, str]:
        """Each row's :func:`row_key` by the row's identity (the rows of ``_all`` live as long)."""
        if self._keys is None:
            self._keys = {id(r): row_key(r) for r in self._all}
        return self._keys

    def _haystack_of(self, row: RatioRow) -> str:
        key = self._key_of()[id(row)]
        hay = self._haystacks.get(key)
        if hay is None:
            hay = self._haystacks[key] = _haystack(row, self._marks)
        return hay

    def _measure(self, keys: Sequence[str], view: tuple[object, ...]) -> dict[str, int]:
        """Every column's width for the rows ``keys`` (those of ``view``): its label's (the sort
        mark included) or its widest text, from the cached widths (no text is built or measured
        again; a sort shows the same rows as before: their widest texts are the last ones)."""
        last = self._widest
        if last is not None and last[0] == view:
            widest = last[1]
        else:
            widest = [max(col) for col in zip(*(self._text_widths[k] for k in keys), strict=True)]
            widest = widest or [0] * len(COLUMNS)
            self._widest = (view, widest)
        widths = {c.key: max(self._label(c).cell_len, widest[i]) for i, c in enumerate(COLUMNS)}
        if not self._marks and "id" not in self._pending:
            del widths["id"]  # identity not computed (e.g. synthetic data): no empty column
        return widths

    def _rebuild(self, *, order_only: bool = False, fresh: bool = False) -> None:
        """Show the view state (sort, filter, slow only, variant) at this width, by the cheapest
        path that gives what a full rebuild gives:

        - the same columns fit: a sort/reverse of the rows already in the table reorders them
          (``DataTable.sort``), anything else clears the rows and appends the shown ones; labels
          and widths are set on the columns in place;
        - another set of columns fits (or ``fresh``): columns and rows are built again.
        """
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
            sol=self._sol,
            marks=self._marks,
            haystack=self._haystack_of,
        )
        key_of = self._key_of()
        keys = [key_of[id(r)] for r in self._shown]
        view = (self.filter_text, self.slow_only, self.variant, self._generation)
        if view != self._table_view:  # other rows than the table's: some may never have been shown
            built = self._texts
            for key, r in zip(keys, self._shown, strict=True):
                if key not in built:
                    self._texts_of(key, r)
        # Fixed widths from every shown row's strings, so the columns never jump.
        all_widths = self._measure(keys, view)
        self._all_widths = all_widths
        kept = fit_columns(all_widths, self._available_width())
        cols = [c for c in COLUMNS if c.key in kept]
        self._dropped = [c.key for c in COLUMNS if c.key not in kept and c.key in all_widths]
        same_columns = bool(self.columns) and [str(k.value) for k in self.columns] == [c.key for c in cols]
        self._quiet = True
        try:
            if fresh or not same_columns:
                self._build(cols, all_widths, keys, self._target(keep, keys))
            elif not (order_only and self._reorder_in_place(cols, all_widths, keys, keep, view)):
                self._refill(cols, all_widths, keys, self._target(keep, keys))
            self._table_view = view
        finally:
            self._quiet = False
        self._current_changed()
        self.post_message(self.ViewChanged())

    def _target(self, keep: RatioRow | None, keys: list[str]) -> int:
        """Where the cursor's row ``keep`` is among ``keys`` (-1: filtered out, or none)."""
        if keep is None:
            return -1
        try:
            # a row of the data before set_rows is not in key_of: its key, as the table had it
            return keys.index(self._key_of().get(id(keep)) or row_key(keep))
        except ValueError:  # filtered out: the cursor goes to the first row
            return -1

    def _set_columns(self, cols: Sequence[Column], widths: Mapping[str, int]) -> None:
        """Labels (the sort mark) and widths of the columns already in the table, in place."""
        for col in cols:
            column = self.columns[ColumnKey(col.key)]
            column.label = self._label(col)
            column.width = column.content_width = widths[col.key]
        self._widths = {c.key: widths[c.key] for c in cols}

    def _build(self, cols: Sequence[Column], widths: Mapping[str, int], keys: list[str], target: int) -> None:
        """Columns and rows from scratch (first mount, new data, another set of columns fits)."""
        # Every row before the first frame: rows added after the frame delayed the first key
        # more than they saved the frame (issue #34).
        self._widths = {c.key: widths[c.key] for c in cols}
        with self.app.batch_update():
            self.clear(columns=True)
            for col in cols:
                self.add_column(self._label(col), key=col.key, width=widths[col.key])
            self._add_rows()
            if target >= 0:
                self.move_cursor(row=target, animate=False)

    def _refill(
        self, cols: Sequence[Column], widths: Mapping[str, int], keys: list[str], target: int
    ) -> None:
        """Other rows, same columns (a filter, slow only, a variant tab): the rows are cleared and
        the shown ones added."""
        with self.app.batch_update():
            self.clear()
            self._set_columns(cols, widths)
            self._add_rows()
            if target >= 0:
                self.move_cursor(row=target, animate=False)

    def _reorder_in_place(
        self,
        cols: Sequence[Column],
        widths: Mapping[str, int],
        keys: list[str],
        keep: RatioRow | None,
        view: tuple[object, ...],
    ) -> bool:
        """A sort or a reverse of the rows already in the table (all of them added): reorder them
        with ``DataTable.sort`` and set the labels and widths (the sort mark moved) instead of
        re-adding every row (issue #34: a rebuild per sort key was 13-71x a DataTable sort).
        False: the caller refills."""
        if view != self._table_view or self.row_count != len(keys):
            return False
        before = dict(self._widths)
        self._set_columns(cols, widths)
        # The order is visible_rows' (the one the CLI and tests reproduce): DataTable.sort is
        # given each row's place in it, found by its config cell (one Text object per row,
        # cached in _cells and held by the table; config is never dropped).
        cells = self._cells
        place = {cells[k][0]: i for i, k in enumerate(keys)}
        config = self.ordered_columns[0].key  # the table's own key object: no str hashing per row
        self.sort(config, key=place.__getitem__)
        if self._widths != before:  # the mark moved to a column its label's width decides
            self.virtual_size = Size(self._columns_width(), self.virtual_size.height)
        if keep is not None:
            kept = cells.get(self._key_of().get(id(keep)) or row_key(keep))
            at = place.get(kept[0]) if kept else None
            if at is not None:
                # the cursor's watcher scrolls it into view; move_cursor's own scroll is a second pass
                self.move_cursor(row=at, animate=False, scroll=False)
        return True

    def _available_width(self) -> int:
        """Cells the columns may use: the table's width less a vertical scrollbar's when the rows overflow."""
        width = self.size.width or self.app.size.width
        height = self.size.height or self.app.size.height
        scrollbar = self.styles.scrollbar_size_vertical if len(self._shown) + 1 > height else 0
        return max(0, width - scrollbar)

    def _add_rows(self) -> None:
        """Every shown row, through ``add_row`` (the table's cursor moves they cause are quiet)."""
        shown = [COLUMN_KEYS.index(str(c.key.value)) for c in self.ordered_columns]
        add = self.add_row
        for r in self._shown:
            key = row_key(r)
            cells = self._cells_of(key, r)
            add(*[cells[i] for i in shown], key=key)

    def _columns_width(self) -> int:
        """The scrollable width: every column with its padding (the table has no row labels)."""
        return sum(column.get_render_width(self) for column in self.columns.values())

    def watch_cursor_coordinate(self, old_coordinate: Coordinate, new_coordinate: Coordinate) -> None:
        super().watch_cursor_coordinate(old_coordinate, new_coordinate)
        if self._ready and not self._quiet:
            self._current_changed()

    def _current_changed(self) -> None:
        if self._on_current is not None:
            self._on_current()

    def watch_sort_key(self) -> None:
        self._rebuild(order_only=True)

    def watch_reverse(self) -> None:
        self._rebuild(order_only=True)

    def watch_filter_text(self) -> None:
        self._rebuild()

    def watch_slow_only(self) -> None:
        self._rebuild()

    def watch_variant(self) -> None:
        self._rebuild()

    def on_resize(self) -> None:
        # Rebuilt only when another set of columns fits (the first layout usually keeps the set
        # the mount chose from the app's width: no second rebuild before the first paint), and
        # after the resize settles: rebuilding inside the resize pass leaves the auto-width
        # columns sized by their labels only.
        if not self._ready or not self._all_widths:
            return
        kept = set(fit_columns(self._all_widths, self._available_width()))
        if [k for k in COLUMN_KEYS if k not in kept and k in self._all_widths] != self._dropped:
            self.call_after_refresh(self._rebuild)

    @property
    def compact(self) -> bool:
        """Some columns are dropped because the terminal is too narrow for all of them."""
        return bool(self._dropped)

    @property
    def dropped_columns(self) -> list[str]:
        """Keys of the columns dropped at this width (in ``drop_rank`` order of display)."""
        return list(self._dropped)

    def visible_columns(self) -> list[Column]:
        return [c for c in COLUMNS if c.key not in self._dropped and (c.key != "id" or self._marks)]

    # ------------------------------------------------------------------ actions
    def action_cycle_sort(self) -> None:
        i = COLUMN_KEYS.index(self.sort_key)
        self.sort_key = COLUMN_KEYS[(i + 1) % len(COLUMN_KEYS)]

    def action_reverse_sort(self) -> None:
        self.reverse = not self.reverse

    def action_first_row(self) -> None:
        if self.row_count:
            self.move_cursor(row=0, animate=False)

    def action_last_row(self) -> None:
        if self.row_count:
            self.move_cursor(row=self.row_count - 1, animate=False)

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

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(str(event.column_key.value))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        row = self.current_row
        if row is not None:
            self.post_message(self.RowChosen(row))
