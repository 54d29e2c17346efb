"""WorkbenchScreen: header + body + footer, help text, and access to the injected AppData."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.screen import Screen

from workbench.tui.chrome import WorkbenchHeader

if TYPE_CHECKING:
    from workbench.tui.app import WorkbenchApp
    from workbench.tui.data import AppData


class WorkbenchScreen(Screen[None]):
    SCREEN_TITLE: ClassVar[str] = ""
    ABOUT: ClassVar[str] = ""

    @property
    def wb(self) -> WorkbenchApp:
        return self.app  # type: ignore[return-value]

    @property
    def data(self) -> AppData:
        return self.wb.data

    def header(self) -> WorkbenchHeader:
        return WorkbenchHeader(self.SCREEN_TITLE, id="header")

    def help_keys(self) -> list[tuple[str, str, str]]:
        """(key, description, tooltip) for every binding active on this screen right now."""
        out: list[tuple[str, str, str]] = []
        seen: set[str] = set()
        for key, active in self.active_bindings.items():
            b = active.binding
            if b.action in seen and not b.description:
                continue
            seen.add(b.action)
            out.append((b.key_display or key, b.description or b.action, b.tooltip or ""))
        return out
