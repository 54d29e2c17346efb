"""Ctrl+P commands: ``area: action`` titles, offered only when the action is valid right now.

:func:`available_commands` is the single source of truth (tests call it directly); the
:class:`WorkbenchCommands` provider only matches titles against the query.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

from widgets.ratio_table import COLUMNS

if TYPE_CHECKING:
    from workbench.tui.app import WorkbenchApp

Command = tuple[str, str, Callable[[], object]]


def available_commands(app: WorkbenchApp, screen: object) -> list[Command]:
    """Commands valid on ``screen`` (the screen the palette was opened from) right now."""
    from workbench.tui.screens.checks import ChecksScreen
    from workbench.tui.screens.irdiff import IRDiffScreen
    from workbench.tui.screens.ratios import RatiosScreen
    from workbench.tui.screens.report import ReportScreen
    from workbench.tui.screens.timeline import TimelineScreen

    out: list[Command] = [
        ("view: ratios", "Show the E ratio table", partial(app.switch_mode, "ratios")),
        ("view: timeline", "Show launch timelines", partial(app.switch_mode, "timeline")),
        ("view: ir diff", "Show the reference vs generated IR diff", partial(app.switch_mode, "irdiff")),
        ("view: report", "Plan and write E/F reports", partial(app.switch_mode, "report")),
        ("view: checks", "TileGym checks: precondition, wiring, -k selection, wrapper audit",
         partial(app.switch_mode, "checks")),
    ]
    if isinstance(screen, RatiosScreen):
        table = screen.table
        for col in COLUMNS:
            out.append((f"ratios: sort by {col.label}", f"Sort rows by {col.label}", partial(table.sort_by, col.key)))
        out.append(("ratios: show all rows" if table.slow_only else "ratios: show slow rows only",
                    "Toggle the slow-only filter (ratio > 1.05 or NA)", table.action_toggle_slow))
        out.append(("ratios: filter…", "Filter rows by text", screen.action_filter))
        if table.current_row is not None:
            out.append(("ratios: open timeline of selected row", table.current_row.params, screen.action_open_timeline))
            if app.data.runner is not None:
                out.append(("live: re-run selected config", table.current_row.params, screen.action_live_rerun))
    elif isinstance(screen, TimelineScreen):
        tl = screen.timeline
        out += [("timeline: fit", "Fit the longest call", tl.action_fit),
                ("timeline: zoom in", "Zoom in 2x", partial(tl.action_zoom, 2.0)),
                ("timeline: zoom out", "Zoom out 2x", partial(tl.action_zoom, 0.5))]
        if screen.live_running:
            out.append(("live: cancel run", "Stop the live run", screen.action_cancel_live))
        elif app.data.runner is not None and screen.row is not None:
            out.append(("live: run this config", screen.row.params, screen.action_live))
    elif isinstance(screen, IRDiffScreen):
        view = screen.query_one("#diff")
        if getattr(view, "hunk_count", 0):
            out += [("ir diff: next hunk", "Jump to the next changed hunk", partial(view.action_hunk, 1)),  # type: ignore[attr-defined]
                    ("ir diff: previous hunk", "Jump to the previous hunk", partial(view.action_hunk, -1))]  # type: ignore[attr-defined]
        out.append(("ir diff: fold/unfold unchanged", "Toggle folding", view.action_toggle_fold))  # type: ignore[attr-defined]
        if len(app.data.ir_pairs) > 1:
            out.append(("ir diff: next pair", "Show the next IR pair", screen.action_next_pair))
    elif isinstance(screen, ReportScreen):
        if app.data.plan_report is not None:
            out += [("report: plan E", "performance.md + perf log + agent logs", partial(screen.action_plan, "E")),
                    ("report: plan F", "perf_investigation_*.md + agent_f.md", partial(screen.action_plan, "F"))]
        if (screen.plan is not None and screen.plan.ok and app.data.write_report is not None
                and not app.data.read_only):
            out.append(("report: write validated files…", f"stage {screen.plan.stage}", screen.action_write))
    elif isinstance(screen, ChecksScreen):
        if screen.running:
            out.append(("checks: cancel", "Stop waiting for the running checks", screen.action_cancel))
        elif app.data.run_checks is not None:
            out.append(("checks: run TileGym checks", str(app.data.tilegym or "the TileGym checkout"),
                        screen.action_run))
    out.append(("app: help", "Keys of this screen", app.action_help))
    out.append(("app: quit", "Quit cutile-workbench", app.exit))
    return out


class WorkbenchCommands(Provider):
    async def discover(self) -> Hits:
        for title, help_text, cb in available_commands(self.app, self.screen):  # type: ignore[arg-type]
            yield DiscoveryHit(title, cb, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, cb in available_commands(self.app, self.screen):  # type: ignore[arg-type]
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), cb, help=help_text)
