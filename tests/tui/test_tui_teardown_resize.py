"""Quit right after a resize, keys typed with no wait: the app tears down without an error.

Textual 8.2.8's ``Tabs._on_resize`` queries its ``Underline`` child, so a resize that lands while a
screen with tabs (Ratios' variant tabs, the Report preview's tabs) is being removed raises
``NoMatches``. The app used to patch that private method in place (``textual_fixes.py``), because the
start-up pre-warm mounted and tore down every screen. With screens mounted on first visit (issue #34)
the race is gone, and so is the patch: this test types a fast user's keys (``4`` Report, ``f`` its F
tab), resizes and quits in the same breath on two real embedded sessions at two sizes, with no
private Textual API involved. A crash on teardown would surface as an exception from ``run_test``.
"""

from __future__ import annotations

import pytest

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data


@pytest.mark.parametrize("kernel", ["matmul", "rms_norm"])
@pytest.mark.parametrize("keys", [(), ("4",), ("4", "f"), ("1", "4", "1")])
@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_quit_right_after_a_resize_tears_down_cleanly(
    kernel: str, keys: tuple[str, ...], size: tuple[int, int]
) -> None:
    app = make_app(load_app_data(kernel, out_root=None, tilegym=None, env={}))
    async with app.run_test(size=size) as pilot:
        for key in keys:
            await pilot.press(key)  # no wait between keys: a fast typist
        await pilot.resize_terminal(size[0] + 21, size[1] + 7)
        await pilot.press("ctrl+q")
    assert app.return_code in (None, 0)
