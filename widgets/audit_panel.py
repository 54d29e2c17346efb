"""AuditPanel: the IR attribute audit as a table, critical rows first; Enter jumps to the lines.

Contract: fed :class:`AuditItem` rows (built by ``workbench/tui`` from ``workbench.ir.audit``);
never reads files. Rows are ordered by severity (critical, warning, info, then anything else)
and keep their input order within a severity. Enter posts :class:`AuditPanel.JumpTo` with the
reference / generated line numbers of the row. Values are user data: shown as ``Text``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

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


def ordered(items: Sequence[AuditItem]) -> list[AuditItem]:
    """Critical first; stable within a severity."""
    return sorted(items, key=lambda a: SEVERITY_RANK.get(a.severity.lower(), len(SEVERITY_RANK)))


class AuditPanel(DataTable[Text]):
    """Severity, attribute, reference vs generated value, line numbers."""

    DEFAULT_CSS = """
    AuditPanel { height: 1fr; }
    AuditPanel > .auditpanel--critical { color: $error; text-style: bold; }
    """
    COMPONENT_CLASSES = DataTable.COMPONENT_CLASSES | {"auditpanel--critical"}

    class JumpTo(Message):
        def __init__(self, item: AuditItem) -> None:
            super().__init__()
            self.item = item

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.items: list[AuditItem] = []

    def on_mount(self) -> None:
        if not self.columns:
            self.add_columns("sev", "attribute", "reference", "generated", "lines")

    def set_items(self, items: Sequence[AuditItem]) -> None:
        self.items = ordered(items)
        self.clear()
        if not self.columns:
            self.add_columns("sev", "attribute", "reference", "generated", "lines")
        for i, a in enumerate(self.items):
            lines = f"{a.ref_line if a.ref_line is not None else '—'}:{a.gen_line if a.gen_line is not None else '—'}"
            self.add_row(
                Text(a.severity, style=_SEVERITY_STYLE.get(a.severity.lower(), "")),
                Text(a.attribute),
                Text(a.reference),
                Text(a.generated),
                Text(lines),
                key=str(i),
            )

    @property
    def current_item(self) -> AuditItem | None:
        if not self.items or not (0 <= self.cursor_row < len(self.items)):
            return None
        return self.items[self.cursor_row]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        item = self.current_item
        if item is not None:
            self.post_message(self.JumpTo(item))
