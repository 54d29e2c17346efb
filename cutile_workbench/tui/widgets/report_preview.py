"""ReportPreview: the exact files a report action would write, before anything is written.

Contract: fed a ``cutile_workbench.model.ReportPlan`` plus the current text of each target (or None
when the file does not exist yet) — the caller reads the disk, this widget never does. Shows
one tab per planned file with three views: rendered Markdown, the raw bytes, and a unified
diff against the existing file; plus a "validation" tab with the verbatim in-process validator
transcript and an ok/refused banner.

Each pane scrolls (:meth:`ReportPreview.active_scroller`: the screen drives it from the keyboard,
whatever has focus) and :meth:`ReportPreview.find` searches the active pane's text (raw bytes,
diff or validator transcript; the rendered Markdown view is searched in its raw form: the caller
switches views), highlighting matches and scrolling the next one into view. Raw and diff text
does not wrap (a line is one screen row, as in ``less -S``), so a match's line is its row.

Rebuilds are serialised (issue #34): :meth:`show_plan`, :meth:`set_view` and :meth:`find` each
rebuild the tabs under one lock, so keys typed quickly (``v v v``, a plan arriving during ``v``)
rebuild one after another, each on the latest plan and view, never two at once (DuplicateIds).
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Mapping
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Label, Markdown, Static, TabbedContent, TabPane
from textual.widgets.markdown import MarkdownBlock, MarkdownFence

from cutile_workbench.model import ReportPlan

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


class _Fence(MarkdownFence):
    """A code block whose label has no id: Textual gives the label of every fence the same id
    ("code-content"), and a report has several, so the screen's ids were not unique."""

    def set_content(self, content: Content) -> None:
        # Textual's own stores the content in a private field nothing reads, then looks the label
        # up by its id: here the labels (none before compose) are updated, public API only
        for label in self.query(Label):
            label.update(content)

    def compose(self) -> ComposeResult:
        # the highlight MarkdownFence computes (its public classmethod, on its public code/lexer)
        code = self.highlight(
            self.code, self.lexer, ansi=self.app.native_ansi_color, dark=self.app.current_theme.dark
        )
        yield Label(code, classes="code-content", expand=True)


