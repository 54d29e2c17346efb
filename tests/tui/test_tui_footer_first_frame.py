"""Issue #34: the footer shows this app's keys, Quit and Help first, in the FIRST frame of every screen.

Textual's ``Footer`` composes nothing until its private ``_bindings_ready`` is set by the first
``bindings_updated`` signal, one pass after the first frame: the first frame showed an empty
footer, and a recompose followed that a key typed at once waited behind. The workbench's footer
composes its keys from ``screen.active_bindings`` (public) when it is composed.

Read at two points, COUNTED (never timed): when the first screen's ``on_mount`` returns (before any
further message), and at each screen's first layout (``screen_layout_refresh_signal``, published
by the refresh that paints the frame), for every screen 1-6; the first frame's keys are those
shown once the app is quiet.
"""

from __future__ import annotations

from typing import Any

import pytest
from pilot_wait import settle, until

from cutile_workbench.tui import chrome
from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.screens import ratios as ratios_screen

_DATA: dict[str, Any] = {}


def _matmul() -> Any:
    if "matmul" not in _DATA:
        _DATA["matmul"] = load_app_data("matmul", out_root=None, tilegym=None, env={})
    return _DATA["matmul"]


def _labels(footer: Any) -> list[tuple[str, str, bool]]:
    """(action, label, enabled) of each key the footer shows, in order (the palette key left out)."""
    return [
        (k.action, k.description, not k.has_class("-disabled"))
        for k in footer.query("FooterKey")
        if k.display and k.action != "command_palette"
    ]


def _expected(screen: Any) -> list[tuple[str, str, bool]]:
    """(action, label, enabled) the screen's active bindings ask for now: each shown action's first
    binding, in the binding chain's order, with Quit and Help moved first."""
    out: dict[str, tuple[str, str, bool]] = {}
    for _node, binding, enabled, _tooltip in screen.active_bindings.values():
        if binding.show and binding.action not in out:
            out[binding.action] = (binding.action, binding.description, enabled)
    pinned = [out.pop(a) for a in ("quit", "help") if a in out]
    return [*pinned, *out.values()]


@pytest.mark.asyncio
async def test_the_footer_holds_quit_and_help_when_the_first_screen_mount_returns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: the footer was empty here (Textual's Footer waits for its first bindings signal)."""
    seen: list[list[tuple[str, str, bool]]] = []
    real = ratios_screen.RatiosScreen.on_mount

    def spy(self: Any) -> None:
        real(self)
        seen.append(_labels(self.query_one(chrome.WorkbenchFooter)))  # before any further message

    monkeypatch.setattr(ratios_screen.RatiosScreen, "on_mount", spy)
    app = make_app(_matmul())
    async with app.run_test(size=(160, 48)):
        pass
    assert seen, "the Ratios screen was never mounted"
    first = seen[0]
    assert [a for a, _d, _e in first[:2]] == ["quit", "help"], first
    assert [d for _a, d, _e in first[:2]] == ["Quit", "Help"], first


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_every_screens_first_frame_shows_its_settled_keys(
    size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At each screen's first layout its footer already shows Quit and Help first, and the keys its
    bindings ask for at that moment, which (but on History, still reading) are those it shows once
    quiet. Before: nothing (Textual's Footer); then, composed at compose time only, the Ratios
    table's Sort, Reverse and Slow only were missing (the focus comes after the compose)."""
    first: dict[str, list[tuple[str, str, bool]]] = {}
    asked: dict[str, list[tuple[str, str, bool]]] = {}
    real = chrome.WorkbenchFooter.on_mount

    def spy(self: Any) -> None:
        real(self)
        footer, screen = self, self.screen

        def on_layout(_screen: object) -> None:
            name = type(screen).__name__
            if name not in first:
                first[name], asked[name] = _labels(footer), _expected(screen)

        # subscribed for the screen node: the footer's own subscriptions stay as the app makes them
        screen.screen_layout_refresh_signal.subscribe(screen, on_layout, immediate=True)

    monkeypatch.setattr(chrome.WorkbenchFooter, "on_mount", spy)
    app = make_app(_matmul())
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for key in ("1", "2", "3", "4", "5", "6"):
            await pilot.press(key)
            await until(pilot, lambda: type(app.screen).__name__ in first, f"screen {key} laid out")
            await settle(pilot)
            name = type(app.screen).__name__
            settled = _labels(app.screen.query_one(chrome.WorkbenchFooter))
            shown = first[name]
            assert [d for _a, d, _e in shown[:2]] == ["Quit", "Help"], (name, shown)
            assert shown == asked[name], (name, shown, asked[name])
            if name != "HistoryScreen":  # it reads its history in a worker: keys come when it is read
                assert shown == settled, (name, shown, settled)
                # and no recompose followed the first frame (before: one per screen, which the
                # first key typed waited behind)
                assert app.screen.query_one(chrome.WorkbenchFooter).recomposes == 0, name


@pytest.mark.asyncio
async def test_a_click_on_a_footer_key_runs_it() -> None:
    """As Textual's footer: a click on Help opens the help; a click on a disabled key rings the bell."""
    from cutile_workbench.tui.modals import HelpScreen
    from cutile_workbench.tui.widgets.key_footer import FooterKey

    app = make_app(_matmul())
    bells: list[int] = []
    app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        footer = app.screen.query_one(chrome.WorkbenchFooter)
        help_key = next(k for k in footer.query(FooterKey) if k.action == "help")
        assert await pilot.click(help_key)
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "a click on Help opens the help")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen), "Esc closes the help")
        footer = app.screen.query_one(chrome.WorkbenchFooter)
        footer.query(FooterKey).first().enabled = False  # as a key its check_action disables
        await pilot.click(footer.query(FooterKey).first())
        await settle(pilot)
        assert bells == [1]
