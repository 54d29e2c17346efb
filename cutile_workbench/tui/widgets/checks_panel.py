"""ChecksPanel: the TileGym-side checks (E precondition, test_perf wiring, ``-k`` selection,
wrapper audit) as a scrollable list of sections, each row naming its CLI twin.

Contract: fed :class:`~cutile_workbench.model.CheckItem` rows (built by ``cutile_workbench.services.checks`` from
``cutile_workbench.checks``); never reads files or runs anything. Rows keep their input order
within a section; sections are shown in :data:`SECTIONS` order. Every user string (paths,
tracebacks, diffs, ``-k`` expressions) is rendered as ``rich.text.Text`` — never markup — so a
``[`` in a node id or a path is shown as is. A unified diff is coloured by its line prefix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from cutile_workbench.model import CheckItem

#: (section key, heading) in display order: E's Step 1, Step 2, then the selection, then F's audit
SECTIONS: tuple[tuple[str, str], ...] = (
    ("precondition", "E precondition: autotune_launch import"),
    ("wiring", "test_perf wiring: cutile-rs perf cases"),
    ("kselect", "-k selection: candidate vs baseline"),
    ("audit", "wrapper audit (static, ast)"),
)
_STATUS_STYLE = {
    "OK": "bold green",
    "BLOCKED": "bold red",
    "MISSING": "bold red",
    "REFUSED": "bold red",
    "ERROR": "bold red",
    "FINDING": "bold yellow",
    "SKIPPED": "dim",
    "INFO": "bold",
    "CANCELLED": "bold yellow",
}


def section_status(items: Sequence[CheckItem], section: str) -> str:
    """The worst status of a section's rows ("" when it has none)."""
    rank = ["ERROR", "BLOCKED", "MISSING", "REFUSED", "FINDING", "CANCELLED", "INFO", "SKIPPED", "OK"]
    statuses = [i.status for i in items if i.section == section]
    if not statuses:
        return ""
    return min(statuses, key=lambda s: rank.index(s) if s in rank else len(rank))


def render_item(item: CheckItem) -> Text:
    """One row as plain-styled Text (no markup is ever interpreted)."""
    text = Text()
    text.append(f" {item.status} ", style=_STATUS_STYLE.get(item.status, "bold") + " reverse")
    text.append(" ")
    if item.location:
        text.append(item.location, style="bold cyan")
        text.append("  ")
    text.append(item.title, style="bold")
    if item.rule:
        text.append(f"\n  rule: {item.rule}", style="italic")
    if item.action:
        text.append("\n  action: ")
        text.append(item.action)
    if item.detail:
        for line in item.detail.rstrip("\n").splitlines():
            text.append("\n  │ ", style="dim")
            text.append(line)
    if item.diff:
        for line in item.diff.rstrip("\n").splitlines():
            text.append("\n  ")
            style = ""
            if line.startswith(("+++", "---")):
                style = "bold"
            elif line.startswith("+"):
                style = "green"
            elif line.startswith("-"):
                style = "red"
            elif line.startswith("@@"):
                style = "cyan"
            text.append(line, style=style)
    if item.cli:
        text.append("\n  CLI twin: ", style="dim")
        text.append(f"$ {item.cli}", style="bold magenta")
    return text


def render_items(items: Sequence[CheckItem]) -> Text:
    """All sections in SECTIONS order, each headed by its worst status; unknown sections last."""
    out = Text()
    known = [key for key, _ in SECTIONS]
    headings = list(SECTIONS) + sorted({(i.section, i.section) for i in items if i.section not in known})
    first = True
    for key, heading in headings:
        rows = [i for i in items if i.section == key]
        if not rows:
            continue
        if not first:
            out.append("\n\n")
        first = False
        status = section_status(items, key)
        out.append(f"── {heading} ", style="bold")
        out.append(status, style=_STATUS_STYLE.get(status, "bold"))
        for row in rows:
            out.append("\n")
            out.append_text(render_item(row))
    return out


class ChecksPanel(VerticalScroll):
    """A scrollable view of the check rows (or of a plain message when there are none)."""

    DEFAULT_CSS = """
    ChecksPanel { height: 1fr; padding: 0 1; }
    ChecksPanel > #checks-body { height: auto; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.items: tuple[CheckItem, ...] = ()

    def compose(self) -> Any:
        yield Static(id="checks-body")

    def show_items(self, items: Sequence[CheckItem]) -> None:
        self.items = tuple(items)
        self.query_one("#checks-body", Static).update(render_items(self.items))
        self.scroll_home(animate=False)

    def show_message(self, message: Text | str) -> None:
        self.items = ()
        body = message if isinstance(message, Text) else Text(message)
        self.query_one("#checks-body", Static).update(body)
        self.scroll_home(animate=False)

    def plain(self) -> str:
        """The rendered rows as plain text (what tests and copy-paste see)."""
        return render_items(self.items).plain