class _ReportMarkdown(Markdown):
    BLOCKS: dict[str, type[MarkdownBlock]] = {  # noqa: RUF012 (Textual's own declaration)
        **Markdown.BLOCKS,
        "fence": _Fence,
        "code_block": _Fence,
    }


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
    ReportPreview .raw, ReportPreview .diff, ReportPreview .validation { height: auto; width: auto; }
    ReportPreview .scroller { height: 1fr; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"reportpreview--banner-ok", "reportpreview--banner-refused"}

    view: reactive[str] = reactive("rendered")

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.plan: ReportPlan | None = None
        self.existing: dict[str, str | None] = {}
        self.writable = True
        self.query_text = ""  # the last search
        self._rebuilding = asyncio.Lock()  # one rebuild of the tabs at a time
        #: (plan, view) the tabs show once the last rebuild finished (None before the first)
        self.shown: tuple[ReportPlan, str] | None = None

    @property
    def busy(self) -> bool:
        """A rebuild of the tabs is running (or waiting for the one before it)."""
        return self._rebuilding.locked()

    def compose(self) -> ComposeResult:
        yield Static(Text("no report planned yet: press e (stage E) or f (stage F)"), id="banner")
        yield TabbedContent(id="files")

    def diff_for(self, relpath: str) -> str:
        assert self.plan is not None
        content = next(f.content for f in self.plan.files if f.relpath == relpath)
        return unified_diff(relpath, self.existing.get(relpath), content)

    async def show_plan(
        self, plan: ReportPlan, existing: Mapping[str, str | None], *, writable: bool = True
    ) -> None:
        """Show ``plan``; ``writable`` False (a read-only session) says preview only instead of "w writes"."""
        async with self._rebuilding:
            self.plan = plan
            self.existing = dict(existing)
            self.writable = writable
            await self._rebuild(None)

    async def _rebuild(self, keep_active: str | None) -> None:
        """The banner and the tabs of ``self.plan`` in ``self.view`` (the caller holds the lock)."""
        plan = self.plan
        if plan is None:
            return
        writable = self.writable
        banner = self.query_one("#banner", Static)
        banner.set_classes("-ok" if plan.ok else "-refused")
        if not plan.ok:
            state = "REFUSED: validators failed (see validation tab)"
        else:
            state = "validators pass: w writes" if writable else "validators pass: preview only"
        banner.update(
            Text(
                f"stage {plan.stage}  {plan.kernel}  VERDICT: {plan.verdict}  "
                f"{len(plan.files)} file(s) → {plan.kernel_dir}  —  {state}"
            )
        )
        tabs = self.query_one("#files", TabbedContent)
        await tabs.clear_panes()
        for i, f in enumerate(plan.files):
            new = self.existing.get(f.relpath) is None
            title = f"{f.relpath}{' (new)' if new else ''}"
            body: Static | Markdown
            if self.view == "rendered" and f.relpath.endswith(".md"):
                body = _ReportMarkdown(f.content)
            elif self.view == "diff":
                body = Static(self._styled(_diff_text(self.diff_for(f.relpath))), classes="diff")
            else:
                body = Static(self._styled(Text(f.content)), classes="raw")
            await tabs.add_pane(TabPane(title, VerticalScroll(body, classes="scroller"), id=f"file-{i}"))
        validation = Static(
            self._styled(Text(plan.validator_output or "(no validator output)")), classes="validation"
        )
        await tabs.add_pane(
            TabPane("validation", VerticalScroll(validation, classes="scroller"), id="validation")
        )
        if keep_active in {f"file-{i}" for i in range(len(plan.files))} | {"validation"}:
            tabs.active = keep_active
        self.shown = (plan, self.view)

    def _styled(self, text: Text) -> Text:
        text.no_wrap = True
        text.overflow = "ignore"
        if self.query_text:
            text.highlight_words([self.query_text], style="black on yellow", case_sensitive=False)
        return text

    def active_scroller(self) -> VerticalScroll | None:
        """The scrolling container of the pane on show (None before a plan)."""
        tabs = self.query_one("#files", TabbedContent)
        pane = tabs.get_pane(tabs.active) if tabs.active else None
        if pane is None:
            return None
        return next(iter(pane.query(VerticalScroll)), None)

    def active_text(self) -> str:
        """The text of the pane on show, as searched: the file's bytes, its diff, or the transcript."""
        if self.plan is None:
            return ""
        active = self.query_one("#files", TabbedContent).active
        if active == "validation":
            return self.plan.validator_output or ""
        if not active.startswith("file-"):
            return ""
        f = self.plan.files[int(active.removeprefix("file-"))]
        return self.diff_for(f.relpath) if self.view == "diff" else f.content

    async def find(self, query: str, after: int = -1) -> tuple[int, int] | None:
        """Highlight ``query`` in the pane on show and scroll to its first line after ``after``
        (wrapping round): ``(line index, number of matching lines)``, None when nothing matches."""
        needle = query.lower()
        lines = self.active_text().splitlines()
        hits = [i for i, line in enumerate(lines) if needle and needle in line.lower()]
        if self.plan is not None and query != self.query_text:
            async with self._rebuilding:
                self.query_text = query
                await self._rebuild(self.query_one("#files", TabbedContent).active or None)
        if not hits:
            return None
        line = next((i for i in hits if i > after), hits[0])
        scroller = self.active_scroller()
        if scroller is not None:
            self.call_after_refresh(scroller.scroll_to, y=max(0, line - 2), animate=False)
        return line, len(hits)

    async def set_view(self, view: str) -> None:
        if view not in VIEWS:
            raise ValueError(view)
        async with self._rebuilding:
            self.view = view
            if self.plan is not None:
                await self._rebuild(self.query_one("#files", TabbedContent).active or None)
