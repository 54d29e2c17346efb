"""What a screen may ask of the app it runs in: :class:`WorkbenchHost` (a Protocol, so no screen imports the app).

Contract: :class:`cutile_workbench.tui.app.WorkbenchApp` implements it; screens reach it as
``WorkbenchScreen.wb`` and the palette (:mod:`cutile_workbench.tui.commands`) through ``screen.app``.
:data:`PaletteCommand` is one Ctrl+P entry: ``(title "area: action", help text, callback)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from cutile_workbench.errors import WorkbenchError
    from cutile_workbench.model import RatioRow
    from cutile_workbench.tui.data import AppData

PaletteCommand = tuple[str, str, Callable[[], object]]


class WorkbenchHost(Protocol):
    data: AppData
    pending_row: RatioRow | None
    selected_row: RatioRow | None  # the config highlighted on Ratios (the IR screen follows it)
    pending_live: bool
    live: bool
    ir_loading: bool
    irdiff_screen: Any  # the IR diff screen once it mounted (it shows pairs loaded later)

    def open_timeline(self, row: RatioRow, *, live: bool = False) -> None: ...

    def show_error(self, error: WorkbenchError | str, title: str | None = None) -> None: ...

    def switch_mode(self, mode: str) -> Any: ...

    def mode_screens(self) -> dict[str, Any]: ...

    def call_later(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> bool: ...

    def action_help(self) -> None: ...

    def exit(self, result: Any = None, return_code: int = 0, message: Any = None) -> None: ...
