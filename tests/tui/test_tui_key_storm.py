"""Issue #34 item 2: key storms on the REAL recorded sessions (matmul, rms_norm), at 80x24 and 160x48.

A seeded generator types bursts of keys the way a fast typist does (:func:`pilot_wait.type_fast`:
a burst reaches the app in one go): screen keys, moves, sorts, filters, chart, variant tabs, report
plans and view switches, help/info, Escape, resizes. After each burst the app settles (workers
done, queues drained: state, not time) and these must hold:

- the app is still running (an exception in any handler ends it, and ``run_test`` re-raises it);
- no two widgets of the screen share an id;
- every screen states the config it shows, and it is the selected one: Ratios' detail line is its
  cursor row's id; Timeline, IR diff and History show the config the app has selected (the one
  under the cursor when the screen key was typed).

Bounded: a fixed number of bursts per seed (``-m slow`` runs more seeds and longer storms). Failed
on the code before issue #34 (DuplicateIds in the Report preview; the IR screen on row 0 after
↓↓↓3; History's config not followed).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from pilot_wait import settle, type_fast
from textual.widgets import Static

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.screens.history import HistoryScreen
from cutile_workbench.tui.screens.irdiff import IRDiffScreen
from cutile_workbench.tui.screens.ratios import RatiosScreen
from cutile_workbench.tui.screens.timeline import TimelineScreen
from cutile_workbench.tui.widgets.ratio_table import RatioTable

SIZES = [(80, 24), (160, 48)]
SCREEN_KEYS = ["1", "2", "3", "4", "5", "6"]
#: keys a person uses on the screens (no Ctrl+Q: it ends the storm; no w/D/L confirmations: they
#: open a modal the storm answers with escape below; no IR "p": it leaves the selected config on purpose)
KEYS = [
    *SCREEN_KEYS,
    *["down"] * 4,
    *["up"] * 2,
    "j",
    "k",
    "pagedown",
    "home",
    "end",
    "s",
    "r",
    "o",
    "c",
    "v",
    "t",
    "enter",
    "tab",
    "escape",
    "e",
    "f",
    "a",
    "n",
    "b",
    "f1",
    "i",
    "slash",
    "w",
    "L",
]
FILTER_TEXT = ["2", "4", "8", "1", "True", "F", "x"]
_DATA: dict[str, Any] = {}


def _data(kernel: str) -> Any:
    if kernel not in _DATA:
        _DATA[kernel] = load_app_data(kernel, out_root=None, tilegym=None, env={})
    return _DATA[kernel]


def _burst(rng: random.Random) -> list[str]:
    """One burst, as a person types it: a random mix, moves then a screen key, report plans and
    view switches, a History config pick then a screen key, or a filter."""
    kind = rng.choice(["mix", "mix", "move_then_screen", "report", "history", "filter"])
    if kind == "move_then_screen":
        moves = rng.choices(["down", "down", "up", "j", "k", "end", "home"], k=rng.randint(1, 4))
        return [*moves, rng.choice(SCREEN_KEYS)]
    if kind == "report":
        return rng.choices(["e", "f", "v", "v", "v", "slash", "escape"], k=rng.randint(2, 6))
    if kind == "history":
        return rng.choice([["6", "c"], ["c", "2"], ["c", "3"], ["c", "c", "1"], ["6", "c", "b"]])
    if kind == "filter":
        return ["1", "slash", *rng.choice(FILTER_TEXT), rng.choice(["enter", "escape"])]
    out: list[str] = []
    for _ in range(rng.randint(1, 6)):
        key = rng.choice(KEYS)
        out.append(key)
        if key == "slash":  # a filter: some text, then Enter or Escape
            out += list(rng.choice(FILTER_TEXT))
            out.append(rng.choice(["enter", "escape"]))
    return out


def _text(widget: Static) -> str:
    return str(widget.render())


def check(app: Any, trail: list[str]) -> None:
    """The invariants of the module docstring (``trail``: the keys so far, for the message)."""
    where = f"after {' '.join(trail[-40:])!r}"
    assert app.is_running, where
    ids = [n.id for n in app.screen.walk_children(with_self=True) if n.id]
    dupes = {i for i in ids if ids.count(i) > 1}
    assert not dupes, f"duplicate ids {dupes} {where}"
    screen = app.screen
    selected = app.selected_row
    if isinstance(screen, RatiosScreen):
        row = screen.query_one(RatioTable).current_row
        detail = screen.query_one("#detail", Static)
        if row is not None and detail.display:
            assert _text(detail).startswith(row.params), where
        if row is not None:
            assert selected is not None and selected.params == row.params, where
    elif isinstance(screen, TimelineScreen) and selected is not None and not screen.live_running:
        assert screen.row is not None and screen.row.params == selected.params, where
    elif isinstance(screen, IRDiffScreen) and selected is not None and app.data.ir_pairs:
        assert screen.pair_index == screen.selected_pair_index(), where
    elif isinstance(screen, HistoryScreen) and selected is not None and screen.history is not None:
        if selected.params in screen.history.configs():
            assert screen.params == selected.params, where


async def storm(kernel: str, size: tuple[int, int], seed: int, bursts: int) -> None:
    rng = random.Random(seed)
    app = make_app(_data(kernel))
    trail: list[str] = []
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for _ in range(bursts):
            if rng.random() < 0.08:  # a resize between bursts (the other size of the two)
                await pilot.resize_terminal(*rng.choice(SIZES))
                trail.append("<resize>")
            while not isinstance(app.screen, (RatiosScreen, *_mode_screens())):  # a modal: answer it
                type_fast(pilot, "escape")
                trail.append("escape")
                await settle(pilot)
            keys = _burst(rng)
            trail += keys
            type_fast(pilot, *keys)
            await settle(pilot)
            check(app, trail)
        await pilot.press("ctrl+q")
    assert app.return_code in (None, 0)


def _mode_screens() -> tuple[type, ...]:
    from cutile_workbench.tui.screens.checks import ChecksScreen
    from cutile_workbench.tui.screens.report import ReportScreen

    return (TimelineScreen, IRDiffScreen, ReportScreen, ChecksScreen, HistoryScreen)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("kernel", ["matmul", "rms_norm"])
async def test_key_storm(kernel: str, size: tuple[int, int]) -> None:
    await storm(kernel, size, seed=34, bursts=20)


@pytest.mark.slow
# The failures these found (matmul-*-0: selection drift after v / Esc typed fast; rms_norm-*-4: a
# screen mounting as the app quits) are each a short test in test_tui_storm_cases.py.
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("kernel", ["matmul", "rms_norm", "softmax", "silu_and_mul"])
async def test_key_storm_long(kernel: str, size: tuple[int, int], seed: int) -> None:
    await storm(kernel, size, seed=seed, bursts=150)
