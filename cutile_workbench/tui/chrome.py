"""The header line every screen shows: kernel, GPU, out root, data source and the screen name.

One line: what does not fit ends in "…" (most important first); ``i`` shows the whole text
(:func:`header_lines`). A screen may add a ``notice``
(the Ratios screen: the comparability flag of its ratios): ``urgent`` right after the candidate,
else at the end.

:class:`WorkbenchFooter` is the footer of every screen: Quit and Help first, then the screen's keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import ActiveBinding
from textual.css.query import NoMatches
from textual.widget import Widget
from textual.widgets import Footer, Static

from cutile_workbench.tui.widgets.key_footer import FooterKey, footer_widgets

if TYPE_CHECKING:
    from textual.screen import Screen


class WorkbenchHeader(Static):
    """One line; user strings are plain Text (paths may contain markup characters)."""

    def __init__(
        self, screen_title: str, *, notice: str = "", urgent: bool = False, **kwargs: object
    ) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.screen_title = screen_title
        self.notice = notice
        self.urgent = urgent

    def on_mount(self) -> None:
        self.refresh_text()

    def refresh_text(self) -> None:
        data = getattr(self.app, "data", None)
        if data is None:
            self.update(Text(self.screen_title))
            return
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f" {self.screen_title} ", style="bold reverse")
        text.append(f" {data.kernel} ", style="bold")
        if data.stand_in:  # never let a stand-in pass for cutile-rs
            text.append(f"STAND-IN: {data.candidate_backend}, not cutile-rs", style="bold black on yellow")
            text.append(" ")
        else:
            text.append("cutile-rs ", style="bold green")
        if self.notice and self.urgent:
            text.append(self.notice, style="bold black on #ffd75f")  # 16 colours: black on bright yellow
            text.append(" ")
        if getattr(data, "harness", ""):
            text.append(f"│ harness {data.harness} ")
        # most important first: a narrow terminal truncates from the right
        source = "live" if getattr(self.app, "live", False) else data.source
        src_style = {"live": "bold green", "synthetic": "bold yellow"}.get(source, "bold")
        text.append("│ ")
        text.append(source, style=src_style)
        text.append(f" │ {data.gpu} ")
        text.append(f"│ {data.out_root if data.out_root else '(no out root)'}")
        if self.notice and not self.urgent:
            text.append(f" │ {self.notice}", style="yellow")
        self.update(text)


def header_lines(app: object) -> list[str]:
    """The header's whole content, one fact per line, plus the ratios' comparability lines (``i``)."""
    data = getattr(app, "data", None)
    if data is None:
        return ["no data loaded"]
    source = "live" if getattr(app, "live", False) else data.source
    lines = [
        f"kernel      {data.kernel}",
        f"candidate   {data.candidate_backend}" + ("  (STAND-IN, not cutile-rs)" if data.stand_in else ""),
        f"harness     {data.harness or 'unknown'}",
        f"source      {source}" + (f"  (read-only: {data.read_only})" if data.read_only else ""),
        f"GPU         {data.gpu}",
        f"out root    {data.out_root if data.out_root else '(no out root)'}",
    ]
    cond = getattr(data, "conditions", None)
    if cond is not None and cond.short:
        lines += ["", "comparability of the ratios:", *cond.lines]
    problems = list(getattr(data, "problems", ()))
    if problems:  # issue #34: what the loaders refused, with file and line, for as long as it is so
        lines += ["", f"load problems ({len(problems)}):"]
        for p in problems:  # each with what it left out of a view (data.narrowed)
            lines += [
                f"  {p}",
                *(f"    → {what} ({view})" for view, what, e in data.narrowed if str(e) == str(p)),
            ]
    return lines


#: the app's actions the footer shows first, in this order, so that no width cuts them off
PINNED_ACTIONS = ("quit", "quit_overview", "help")


class WorkbenchFooter(Footer):
    """The footer of every screen: this app's keys in the FIRST frame, Quit and Help first (issue #34).

    Textual's Footer composes nothing until its private ``_bindings_ready`` is set by the first
    ``bindings_updated`` signal, one pass after the first frame, so the first frame showed an empty
    footer and a recompose followed. This one composes its keys (:mod:`key_footer`'s widgets, the
    same look) from ``screen.active_bindings`` (public) at compose time, and until the footer is
    first laid out it answers a bindings signal AT ONCE (subscribed ``immediate``): the focus a
    screen sets after its compose (Textual's auto focus, a ``set_focus`` in ``on_mount``) adds
    the focused widget's keys before the first layout, not by a recompose after the first frame.

    Quit and Help come first: the footer cuts what does not fit from the right, and the app's keys
    come last in the binding chain, so at 80 and 120 columns Quit and Help were the ones cut. The
    screen's keys follow in their usual order.

    Recomposed only when what it shows changed (issue #35: the slow test stage). A screen sends a
    ``bindings_updated`` signal for each focus change, screen switch and ``refresh_bindings()``: a
    recompose removes every key and mounts and restyles new ones. Once laid out, the signals that
    reach the footer before its next turn are coalesced into one check, which compares what a
    compose would show (:meth:`shown_keys`: keys, labels, enabled state, tooltips) with what the
    footer shows; only a difference recomposes."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._check_pending = False
        #: what the footer shows now (None: nothing yet: the screen could not answer at compose)
        self._composed: tuple[object, ...] | None = None
        #: recomposes after a bindings change (tests count the work with it)
        self.recomposes = 0
        #: a bindings change came while the screen was not the app's current one (see resumed)
        self._stale = False

    def shown_keys(self, active: Mapping[str, ActiveBinding] | None = None) -> tuple[object, ...]:
        """What a compose shows right now, as values: for each shown binding of the screen its key,
        display, label, action, enabled state, tooltip and group, then the palette's key."""
        if active is None:
            active = self.screen.active_bindings
        keys = tuple(
            (b.key, self.app.get_key_display(b), b.description, b.action, enabled, tooltip, b.group)
            for (_node, b, enabled, tooltip) in active.values()
            if b.show
        )
        return (keys, self.show_command_palette, self.app.ENABLE_COMMAND_PALETTE, self.compact)

    def current_keys(self) -> tuple[tuple[object, ...], list[Widget]] | None:
        """What the footer should show now and its widgets, Quit and Help first; None while the
        screen cannot tell yet (its ``check_action`` asks for a widget its compose has not mounted)."""
        try:
            active = self.screen.active_bindings
        except NoMatches:
            return None
        widgets = footer_widgets(self, active)

        def rank(widget: Widget) -> int:
            action = getattr(widget, "action", None)  # a FooterKey's (the palette key has one too)
            return PINNED_ACTIONS.index(action) if action in PINNED_ACTIONS else len(PINNED_ACTIONS)

        return self.shown_keys(active), sorted(widgets, key=rank)  # stable: the rest keep their order

    def on_mount(self) -> None:
        # Footer.on_mount (run after this one) subscribes bindings_changed, which is left a no-op
        self.screen.bindings_updated_signal.subscribe(self, self.keys_changed, immediate=True)

    def bindings_changed(self, screen: Screen[object]) -> None:
        """Textual's deferred path: :meth:`keys_changed` (immediate) answers every signal instead."""

    def keys_changed(self, screen: Screen[object]) -> None:
        """A bindings signal, answered in the publisher's call: before the first layout the keys
        are put right here, so the first frame has them; after, one check at the footer's turn."""
        if not self.is_attached or screen is not self.screen:
            return
        if not self._on_top():  # left for another screen: checked once when shown again (resumed)
            self._stale = True
            return
        if self.size.area == 0:  # not laid out yet (or hidden): no frame shows it, put it right now
            self.replace_keys_now()
            return
        if self._check_pending:
            return
        self._check_pending = True  # one check for every signal until the footer's next turn
        self.call_next(self._recompose_if_changed, screen)

    def replace_keys_now(self) -> None:
        """Show the current keys at once: the old key widgets hidden and removed, the new ones
        mounted (in the DOM when this returns; their removal and start finish later)."""
        current = self.current_keys()
        if current is None or current[0] == self._composed:
            return
        self._composed, widgets = current
        old = [widget for widget in self.children if widget.display]  # (hidden: already going)
        for widget in old:
            widget.display = False
        self.remove_children(old)
        self.mount_all(widgets)

    def _on_top(self) -> bool:
        """This footer's screen is the app's current one (not left for another mode's screen)."""
        try:
            return self.app.screen is self.screen
        except Exception:  # no screen (the app is quitting)
            return False

    def resumed(self) -> None:
        """Its screen is shown again: one check of the keys against the state now, if a bindings
        change came while it was away (issue #34: the footer of the screen being left answered the
        change made for the screen being entered, recomposed, and recomposed back on return)."""
        if self._stale:
            self._stale = False
            self.keys_changed(self.screen)

    async def _recompose_if_changed(self, screen: Screen[object]) -> None:
        self._check_pending = False
        if not self.is_attached or screen is not self.screen:
            return
        if not self._on_top():
            self._stale = True
            return
        if not self.app.app_focus:
            return  # (without focus Textual's footer skips it too)
        try:
            if self.shown_keys() == self._composed:
                return
        except NoMatches:  # the screen cannot tell yet (see current_keys): a later signal will
            return
        self.recomposes += 1
        await self.recompose()

    def compose(self) -> ComposeResult:
        current = self.current_keys()
        self._composed = None if current is None else current[0]
        if current is not None:
            yield from current[1]

    def watch_compact(self, compact: bool) -> None:
        for key in self.query(FooterKey):
            key.compact = compact
