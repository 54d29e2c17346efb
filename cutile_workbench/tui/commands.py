"""Ctrl+P commands: ``area: action`` titles, offered only when the action is valid right now.

:func:`available_commands` is the single source of truth (tests call it directly): the views,
then the entries of the screen the palette was opened from (``WorkbenchScreen.palette_commands``),
then those of every other screen already mounted (the palette is global: choosing one switches to
its screen first, then runs it), then help and quit. The :class:`WorkbenchCommands` provider only
matches titles against the query.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from cutile_workbench.tui.host import PaletteCommand, WorkbenchHost
from cutile_workbench.tui.screens.base import WorkbenchScreen


def available_commands(app: WorkbenchHost, screen: object) -> list[PaletteCommand]:
    """Commands valid on ``screen`` (the screen the palette was opened from) right now."""
    out: list[PaletteCommand] = [
        ("view: ratios", "Show the E ratio table", partial(app.switch_mode, "ratios")),
        ("view: timeline", "Show launch timelines", partial(app.switch_mode, "timeline")),
        ("view: ir diff", "Show the reference vs generated IR diff", partial(app.switch_mode, "irdiff")),
        ("view: report", "Plan and write E/F reports", partial(app.switch_mode, "report")),
        (
            "view: checks",
            "TileGym checks: precondition, wiring, -k selection, wrapper audit",
            partial(app.switch_mode, "checks"),
        ),
        (
            "view: history",
            "Run history of the selected config: medians, trend, regression flags, provenance",
            partial(app.switch_mode, "history"),
        ),
    ]
    if isinstance(screen, WorkbenchScreen):
        out += screen.palette_commands()
    seen = {title for title, _h, _cb in out}
    for mode, other in app.mode_screens().items():
        if other is screen or not isinstance(other, WorkbenchScreen):
            continue
        for title, help_text, cb in other.palette_commands():
            if title not in seen:
                seen.add(title)
                out.append(
                    (
                        title,
                        f"{help_text} ({other.SCREEN_TITLE} screen)".strip(),
                        partial(_on_screen, app, mode, cb),
                    )
                )
    out.append(("app: help", "Keys of this screen", app.action_help))
    out.append(("app: quit", "Quit cutile-workbench", app.exit))
    return out


def _on_screen(app: WorkbenchHost, mode: str, command: Callable[[], object]) -> None:
    """Switch to ``mode``'s screen, then run ``command`` there (a palette entry of another screen)."""
    app.switch_mode(mode)
    app.call_later(command)


class WorkbenchCommands(Provider):
    async def discover(self) -> Hits:
        for title, help_text, cb in available_commands(self.app, self.screen):  # type: ignore[arg-type]
            yield DiscoveryHit(title, cb, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, cb in available_commands(self.app, self.screen):  # type: ignore[arg-type]
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), cb, help=help_text)
