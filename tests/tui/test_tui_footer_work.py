"""Issue #35 item 1 / #34: the footer's work under a key storm, COUNTED (never timed: the box is loaded).

Textual's Footer recomposes itself (every FooterKey removed, new ones mounted and restyled) on each
``bindings_updated`` signal, and a screen sends one for every focus change, screen switch and
``refresh_bindings()``: in a 150-burst storm ~400 recomposes, a quarter of the storm's CPU in
FooterKey styling, nearly all of them putting back the keys that were already there. The
workbench's footer recomposes only when what it shows (keys, labels, enabled state, tooltips)
changed, at most once per refresh. Checked on the REAL recorded sessions with the storm's own
bursts (``test_tui_key_storm._burst``): no recompose that leaves the footer as it was, and after
every burst the footer shows the keys active on the screen, enabled as ``check_action`` says.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from pilot_wait import settle, type_fast
from test_tui_key_storm import SIZES, _burst, _data, _mode_screens

from cutile_workbench.tui import chrome
from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.screens.ratios import RatiosScreen
from cutile_workbench.tui.widgets.key_footer import FooterKey


def _shown(footer: chrome.WorkbenchFooter) -> list[tuple[str, str, str, bool, object]]:
    """What the footer shows: each key's action, key, label, enabled state, tooltip, in order."""
    return [  # a FooterKey shows "disabled" by its class (Widget.disabled stays False)
        (k.action, k.key_display, k.description, k.has_class("-disabled"), k.tooltip)
        for k in footer.query(FooterKey)  # the workbench's own key widget (issue #34)
        if k.display  # keys replaced before the first layout are hidden until they are removed
    ]


def _expected(screen: Any) -> set[tuple[str, bool]]:
    """(action, disabled) of every key the footer should show: the screen's active shown bindings
    (the first binding of each action, as Textual's Footer takes them) and the palette key."""
    out: dict[str, bool] = {}
    for _node, binding, enabled, _tooltip in screen.active_bindings.values():
        if binding.show and binding.action not in out:
            out[binding.action] = not enabled
    return set(out.items())


async def _storm_counting(
    kernel: str, size: tuple[int, int], seed: int, bursts: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, int]:
    """(recomposes, recomposes that left the footer as it was) over ``bursts`` of the storm."""
    counts = {"all": 0, "wasted": 0}
    real = chrome.WorkbenchFooter.recompose

    async def spy(self: chrome.WorkbenchFooter) -> None:
        before = _shown(self)
        await real(self)
        counts["all"] += 1
        counts["wasted"] += _shown(self) == before and bool(before)

    monkeypatch.setattr(chrome.WorkbenchFooter, "recompose", spy)
    rng = random.Random(seed)
    app = make_app(_data(kernel))
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for _ in range(bursts):
            while not isinstance(app.screen, (RatiosScreen, *_mode_screens())):  # a modal: answer it
                type_fast(pilot, "escape")
                await settle(pilot)
            type_fast(pilot, *_burst(rng))
            await settle(pilot)
            footers = app.screen.query(chrome.WorkbenchFooter)
            if not footers:  # a modal on top (help, info): it has no footer
                continue
            footer = footers.first()
            shown = {(action, disabled) for action, _k, _d, disabled, _t in _shown(footer)}
            assert shown - {("command_palette", False)} == _expected(app.screen) - {
                ("command_palette", False)
            }
        await pilot.press("ctrl+q")
    return counts["all"], counts["wasted"]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_a_storm_never_recomposes_a_footer_that_would_stay_the_same(
    size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: 40 bursts of matmul's seed-0 storm recomposed the footer ~100 times, nearly every
    one putting back the same keys; now only a real change (a key enabled or disabled, another
    screen's first footer) recomposes it."""
    recomposes, wasted = await _storm_counting("matmul", size, seed=0, bursts=40, monkeypatch=monkeypatch)
    assert wasted == 0, f"{wasted} of {recomposes} recomposes left the footer as it was"
