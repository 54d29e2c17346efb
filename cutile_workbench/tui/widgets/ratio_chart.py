"""RatioChart: the ratio of every shown config as a bar with its CI whiskers, and the raw samples
of the highlighted config as two histograms (candidate over baseline) on one time axis.

Contract: fed rows (``cutile_workbench.model.RatioRow``), their labels (the Ratios table's varying config
fields) and optionally the highlighted row's raw samples (``cutile_workbench.stages.e.stats.RowSamples``); never
reads files. Pure text (Unicode blocks), so it reads the same over SSH at 80x24:

- one line per row: label, a bar from 1.0x to the ratio on a log axis shared by all rows
  (``█`` with a ``▌`` half-cell end), the CI as ``├─┤`` whiskers, the 1.05 band edge as ``┊``,
  and the ratio in numbers; NA rows say NA;
- the distribution: a ``▁▂▃▄▅▆▇█`` histogram per side over the same bins (numpy), the medians
  marked ``┃`` on an axis line that names its ends in ms.

:func:`chart_lines` and :func:`distribution_lines` are pure (tests read them directly).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from cutile_workbench.model import RatioRow, RowSamples

BAND = 1.05  # contract §5.1: above it a row is INVESTIGATE
SPARK = "▁▂▃▄▅▆▇█"


def _axis(rows: Sequence[RatioRow]) -> tuple[float, float]:
    """Log-axis ends covering 1.0, the band, every ratio and CI end, with a little room."""
    vals = [1.0, BAND]
    for r in rows:
        vals += [v for v in (r.ratio, r.ci_low, r.ci_high) if v is not None and v > 0]
    lo, hi = math.log(min(vals)), math.log(max(vals))
    pad = max(0.02, (hi - lo) * 0.05)
    return lo - pad, hi + pad


def chart_lines(rows: Sequence[RatioRow], labels: Mapping[str, str], width: int) -> list[Text]:
    """One line per row (plus an axis line): label · bar with CI whiskers and the 1.05 edge · ratio."""
    if not rows:
        return [Text("no rows to chart", style="dim")]
    label_w = min(max(len(labels.get(r.params, r.params)) for r in rows), max(8, width // 3))
    plot = max(10, width - label_w - 10)
    lo, hi = _axis(rows)

    def cell(v: float) -> float:
        return (math.log(v) - lo) / (hi - lo) * plot

    one, band = cell(1.0), cell(BAND)
    out: list[Text] = []
    for r in rows:
        label = labels.get(r.params, r.params)
        # cut on the left: the shape fields at the end tell the rows apart
        label = label if len(label) <= label_w else "…" + label[len(label) - label_w + 1 :]
        line = Text(label.ljust(label_w) + " ")
        cells = [" "] * plot
        styles = [""] * plot
        if 0 <= int(band) < plot:
            cells[int(band)], styles[int(band)] = "┊", "yellow"
        if r.ratio is None:
            line.append("".join(cells)[: plot // 2] + " NA", style="yellow")
            out.append(line)
            continue
        colour = "green" if r.ratio <= BAND else "red"
        a, b = sorted((one, cell(r.ratio)))
        for i in range(int(a), min(plot, int(b))):
            cells[i], styles[i] = "█", colour
        if b - int(b) >= 0.5 and int(b) < plot:  # half a cell more: ▌
            cells[int(b)], styles[int(b)] = "▌", colour
        if r.ci_low is not None and r.ci_high is not None:
            w0, w1 = int(cell(r.ci_low)), min(plot - 1, int(cell(r.ci_high)))
            if w1 > w0:
                for i in range(w0 + 1, w1):
                    if cells[i] == " ":
                        cells[i], styles[i] = "─", "bold"
                cells[w0], cells[w1] = "├", "┤"
                styles[w0] = styles[w1] = "bold"
            else:
                cells[w0], styles[w0] = "│", "bold"
        for ch, st in zip(cells, styles, strict=True):
            line.append(ch, style=st)
        line.append(f" {r.ratio:.3f}x", style=colour)
        out.append(line)
    axis = [" "] * plot
    ticks = []
    for v, name in ((1.0, "1.0"), (BAND, "1.05")):
        c = int(cell(v))
        if 0 <= c < plot:
            axis[c] = "┴"
            ticks.append((c, name))
    under = [" "] * plot
    last = -2
    for c, name in ticks:
        start = max(c, last + 1)
        for k, ch in enumerate(name):
            if start + k < plot:
                under[start + k] = ch
        last = start + len(name)
    legend = "├┤ 95% CI · ┊ 1.05 · log axis"
    tail = "".join(under).rstrip()
    if len(tail) + 3 + len(legend) <= plot + 8:
        tail += "   " + legend
    out.append(Text(" " * (label_w + 1) + "".join(axis), style="dim"))
    out.append(Text(" " * (label_w + 1) + tail, style="dim"))
    return out


def distribution_lines(samples: RowSamples | None, width: int, *, label: str = "") -> list[Text]:
    """Candidate over baseline: a histogram line per side on shared bins, medians marked below."""
    if samples is None or not samples.candidate or not samples.baseline:
        return [Text(f"no raw samples for {label or 'this config'}: the log holds medians only", style="dim")]
    import numpy as np  # on first use: ~0.1 s and ~15 MB that the first paint should not pay

    cand = np.asarray(samples.candidate, dtype=float)
    base = np.asarray(samples.baseline, dtype=float)
    head = 7
    plot = max(10, width - head - 1)
    edges = np.linspace(min(cand.min(), base.min()), max(cand.max(), base.max()) or 1.0, plot + 1)
    if edges[-1] <= edges[0]:
        edges = np.linspace(edges[0] * 0.99, edges[0] * 1.01, plot + 1)
    out = [
        Text(
            f"samples of {label}: n = {cand.size} cand / {base.size} base"
            if label
            else f"samples: n = {cand.size} cand / {base.size} base",
            style="bold",
        )
    ]
    for name, xs, colour in (("cand", cand, "cyan"), ("base", base, "magenta")):
        counts, _ = np.histogram(xs, bins=edges)
        top = counts.max() or 1
        bars = "".join(
            " " if c == 0 else SPARK[min(len(SPARK) - 1, int(c * len(SPARK) / (top + 1)))] for c in counts
        )
        out.append(Text.assemble((name.ljust(head), colour), (bars, colour)))
    marks = [" "] * plot
    for xs, ch in ((cand, "c"), (base, "b")):
        med = float(np.median(xs))
        i = min(plot - 1, int((med - edges[0]) / (edges[-1] - edges[0]) * plot))
        marks[i] = "┃" if marks[i] != " " else ch
    lo_ms, hi_ms = f"{edges[0]:.4g}", f"{edges[-1]:.4g} ms"
    axis = "".join(marks)
    # the axis ends in ms on the same line as the medians (c / b; ┃ where they share a cell)
    ends = list(axis)
    for k, ch in enumerate(lo_ms):
        if k < len(ends) and ends[k] == " ":
            ends[k] = ch
    for k, ch in enumerate(reversed(hi_ms)):
        i = len(ends) - 1 - k
        if i >= 0 and ends[i] == " ":
            ends[i] = ch
    out.append(Text.assemble(("median".ljust(head), "dim"), ("".join(ends), "bold")))
    return out


class RatioChart(Widget):
    """The shown rows' ratios with CI whiskers, then the highlighted row's sample distribution."""

    DEFAULT_CSS = """
    RatioChart { height: auto; max-height: 60%; padding: 0 1; border-top: solid $panel; }
    """

    rows: reactive[tuple[RatioRow, ...]] = reactive((), always_update=True, layout=True)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.labels: dict[str, str] = {}
        self.samples: RowSamples | None = None
        self.focus_label = ""

    def show(
        self,
        rows: Sequence[RatioRow],
        labels: Mapping[str, str],
        samples: RowSamples | None,
        focus_label: str,
    ) -> None:
        self.labels = dict(labels)
        self.samples = samples
        self.focus_label = focus_label
        self.rows = tuple(rows)

    def render(self) -> Text:
        width = max(20, self.size.width or 78)
        lines = chart_lines(self.rows, self.labels, width)
        lines += distribution_lines(self.samples, width, label=self.focus_label)
        return Text("\n").join(lines)
