"""SVG snapshots of every screen at 80x24, 120x40 and 160x48 (pytest-textual-snapshot ``snap_compare``).

Deterministic: pinned synthetic data (``tui_helpers.make_data``: real gpu.md §4 medians, synthetic
rest), no clock in the UI, Input cursor blink off, workers awaited before the snapshot is taken.
Update only after looking at the report: ``pytest tests/tui/snapshots --snapshot-update``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from pilot_wait import drain, settle
from textual.widgets import Input
from tui_helpers import make_data

from cutile_workbench.tui.app import make_app

SIZES = [(80, 24), (120, 40), (160, 48)]  # issue #20: the three sizes people use


async def _settle(pilot: Any) -> None:
    for inp in pilot.app.query(Input):
        inp.cursor_blink = False
    await settle(pilot)  # workers done and the Report preview's rebuild finished (issue #35)


def _keys(*keys: str) -> Callable[[Any], Awaitable[None]]:
    async def run(pilot: Any) -> None:
        await settle(pilot)  # the first screen loaded
        for k in keys:
            await pilot.press(k)
            await drain(pilot)  # the key handled: what it started is among the workers now
            await pilot.app.workers.wait_for_complete()
        await _settle(pilot)

    return run


SCENES = {
    "ratios": _keys("s", "s", "s", "s", "s", "r"),  # sorted by ratio, descending
    "ratios_chart": _keys("down", "c"),  # ratio per config with CI whiskers, the 2nd row's samples
    "ratios_variant": _keys(
        "v", "down"
    ),  # the variant tab re-states its rows (synthetic: no raw samples, so CI —)
    "timeline": _keys("down", "down", "down", "down", "enter", "tab", "tab", "tab"),
    "irdiff": _keys("3", "n", "n"),
    "report": _keys("4", "e"),
    "help": _keys("f1"),
}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("scene", list(SCENES))
def test_screen_snapshot(snap_compare: Any, scene: str, size: tuple[int, int]) -> None:
    app = make_app(make_data(ir_lines=300))
    assert snap_compare(app, terminal_size=size, run_before=SCENES[scene])
