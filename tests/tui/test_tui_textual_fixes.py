"""The Textual 8.2.8 work-around (cutile_workbench/tui/textual_fixes.py): a Tabs resize during teardown."""

from __future__ import annotations

from textual.css.query import NoMatches
from textual.widgets._tabs import Tabs

from cutile_workbench.tui import textual_fixes


class _TornDown:
    """Stands in for a Tabs whose Underline child is already removed (what teardown leaves)."""

    def _highlight_active(self, animate: bool = True) -> None:
        raise NoMatches("No nodes match 'Underline' on ContentTabs()")

    def _scroll_active_tab(self) -> None:  # pragma: no cover - not reached after the raise
        raise AssertionError


def test_resize_of_torn_down_tabs_is_a_no_op() -> None:
    textual_fixes.apply()
    textual_fixes.apply()  # idempotent: one wrapper, not two
    Tabs._on_resize(_TornDown())  # type: ignore[arg-type]  # must not raise
