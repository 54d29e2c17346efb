"""ReportPreview: the exact files a report action would write, before anything is written.

Contract: fed a ``workbench.model.ReportPlan`` plus the current text of each target (or None
when the file does not exist yet) — the caller reads the disk, this widget never does. Shows
one tab per planned file with three views: rendered Markdown, the raw bytes, and a unified
diff against the existing file; plus a "validation" tab with the verbatim in-process validator
transcript and an ok/refused banner.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Markdown, Static, TabbedContent, TabPane

from workbench.model import ReportPlan

VIEWS = ("rendered", "raw", "diff")


def unified_diff(relpath: str, old: str | None, new: str) -> str:
    """A git-style diff of ``old`` → ``new`` ("new file" when ``old`` is None)."""
    if old is None:
        return f"new file: {relpath} ({len(new.splitlines())} lines)\n" + "".join(
            "+" + line for line in new.splitlines(keepends=True)
        )
    if old == new:
        return f"unchanged: {relpath}\n"
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{relpath}", f"b/{relpath}"
        )
    )


def _diff_text(diff: str) -> Text:
    out = Text()
    for line in diff.splitlines(keepends=True):
        style = ""
        if line.startswith("+") and not line.startswith("+++"):
            style = "green"
        elif line.startswith("-") and not line.startswith("---"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        out.append(line, style)
    return out


class ReportPreview(Vertical):
    """Tabs per planned file (rendered / raw / diff) plus the validator transcript."""

    DEFAULT_CSS = """
    ReportPreview { height: 1fr; }
    ReportPreview > .reportpreview--banner-ok { background: $success 30%; }
    ReportPreview > .reportpreview--banner-refused { background: $error 30%; }
    ReportPreview #banner { height: auto; padding: 0 1; }
    ReportPreview #banner.-ok { background: $success 30%; }
    ReportPreview #banner.-refused { background: $error 30%; }
    ReportPreview TabbedContent { height: 1fr; }
    ReportPreview .raw, ReportPreview .diff, ReportPreview .validation { height: auto; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"reportpreview--banner-ok", "reportpreview--banner-refused"}

    view: reactive[str] = reactive("rendered")

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.plan: ReportPlan | None = None
        self.existing: dict[str, str | None] = {}
        self.writable = True

    def compose(self) -> ComposeResult:
        yield Static(Text("no report planned yet: press e (stage E) or f (stage F)"), id="banner")
        yield TabbedContent(id="files")

    def diff_for(self, relpath: str) -> str:
        assert self.plan is not None
        content = next(f.content for f in self.plan.files if f.relpath == relpath)
        return unified_diff(relpath, self.existing.get(relpath), content)

    async def show_plan(self, plan: ReportPlan, existing: Mapping[str, str | None], *, writable: bool = True) -> None:
        """Show ``plan``; ``writable`` False (a read-only session) says preview only instead of "w writes"."""
        self.plan = plan
        self.existing = dict(existing)
        self.writable = writable
        banner = self.query_one("#banner", Static)
        banner.set_classes("-ok" if plan.ok else "-refused")
        if not plan.ok:
            state = "REFUSED: validators failed (see validation tab)"
        else:
            state = "validators pass: w writes" if writable else "validators pass: preview only"
        banner.update(
            Text(f"stage {plan.stage}  {plan.kernel}  VERDICT: {plan.verdict}  "
                 f"{len(plan.files)} file(s) → {plan.kernel_dir}  —  {state}")
        )
        tabs = self.query_one("#files", TabbedContent)
        await tabs.clear_panes()
        for i, f in enumerate(plan.files):
            new = self.existing.get(f.relpath) is None
            title = f"{f.relpath}{' (new)' if new else ''}"
            body: Static | Markdown
            if self.view == "rendered" and f.relpath.endswith(".md"):
                body = Markdown(f.content)
            elif self.view == "diff":
                body = Static(_diff_text(self.diff_for(f.relpath)), classes="diff")
            else:
                body = Static(Text(f.content), classes="raw")
            await tabs.add_pane(TabPane(title, body, id=f"file-{i}"))
        await tabs.add_pane(
            TabPane("validation", Static(Text(plan.validator_output or "(no validator output)"),
                                         classes="validation"), id="validation")
        )

    async def set_view(self, view: str) -> None:
        if view not in VIEWS:
            raise ValueError(view)
        self.view = view
        if self.plan is not None:
            active = self.query_one("#files", TabbedContent).active
            await self.show_plan(self.plan, self.existing, writable=self.writable)
            if active:
                self.query_one("#files", TabbedContent).active = active
