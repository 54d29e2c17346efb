"""Rendered output of the line-API widgets, read back as text from a running app (synthetic data)."""

from __future__ import annotations

import tui_synthetic as syn
from pilot_wait import drain
from textual.app import App, ComposeResult

from cutile_workbench.model import CallCapture, Launch, LaunchSet
from cutile_workbench.tui.widgets.ir_diff_view import DiffLine, IRDiffView
from cutile_workbench.tui.widgets.launch_timeline import GUTTER, LaunchTimeline
from cutile_workbench.tui.widgets.severity_bar import SeverityBar


def _line(widget: object, y: int) -> str:
    return "".join(seg.text for seg in widget.render_line(y))  # type: ignore[attr-defined]


class _Host(App[None]):
    def __init__(self, widget: object) -> None:
        super().__init__()
        self.widget = widget

    def compose(self) -> ComposeResult:
        yield self.widget  # type: ignore[misc]


async def test_timeline_kinds_have_distinct_glyphs_and_positions() -> None:
    call = CallCapture(
        0,
        "cutile",
        0,
        100_000,
        (
            Launch("memset", "fill", 0, 10_000, 1),
            Launch("kernel", "add", 20_000, 40_000, 2),
            Launch("memcpy", "copy", 50_000, 60_000, 3),
        ),
    )
    tl = LaunchTimeline()
    async with _Host(tl).run_test(size=(16 + 100, 5)) as pilot:
        tl.set_sets(LaunchSet("n", "cutile", "p", [call]), None)
        tl.action_fit()
        tl.ns_per_cell = 1000.0  # 1 us per cell: bars at exact cells
        await drain(pilot)  # the pending refresh made: lines rendered at the widget's size
        lane = _line(tl, 1)[GUTTER:]
        assert lane[0:10] == "▒" * 10  # memset
        assert lane[10:20] == "─" * 10  # no launch: the host call's span (issue #20)
        assert lane[20:40] == "█" * 20  # kernel
        assert lane[50:60] == "▓" * 10  # memcpy
        assert _line(tl, 0).startswith("t0=call start   |0µs")  # origin and unit stated (issue #20)


async def test_timeline_100k_launches_render_every_line() -> None:
    sets = syn.many_launches("big", 100_000, calls=20)
    tl = LaunchTimeline()
    async with _Host(tl).run_test(size=(160, 48)) as pilot:
        tl.set_sets(sets[0], sets[1])
        await drain(pilot)  # the pending refresh made: lines rendered at the widget's size
        assert tl.launch_count == 100_000 - 100_000 % 40
        lines = [_line(tl, y) for y in range(48)]
        assert all(len(line) == 160 for line in lines)
        assert sum(line.count("█") for line in lines[1:]) > 1000


async def test_ir_diff_view_renders_both_sides_and_fold_row() -> None:
    rows = [DiffLine("equal", i, f"  %v{i} = addf", i, f"  %v{i} = addf") for i in range(1, 30)]
    rows.append(DiffLine("replace", 30, "latency = 10", 30, "latency = 3", ((10, 12),), ((10, 11),)))
    view = IRDiffView()
    async with _Host(view).run_test(size=(100, 20)) as pilot:
        view.set_rows(rows)
        await drain(pilot)  # the pending refresh made: lines rendered at the widget's size
        texts = [_line(view, y) for y in range(len(view.rows))]
        assert any("⋯ 26 unchanged lines" in t for t in texts)
        last = texts[-1]
        assert "latency = 10" in last and "latency = 3" in last and "│" in last
        assert view.jump_to(left_line=5) and not view.folded  # line 5 was folded: unfolded


async def test_severity_bar_words() -> None:
    table = syn.pinned_table()
    bar = SeverityBar(table)
    async with _Host(bar).run_test(size=(120, 3)) as pilot:
        await drain(pilot)  # the pending refresh made: lines rendered at the widget's size
        text = bar.summary_text()
        assert "geomean 1.4431x" in text and "MISSING_DATA" in text and "INVESTIGATE" in text
        table.inconclusive = True
        bar.table = table
        assert "INCONCLUSIVE" in bar.summary_text()
