"""AuditPanel: the IR attribute audit, critical rows first; each row shows BOTH values; Enter jumps.

Contract: fed :class:`AuditItem` rows (built by ``cutile_workbench/tui`` from ``cutile_workbench.ir.audit`` and
the structural diff's hunks); never reads files. Rows are ordered by severity (critical, warning,
info, then anything else) and keep their input order within a severity. Each row is a small
block — severity, check and the hunk it belongs to on the first line, then ``ref`` and ``gen``
values on their own lines, wrapped to the panel width — so both values are readable at 80 and 160
columns without horizontal scrolling. Enter posts :class:`AuditPanel.JumpTo` (the screen jumps to
the row's hunk, else to its lines). :meth:`select_check` highlights the row of a check (the diff
view's current hunk). Values are user data: shown as ``Text``, never markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

SEVERITY_RANK = {"critical": 0, "warn": 1, "warning": 1, "info": 2, "ok": 3}
_SEVERITY_STYLE = {"critical": "bold red", "warn": "yellow", "warning": "yellow", "info": "", "ok": "dim"}


@dataclass(frozen=True)
class AuditItem:
    """One audited op count or attribute check (``mma``, ``occupancy``, ``tile_shapes``) on both sides."""

    severity: str
    attribute: str
    reference: str
    generated: str
    ref_line: int | None = None
    gen_line: int | None = None
    note: str = ""
    hunk: int | None = None  # the structural diff hunk (rank order) this check belongs to


def ordered(items: Sequence[AuditItem]) -> list[AuditItem]:
    """Critical first; stable within a severity."""
    return sorted(items, key=lambda a: SEVERITY_RANK.get(a.severity.lower(), len(SEVERITY_RANK)))


def item_text(a: AuditItem) -> Text:
    """The row block: ``SEV check  → hunk N  L12:40`` / ``  ref <value>`` / ``  gen <value>``."""
    t = Text()
    t.append(f"{a.severity.upper():<8}", style=_SEVERITY_STYLE.get(a.severity.lower(), ""))
    t.append(a.attribute, style="bold")
    if a.hunk is not None:
        t.append(f"  → hunk {a.hunk + 1}", style="italic")
    lines = f"{a.ref_line if a.ref_line is not None else '—'}:{a.gen_line if a.gen_line is not None else '—'}"
    t.append(f"  L{lines}", style="dim")
    same = a.reference == a.generated
    t.append("\n  ref ", style="dim")
    t.append(a.reference or "—")
    t.append("\n  gen ", style="dim")
    t.append(a.generated or "—", style="" if same else "bold")
    return t


class AuditPanel(OptionList):
    """Severity, check, reference and generated value (one under the other), lines, hunk."""

    DEFAULT_CSS = """
    AuditPanel { height: 1fr; }
    """

    class JumpTo(Message):
        def __init__(self, item: AuditItem) -> None:
            super().__init__()
            self.item = item

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.items: list[AuditItem] = []

    def set_items(self, items: Sequence[AuditItem]) -> None:
        self.items = ordered(items)
        self.clear_options()
        self.add_options([Option(item_text(a), id=str(i)) for i, a in enumerate(self.items)])
        if self.items:
            self.highlighted = 0

    @property
    def current_item(self) -> AuditItem | None:
        h = self.highlighted
        if h is None or not (0 <= h < len(self.items)):
            return None
        return self.items[h]

    def select_check(self, check: str | None) -> bool:
        """Highlight the row of ``check`` (no change when there is none)."""
        for i, a in enumerate(self.items):
            if check is not None and a.attribute == check:
                self.highlighted = i
                return True
        return False

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        item = self.current_item
        if item is not None:
            self.post_message(self.JumpTo(item))
