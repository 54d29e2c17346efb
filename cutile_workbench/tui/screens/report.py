"""Report screen: plan E or F, preview the exact files, validate, diff, confirm, write (guarded).

Nothing is written without (1) a plan whose in-process validators all passed and (2) an explicit
"yes" in :class:`~cutile_workbench.tui.modals.ConfirmModal`. Writing goes through ``AppData.write_report``
(the same ``cutile_workbench.artifacts.writer.write_plan`` the CLI uses); its refusals (``ValidationRefused``,
``UnsafePath``, missing evidence) open an error modal with the reason.
"""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Input, Static
from textual.worker import Worker, WorkerState

from cutile_workbench.errors import WorkbenchError
from cutile_workbench.model import ReportPlan
from cutile_workbench.tui.chrome import WorkbenchFooter
from cutile_workbench.tui.host import PaletteCommand
from cutile_workbench.tui.modals import ConfirmModal
from cutile_workbench.tui.screens.base import WorkbenchScreen
from cutile_workbench.tui.widgets.report_preview import VIEWS, ReportPreview


def describe_result(result: Any) -> str:
    written = getattr(result, "written", None)
    if written is None:
        return str(result)
    lines = [f"wrote {len(written)} file(s):", *(f"  {p}" for p in written)]
    backup = getattr(result, "backup_dir", None)
    if backup:
        lines.append(f"previous versions backed up in {backup}")
    return "\n".join(lines)


