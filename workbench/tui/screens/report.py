"""Report screen: plan E or F, preview the exact files, validate, diff, confirm, write (guarded).

Nothing is written without (1) a plan whose in-process validators all passed and (2) an explicit
"yes" in :class:`~workbench.tui.modals.ConfirmModal`. Writing goes through ``AppData.write_report``
(the same ``workbench.writer.write_plan`` the CLI uses); its refusals (``ValidationRefused``,
``UnsafePath``, missing evidence) open an error modal with the reason.
"""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Static

from widgets.report_preview import VIEWS, ReportPreview
from workbench.errors import WorkbenchError
from workbench.model import ReportPlan
from workbench.tui.host import PaletteCommand
from workbench.tui.modals import ConfirmModal
from workbench.tui.screens.base import WorkbenchScreen


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
        "transcript. w asks for confirmation and writes through the guarded writer; it is offered "
        "only when every validator passed."
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "plan('E')", "Plan E", tooltip="Plan stage E files (performance.md + logs)", id="report-plan-e"),
        Binding("f", "plan('F')", "Plan F", tooltip="Plan stage F files (perf_investigation_*.md)",
                id="report-plan-f"),
        Binding("v", "cycle_view", "View", tooltip="Rendered / raw / diff against existing files",
                id="report-view"),
        Binding("w", "write", "Write…", tooltip="Write the validated files (asks first)", id="report-write"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.plan: ReportPlan | None = None
        self.refusal: str = ""
        self.last_result: str = ""

    def compose(self) -> ComposeResult:
        yield self.header()
        yield Static(Text("e: plan stage E · f: plan stage F"), id="report-status")
        yield ReportPreview(id="preview")
        yield Static(id="report-result", classes="hidden")
        yield Footer()

    @property
    def preview(self) -> ReportPreview:
        return self.query_one(ReportPreview)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "plan":
            return self.data.plan_report is not None
        if action == "write":
            if self.data.write_report is None:
                return False
            return True if (self.plan is not None and self.plan.ok and not self.data.read_only) else None
        if action == "cycle_view":
            return True if self.plan is not None else None
        return True

    def action_plan(self, stage: str) -> None:
        if self.data.plan_report is None:
            return
        self.query_one("#report-status", Static).update(Text(f"planning stage {stage}…"))
        self.make_plan(stage)

    @work(thread=True, exclusive=True, exit_on_error=False, group="report-plan")
    def make_plan(self, stage: str) -> None:
        assert self.data.plan_report is not None
        try:
            plan = self.data.plan_report(stage)
            reader = self.data.read_existing
            existing = dict(reader(plan)) if reader else {}
        except WorkbenchError as e:
            self.app.call_from_thread(self._refused, stage, str(e))
            return
        # _planned is a coroutine function; call_from_thread awaits it (its overloads confuse mypy)
        self.app.call_from_thread(self._planned, plan, existing)  # type: ignore[arg-type]

    def _refused(self, stage: str, reason: str) -> None:
        self.plan = None
        self.refusal = reason
        self.query_one("#report-status", Static).update(Text(f"stage {stage} refused: {reason}", style="bold red"))
        self.wb.show_error(reason, f"Cannot plan stage {stage}")
        self.refresh_bindings()

    async def _planned(self, plan: ReportPlan, existing: dict[str, str | None]) -> None:
        self.plan = plan
        self.refusal = "" if plan.ok else "in-process validators failed: see the validation tab"
        writable = not self.data.read_only and self.data.write_report is not None
        await self.preview.show_plan(plan, existing, writable=writable)
        status = Text(f"stage {plan.stage}: VERDICT: {plan.verdict} · {len(plan.files)} file(s)")
        if plan.ok and self.data.read_only:
            status.append("  ·  validators pass — read-only session: preview only", style="yellow")
        elif plan.ok:
            status.append("  ·  validators pass — w to write", style="green")
        else:
            status.append(f"  ·  REFUSED: {self.refusal}", style="bold red")
        self.query_one("#report-status", Static).update(status)
        self.refresh_bindings()

    async def action_cycle_view(self) -> None:
        nxt = VIEWS[(VIEWS.index(self.preview.view) + 1) % len(VIEWS)]
        await self.preview.set_view(nxt)
        self.notify(f"preview: {nxt}")

    def action_write(self) -> None:
        plan = self.plan
        if self.data.read_only:
            self.wb.show_error(self.data.read_only, "Write refused")
            return
        if plan is None or not plan.ok or self.data.write_report is None:
            if plan is not None and not plan.ok:
                self.wb.show_error(self.refusal, "Write refused")
            return
        lines = [f"kernel dir: {plan.kernel_dir}", f"VERDICT: {plan.verdict}", ""]
        existing = self.preview.existing
        lines += [f"  {'replace' if existing.get(f.relpath) is not None else 'create '}  {f.relpath}"
                  for f in plan.files]
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
            out += [("report: plan E", "performance.md + perf log + agent logs", partial(self.action_plan, "E")),
                    ("report: plan F", "perf_investigation_*.md + agent_f.md", partial(self.action_plan, "F"))]
        if (self.plan is not None and self.plan.ok and self.data.write_report is not None
                and not self.data.read_only):
            out.append(("report: write validated files…", f"stage {self.plan.stage}", self.action_write))
        return out
