"""WorkbenchScreen: header + body + footer, help text, palette entries, and access to the injected AppData."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on
from textual.app import App
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen

from cutile_workbench.tui.chrome import WorkbenchFooter, WorkbenchHeader
from cutile_workbench.tui.host import PaletteCommand, WorkbenchHost

if TYPE_CHECKING:
    from cutile_workbench.model import RatioRow
    from cutile_workbench.tui.data import AppData


#: names with no printable character, written as a person reads them on a keyboard
_NAMED_KEYS = {
    "pagedown": "PgDn",
    "pageup": "PgUp",
    "escape": "Esc",
    "enter": "Enter",
    "tab": "Tab",
    "space": "Space",
    "backspace": "Backspace",
    "delete": "Del",
    "home": "Home",
    "end": "End",
    "up": "↑",
    "down": "↓",
    "left": "←",
    "right": "→",
    "slash": "/",
    "plus": "+",
    "minus": "-",
    "question_mark": "?",
    "full_stop": ".",
    "comma": ",",
}


def typed_key(key: str) -> str:
    """A binding's keys as a person types them: ``slash`` → ``/``, ``right_square_bracket`` → ``]``,
    ``ctrl+q`` → ``Ctrl+Q``, ``shift+tab`` → ``Shift+Tab``; a comma list stays a list (``n, ]``)."""
    from textual.keys import key_to_character

    out = []
    for one in key.split(","):
        *mods, last = one.strip().split("+")
        char = key_to_character(last)
        shown = _NAMED_KEYS.get(last) or (char if char and char.isprintable() else None) or last.title()
        if mods and len(shown) == 1:
            shown = shown.upper()
        out.append("+".join([*(m.title() for m in mods), shown]))
    return ", ".join(out)


class ScreenShown(Message, bubble=False):
    """Posted to the app once a screen it switched to has handled its resume (and everything queued
    before it): the keys typed after the screen key may go to it now (issue #34)."""

    def __init__(self, screen: WorkbenchScreen) -> None:
        super().__init__()
        self.screen = screen


class WorkbenchScreen(Screen[None]):
    SCREEN_TITLE: ClassVar[str] = ""
    ABOUT: ClassVar[str] = ""

    #: True until the screen is first suspended: its nodes were styled when they were mounted
    _styles_fresh = True
    #: what the stylesheet read from outside the screen when it was last suspended (_style_inputs)
    _suspended_with: tuple[object, ...] | None = None

    def _style_inputs(self) -> tuple[object, ...]:
        """What this screen's styles read from outside it: the theme (its variables, dark/light) and
        the ANSI colour mode. Every class and pseudo-class change restyles its own nodes when made,
        a resize re-applies the breakpoint classes (``switch_mode`` resizes the screen), and a CSS
        change makes ``switch_mode`` refresh the CSS; so with these unchanged a whole restyle on
        resume re-applies what each node already has."""
        return (self.app.theme, self.app.ansi_color)

    @on(events.ScreenResume)
    def _keep_fresh_styles(self, event: events.ScreenResume) -> None:
        # Runs before Screen._on_screen_resume (subclass first in the MRO; not named
        # on_screen_resume, which subclasses define). A screen shown for the first time gets two ScreenResume events (App._init_mode and switch_mode), each
        # re-applying the stylesheet to every node (~90 on Ratios: ~25 ms before the first
        # paint on the GPU node) although they were styled when mounted and every class or
        # pseudo-class change since restyled its own nodes. Shown again after a suspend, the same
        # holds unless what it reads from outside changed while it was away (the theme: then the
        # full restyle stays); issue #34: the switch back to the Timeline re-applied the
        # stylesheet to ~260 nodes, the footer's keys included, on every switch.
        if self._styles_fresh or self._suspended_with == self._style_inputs():
            event.refresh_styles = False

    @on(events.ScreenResume)
    def _footer_catches_up(self) -> None:
        for footer in self.query(WorkbenchFooter):
            footer.resumed()

    @on(events.ScreenResume)
    def _say_shown(self) -> None:
        # after this message and whatever is queued here (the subclass's on_screen_resume: the
        # cursor moves to the selected config, the config shown follows it)
        self.call_next(self.app.post_message, ScreenShown(self))

    @on(events.ScreenSuspend)
    def _styles_may_age(self) -> None:
        self._styles_fresh = False
        self._suspended_with = self._style_inputs()

    async def data_reloaded(self) -> None:
        """The app's data was replaced by the whole session's (issue 31 item 3): build the screen
        again from it. Screens whose mount does more than compose override this."""
        await self.recompose()

    def torn_down(self) -> bool:
        """The app quit while this screen was being built (a screen key right before Ctrl+Q): its
        widgets were removed before its on_mount ran, which then has nothing to fill (issue #34;
        a composed screen always has children, its header at least)."""
        return not self.children

    @property
    def wb(self) -> WorkbenchHost:
        return self.app  # type: ignore[return-value]

    @property
    def data(self) -> AppData:
        return self.wb.data

    def header(self) -> WorkbenchHeader:
        return WorkbenchHeader(self.SCREEN_TITLE, id="header")

    def rerun_refused(self) -> bool:
        """The doctor's preflight before any GPU work, the one path of every re-run key (``L`` and ``R``
        on Ratios, ``L`` on the Timeline): True, with the failing check's line as an error
        notification, when the re-run may not start."""
        from cutile_workbench.services.doctor import rerun_refusal

        refusal = rerun_refusal()
        if refusal:
            self.notify(refusal, severity="error", timeout=12, markup=False)
        return bool(refusal)

    def palette_commands(self) -> list[PaletteCommand]:
        """This screen's Ctrl+P entries valid right now (``area: action`` titles); none by default."""
        return []

    def selected_config(self) -> RatioRow | None:
        """The config under this screen's cursor right now (a screen key takes it along to the next
        screen); None: this screen does not pick configs."""
        return None

    def help_keys(self) -> list[tuple[str, str, str]]:
        """(key, description, tooltip) for every binding of this app active on this screen right
        now: this screen's own actions first, then those of the workbench's widgets, then the app's
        (screens, help, quit) and the command palette. Textual's generic bindings (a table's cursor
        keys, scrolling, focus, copy) are left out (issue #34: F1 lists this app's keys)."""
        return help_rows(self, own=self)


def help_rows(screen: Screen[Any], *, own: object) -> list[tuple[str, str, str]]:
    """:meth:`WorkbenchScreen.help_keys` for any screen: ``own``'s bindings (the screen's, or an app
    without screens of its own: the overview) first, then the workbench's widgets', then the app's
    and the command palette; Textual's generic ones left out."""
    ranked: list[tuple[int, int, tuple[str, str, str]]] = []
    seen: set[str] = set()
    for order, (key, active) in enumerate(screen.active_bindings.items()):
        b = active.binding
        if b.action in seen and not b.description:
            continue
        rank = _help_rank(active.node, b, own)
        description = b.description or b.action
        if b.action == "command_palette":
            rank, description = 2, "Command palette"
        elif rank == 3:
            continue
        seen.add(b.action)
        ranked.append((rank, order, (b.key_display or typed_key(key), description, b.tooltip or "")))
    return [row for _rank, _order, row in sorted(ranked)]


def _help_rank(node: object, binding: Binding, own: object) -> int:
    """0 ``own``'s, 1 a workbench widget's, 2 the app's, 3 Textual's: the class that declares
    this very binding decides (same id, or same action and description: a widget that rebinds
    ``cursor_down`` to ``j`` does not make Textual's ``down`` one of ours)."""
    module = ""
    for cls in type(node).__mro__:
        declared = cls.__dict__.get("BINDINGS", ())
        if any(isinstance(b, Binding) and _same_binding(b, binding) for b in declared):
            module = cls.__module__
            break
    ours = module.startswith(("cutile_workbench.", "cutile_workbench.tui.widgets."))
    if not ours:
        return 3
    if node is own:
        return 0
    return 2 if isinstance(node, App) else 1


def _same_binding(declared: Binding, active: Binding) -> bool:
    """``active`` (maybe remapped by a keymap: other keys) is the ``declared`` binding."""
    if declared.id or active.id:
        return declared.id == active.id
    return declared.action == active.action and declared.description == active.description