class ReportScreen(WorkbenchScreen):
    SCREEN_TITLE = "Report"
    ABOUT = (
        "Plan stage E (performance.md, sanitized perf log, agent logs) or stage F (perf_investigation_*.md, "
        "agent_f.md). The preview shows the exact bytes that would be written: rendered Markdown, raw, "
        "or a diff against the files on disk; the validation tab holds the in-process validator "
        "transcript. ↑/↓, PgUp/PgDn (Space), Home/End scroll the file on show whatever has focus (←/→ "
        "change file); / searches it (the raw text: the preview switches to raw), n jumps to the next "
        "match. w asks for confirmation and writes through the guarded writer when every validator "
        "passed; otherwise (read-only session, failed validation, nothing planned) it says why."
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "e",
            "plan('E')",
            "Plan E",
            tooltip="Plan stage E files (performance.md + logs)",
            id="report-plan-e",
        ),
        Binding(
            "f",
            "plan('F')",
            "Plan F",
            tooltip="Plan stage F files (perf_investigation_*.md)",
            id="report-plan-f",
        ),
        Binding(
            "v",
            "cycle_view",
            "View",
            tooltip="Rendered / raw / diff against existing files",
            id="report-view",
        ),
        Binding("w", "write", "Write…", tooltip="Write the validated files (asks first)", id="report-write"),
        Binding(
            "D",
            "demonstrate",
            "Demonstrate…",
            tooltip="Plan F after trying its wrapper fix in a throwaway copy of the TileGym tree (asks first; GPU)",
            id="report-demonstrate",
        ),
        Binding(
            "slash",
            "search",
            "Search",
            tooltip="Find text in the file on show (raw view)",
            id="report-search",
        ),
        Binding(
            "n",
            "next_match",
            "Next match",
            show=False,
            tooltip="The next line matching the search",
            id="report-next-match",
        ),
        Binding("escape", "close_search", "Close search", show=False, id="report-close-search"),
        # the preview scrolls from the keyboard whatever has focus (the file tabs keep ←/→)
        Binding("down,j", "scroll(1)", "Preview down", show=False, id="report-down"),
        Binding("up,k", "scroll(-1)", "Preview up", show=False, id="report-up"),
        Binding("pagedown,space", "page(1)", "Preview page down", show=False, id="report-page-down"),
        Binding("pageup", "page(-1)", "Preview page up", show=False, id="report-page-up"),
        Binding("home", "edge(0)", "Preview top", show=False, id="report-top"),
        Binding("end", "edge(1)", "Preview bottom", show=False, id="report-bottom"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.plan: ReportPlan | None = None
        self.refusal: str = ""
        self.last_result: str = ""
        self.match_line = -1  # the line of the last search hit in the pane on show
        #: counts the plans asked for: a worker's answer to an older request is dropped (issue #34:
        #: ``e f`` typed quickly showed E's plan, answered last, while the status said F)
        self.plan_request = 0
        self.planning = ""  # the stage being planned ("" = none)
        self.write_pending = False  # w typed while the plan was being built: asked once it is shown

    def compose(self) -> ComposeResult:
        yield self.header()
        yield Static(Text("e: plan stage E · f: plan stage F"), id="report-status")
        yield ReportPreview(id="preview")
        search = Input(
            placeholder="search the file on show (Enter: find, n: next, Escape: close)", id="report-search"
        )
        search.display = False
        yield search
        yield Static(id="report-result", classes="hidden")
        yield WorkbenchFooter()

    @property
    def preview(self) -> ReportPreview:
        return self.query_one(ReportPreview)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "plan":
            return self.data.plan_report is not None
        if action == "write":  # always answers: writes (after asking) or says why not
            return self.data.write_report is not None or bool(self.data.read_only)
        if action == "demonstrate":  # always answers: asks, or says what is missing
            return self.data.plan_report is not None
        if action == "cycle_view":
            return True if self.plan is not None else None
        if action == "close_search":
            return self.query_one("#report-search", Input).display
        if action == "next_match":
            return bool(self.preview.query_text)
        return True

    def action_demonstrate(self) -> None:
        """``report f --demonstrate`` with a confirmation: the explicit authorization seed F asks for."""
        why = ""
        if self.data.read_only:
            why = self.data.read_only
        elif self.data.tilegym is None:
            why = "no TileGym checkout: open the kernel with --tilegym DIR (or set TILEGYM_PATH)"
        if why:
            self.notify(why, title="Cannot demonstrate F's fix", severity="warning", markup=False, timeout=10)
            return
        lines = [
            "Copies what the run needs of the TileGym tree under <kernel>/workbench/demonstrate/,",
            "adds the reference's config to the candidate's configs function (candidate's spelling),",
            "re-runs the slow configs of the candidate on this GPU (minutes), and adds the before/after",
            "to the F reports. The real tree and the kernel dir's logs are not modified; the verdict",
            "stays FIXABLE.",
        ]
        self.app.push_screen(
            ConfirmModal("Demonstrate F's fix in a throwaway copy", lines), self._demonstrate
        )

    def _demonstrate(self, yes: bool | None) -> None:
        if yes:
            self._start_plan("F+demonstrate", "demonstrating F's fix in a throwaway copy…")

    def action_plan(self, stage: str) -> None:
        if self.data.plan_report is None:
            return
        self._start_plan(stage, f"planning stage {stage}…")

    def _start_plan(self, stage: str, status: str) -> None:
        """A new plan replaces what is shown: the old plan can no longer be written (w says it is
        being planned) and the last write's result goes (it was about the old plan)."""
        self.plan_request += 1
        self.planning = stage
        self.plan = None
        self.write_pending = False  # a w typed for the old plan is not a w for this one
        self.refusal = ""
        self.last_result = ""
        self.query_one("#report-result", Static).add_class("hidden")
        self.query_one("#report-status", Static).update(Text(status))
        self.refresh_bindings()
        self.make_plan(stage, self.plan_request)

    @work(thread=True, exclusive=True, exit_on_error=False, group="report-plan")
    def make_plan(self, stage: str, request: int) -> None:
        assert self.data.plan_report is not None
        try:
            plan = self.data.plan_report(stage)
            reader = self.data.read_existing
            existing = dict(reader(plan)) if reader else {}
        except WorkbenchError as e:
            self.app.call_from_thread(self._refused, stage, str(e), request)
            return
        # _planned is a coroutine function; call_from_thread awaits it (its overloads confuse mypy)
        self.app.call_from_thread(self._planned, plan, existing, request)  # type: ignore[arg-type]

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A plan that crashed (not a refusal) says so instead of "planning…" forever."""
        worker = event.worker
        if worker.group != "report-plan" or event.state != WorkerState.ERROR:
            return
        if worker.is_cancelled or not self.planning:  # an older request (a newer one replaced it)
            return
        error = worker.error
        self._refused(self.planning, f"{type(error).__name__}: {error}", self.plan_request)

    def _refused(self, stage: str, reason: str, request: int) -> None:
        if request != self.plan_request:  # an older request: a newer plan is on its way
            return
        self.planning = ""
        self.plan = None
        self.write_pending = False
        self.refusal = reason
        self.query_one("#report-status", Static).update(
            Text(f"stage {stage} refused: {reason}", style="bold red")
        )
        self.wb.show_error(reason, f"Cannot plan stage {stage}")
        self.refresh_bindings()

    async def _planned(self, plan: ReportPlan, existing: dict[str, str | None], request: int) -> None:
        if request != self.plan_request:  # an older request answered late: a newer plan follows
            return
        writable = not self.data.read_only and self.data.write_report is not None
        await self.preview.show_plan(plan, existing, writable=writable)
        if request != self.plan_request:  # asked again while the preview was being built
            return
        self.planning = ""
        # the plan w writes is set once the preview shows it, never before
        self.plan = plan
        self.refusal = "" if plan.ok else "in-process validators failed: see the validation tab"
        status = Text(f"stage {plan.stage}: VERDICT: {plan.verdict} · {len(plan.files)} file(s)")
        if plan.ok and self.data.read_only:
            status.append("  ·  validators pass — read-only session: preview only", style="yellow")
        elif plan.ok:
            status.append("  ·  validators pass — w to write", style="green")
        else:
            status.append(f"  ·  REFUSED: {self.refusal}", style="bold red")
        self.query_one("#report-status", Static).update(status)
        self.refresh_bindings()
        if self.write_pending:
            self.write_pending = False
            self.action_write()  # the w typed while this plan was built (it still asks first)

    async def action_cycle_view(self) -> None:
        nxt = VIEWS[(VIEWS.index(self.preview.view) + 1) % len(VIEWS)]
        await self.preview.set_view(nxt)
        self.notify(f"preview: {nxt}")

    # ------------------------------------------------------------------ scrolling and search
    def action_scroll(self, lines: int) -> None:
        scroller = self.preview.active_scroller()
        if scroller is not None:
            scroller.scroll_relative(y=lines, animate=False)

    def action_page(self, direction: int) -> None:
        scroller = self.preview.active_scroller()
        if scroller is not None:
            scroller.scroll_relative(y=direction * max(1, scroller.size.height - 1), animate=False)

    def action_edge(self, bottom: int) -> None:
        scroller = self.preview.active_scroller()
        if scroller is not None:
            scroller.scroll_to(y=scroller.max_scroll_y if bottom else 0, animate=False)

    async def action_search(self) -> None:
        if self.plan is None:
            self.notify("nothing to search yet: e plans stage E, f stage F", severity="warning")
            return
        if self.preview.view == "rendered":  # rendered Markdown has no line numbers: search the bytes
            await self.preview.set_view("raw")
            self.notify("search runs on the raw text: preview switched to raw (v cycles views)")
        box = self.query_one("#report-search", Input)
        box.display = True
        self.set_focus(box)

    def action_close_search(self) -> None:
        self.query_one("#report-search", Input).display = False
        self.preview.focus()

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "report-search":
            return
        event.input.display = False
        self.match_line = -1
        await self._find(event.value)

    async def action_next_match(self) -> None:
        if not self.preview.query_text:
            self.notify("no search yet: / searches", severity="warning")
            return
        await self._find(self.preview.query_text)

    async def _find(self, query: str) -> None:
        found = await self.preview.find(query, self.match_line)
        if found is None:
            self.match_line = -1
            self.notify(f"no match for {query!r} in this file", severity="warning", markup=False)
            return
        self.match_line, count = found
        self.notify(
            f"{query!r}: line {self.match_line + 1} · {count} matching line(s) · n next", markup=False
        )

    def action_write(self) -> None:
        plan = self.plan
        if self.data.read_only:
            self.wb.show_error(self.data.read_only, "Write refused")
            return
        if plan is None and self.planning:
            # the key is kept in order: the write is asked (confirmation first) once this plan is shown
            self.write_pending = True
            self.notify(f"stage {self.planning} is still being planned: w asks to write once it is shown")
            return
        if plan is None:
            self.notify("nothing planned yet: e plans stage E, f stage F; w then writes", severity="warning")
            return
        if not plan.ok or self.data.write_report is None:
            if not plan.ok:
                self.wb.show_error(self.refusal, "Write refused")
            return
        lines = [f"kernel dir: {plan.kernel_dir}", f"VERDICT: {plan.verdict}", ""]
        existing = self.preview.existing
        lines += [
            f"  {'replace' if existing.get(f.relpath) is not None else 'create '}  {f.relpath}"
            for f in plan.files
        ]
        lines += ["", "Replaced files are backed up first. Write these files?"]
        self.app.push_screen(ConfirmModal(f"Write stage {plan.stage} report", lines), self._confirmed)

    def _confirmed(self, yes: bool | None) -> None:
        if yes and self.plan is not None:
            self.do_write(self.plan)
        else:
            self.notify("nothing written")

    @work(thread=True, exclusive=True, exit_on_error=False, group="report-write")
    def do_write(self, plan: ReportPlan) -> None:
        assert self.data.write_report is not None
        try:
            result = self.data.write_report(plan)
        except WorkbenchError as e:
            self.app.call_from_thread(self.wb.show_error, str(e), e.title)
            return
        self.app.call_from_thread(self._written, plan, describe_result(result))

    def _written(self, plan: ReportPlan, summary: str) -> None:
        self.last_result = summary
        box = self.query_one("#report-result", Static)
        box.remove_class("hidden")
        box.update(Text(summary + "\n\nvalidator output:\n" + plan.validator_output))
        self.notify(summary.splitlines()[0])

    def palette_commands(self) -> list[PaletteCommand]:
        out: list[PaletteCommand] = []
        if self.data.plan_report is not None:
            out += [
                ("report: plan E", "performance.md + perf log + agent logs", partial(self.action_plan, "E")),
                ("report: plan F", "perf_investigation_*.md + agent_f.md", partial(self.action_plan, "F")),
            ]
        # offered when w answers: writes after asking, or (a read-only session) says why it cannot
        if (
            self.plan is not None
            and self.plan.ok
            and (self.data.write_report is not None or self.data.read_only)
        ):
            out.append(("report: write validated files…", f"stage {self.plan.stage}", self.action_write))
        if self.plan is not None:
            out.append(
                ("report: next view", "Rendered / raw / diff against existing files", self.action_cycle_view)
            )
            out.append(("report: search…", "Find text in the file on show (raw view)", self.action_search))
        return out
