"""Ctrl+P commands: ``area: action`` titles, offered only when the action is valid right now.

:func:`available_commands` is the single source of truth (tests call it directly): the views,
then the entries of the screen the palette was opened from (``WorkbenchScreen.palette_commands``),
then those of every other screen (the palette is global: choosing one switches to its screen
first, then runs it there), then help and quit. A screen not shown yet (screens are built on first
visit, issue #34) offers the entries of a fresh instance of it; choosing one builds the real screen,
then runs the entry of the same title there. The :class:`WorkbenchCommands` provider only matches
titles against the query.
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
    shown = app.mode_screens()
    for mode, factory in getattr(app, "MODES", {}).items():
        if mode in shown:
            continue
        for title, help_text in _fresh_entries(factory):
            if title not in seen:
                seen.add(title)
                out.append(
                    (
                        title,
                        f"{help_text} (opens its screen)".strip(),
                        partial(_on_new_screen, app, mode, title),
                    )
                )
    for mode, other in shown.items():
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


def _fresh_entries(factory: Callable[[], object]) -> list[tuple[str, str]]:
    """(title, help) of the entries a screen not built yet would offer (none when it needs its widgets)."""
    from textual.css.query import NoMatches

    try:
        screen = factory()
        if not isinstance(screen, WorkbenchScreen):
            return []
        return [(title, help_text) for title, help_text, _cb in screen.palette_commands()]
    except NoMatches:  # its entries read its widgets: offered once it is shown
        return []


def _on_new_screen(app: WorkbenchHost, mode: str, title: str) -> None:
    """Build ``mode``'s screen (switch to it), then run its entry called ``title`` once it is mounted."""
    mounted = app.switch_mode(mode)

    async def then() -> None:
        await mounted
        screen = app.mode_screens().get(mode)
        if isinstance(screen, WorkbenchScreen):
            for entry, _help, cb in screen.palette_commands():
                if entry == title:
                    cb()
                    return

    app.call_later(then)


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
