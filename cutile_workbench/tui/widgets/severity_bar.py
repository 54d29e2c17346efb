"""SeverityBar: one line showing the E geomean ratio, its CI and severity band on a scale.

Contract: fed a ``cutile_workbench.model.RatioTable`` (or None). Draws a 0.5x..2.0x log-ish scale with
the 1.05 / 1.10 / 1.50 thresholds of contract §5.1, a marker at the geomean and a bracket for
its bootstrap CI; an ``inconclusive`` table (CI straddles 1.05) says so in words, because a
marker alone would read as a verdict.

A ``scope`` (a variant tab or a filter: "variant non_persistent (3 rows)", "filtered (2 rows)")
makes the bar re-state the summary of the rows shown (``table`` is then that subset's summary) and
adds a second, dimmed line with E's own whole-table result (``whole``), so the subset's verdict is
never mistaken for E's.
"""

from __future__ import annotations

import math
from typing import ClassVar

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from cutile_workbench.model import RatioTable

#: scale bounds (ratio); ratios outside are clamped to the ends with an arrow
SCALE_LO, SCALE_HI = 0.5, 2.0
THRESHOLDS = (1.05, 1.10, 1.50)


def _band_class(ratio: float) -> str:
    if ratio <= 1.05:
        return "severitybar--done"
    if ratio <= 1.10:
        return "severitybar--mild"
    if ratio <= 1.50:
        return "severitybar--moderate"
    return "severitybar--large"


#: what a value a worker still computes shows (issue 31 item 3: never a blank or "—", which read
#: as "none"; an ellipsis alone reads as text cut short)
PENDING = "… computing"


class SeverityBar(Widget):
    """Geomean + CI + severity, rendered on a threshold scale."""

    DEFAULT_CSS = """
    SeverityBar { height: auto; width: 1fr; }
    SeverityBar > .severitybar--done { color: $success; }
    SeverityBar > .severitybar--mild { color: $warning; }
    SeverityBar > .severitybar--moderate { color: $warning; text-style: bold; }
    SeverityBar > .severitybar--large { color: $error; text-style: bold; }
    SeverityBar > .severitybar--scale { color: $text-muted; }
    SeverityBar > .severitybar--marker { color: $accent; text-style: bold; }
    SeverityBar > .severitybar--ci { color: $accent; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "severitybar--done",
        "severitybar--mild",
        "severitybar--moderate",
        "severitybar--large",
        "severitybar--scale",
        "severitybar--marker",
        "severitybar--ci",
    }

    table: reactive[RatioTable | None] = reactive(None, always_update=True)

    def __init__(self, table: RatioTable | None = None, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.set_reactive(SeverityBar.table, table)
        self.scope = ""
        self.whole: RatioTable | None = None
        self.ci_pending = False  # the subset's CI is being bootstrapped (shown "CI …")

    def set_scope(
        self, scope: str, subset: RatioTable | None, whole: RatioTable | None, *, ci_pending: bool = False
    ) -> None:
        """Show ``subset`` labelled ``scope`` above E's ``whole`` table; ``scope`` "" = the whole table."""
        self.scope = scope
        self.whole = whole
        self.ci_pending = ci_pending
        self.table = subset if scope else whole
        self.refresh(layout=True)  # one line or two

    @staticmethod
    def words(t: RatioTable | None, ci_pending: bool = False) -> str:
        if t is None:
            return "no ratio data"
        if t.geomean is None:
            return f"geomean n/a  severity {t.severity or '—'}  verdict {t.verdict}"
        ci = (
            f" CI [{t.geomean_ci[0]:.3f}, {t.geomean_ci[1]:.3f}]"
            if t.geomean_ci
            else (f" CI {PENDING}" if ci_pending else " CI —")
        )
        flag = "  INCONCLUSIVE (CI straddles 1.05)" if t.inconclusive else ""
        return f"geomean {t.geomean:.4f}x{ci}  {t.severity or '—'}  {t.verdict}{flag}"

    def summary_text(self) -> str:
        """Plain words (also used by tests and the narrow layout)."""
        if self.scope and self.table is None:  # nothing shown: say so, not a verdict of no rows
            return f"{self.scope}: no row matches (Escape clears the filter)"
        if self.scope:
            return f"{self.scope}: {self.words(self.table, self.ci_pending)}"
        return self.words(self.table, self.ci_pending)

    @staticmethod
    def _pos(ratio: float, width: int) -> int:
        lo, hi = math.log(SCALE_LO), math.log(SCALE_HI)
        r = min(max(ratio, SCALE_LO), SCALE_HI)
        return round((math.log(r) - lo) / (hi - lo) * (width - 1))

    def render(self) -> Text:
        line = self._line()
        if not self.scope:
            return line
        return Text.assemble(line, "\n", Text(f"E, all rows: {self.words(self.whole)}", style="dim"))

    def _line(self) -> Text:
        words = Text(self.summary_text())
        t = self.table
        if t is not None and t.geomean is not None:
            words.stylize(self.get_component_rich_style(_band_class(t.geomean), partial=True))
        at = words.plain.find(PENDING)
        if at >= 0:  # a value still being computed reads as such, not as part of the verdict
            words.stylize("dim", at, at + len(PENDING))
        scale_w = max(0, self.size.width - len(words) - 3)
        if scale_w < 12 or t is None or t.geomean is None:
            return words
        cells = ["─"] * scale_w
        styles: list[str] = ["severitybar--scale"] * scale_w
        for th in THRESHOLDS:
            cells[self._pos(th, scale_w)] = "┼"
        if t.geomean_ci:
            a, b = self._pos(t.geomean_ci[0], scale_w), self._pos(t.geomean_ci[1], scale_w)
            for i in range(a, b + 1):
                cells[i] = "═"
                styles[i] = "severitybar--ci"
            cells[a], cells[b] = "[", "]"
        m = self._pos(t.geomean, scale_w)
        cells[m] = "●"
        styles[m] = "severitybar--marker"
        bar = Text()
        for ch, cls in zip(cells, styles, strict=True):
            bar.append(ch, self.get_component_rich_style(cls, partial=True))
        return Text.assemble(words, "   ", bar)
