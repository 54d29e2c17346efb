"""SVG snapshots of the Checks screen (mode 5) at 80x24 and 160x48, after a real run of the checks.

The tree is the SYNTHETIC one of ``tests/tui/test_tui_checks.py`` (autotuner import fails, test_perf
lacks cutile-rs, the wrapper has a canary); the checks run for real (child processes of this
Python). Deterministic: the tree's temporary path and the interpreter path are replaced by
``$TILEGYM_PATH`` / ``python`` in the rows before they reach the screen, workers are awaited.
Update only after looking at the report: ``pytest tests/tui/snapshots -k checks --snapshot-update``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pilot_wait import drain, settle, until
from test_tui_checks import ANALYSIS, CHILD_ENV, _tree
from tui_helpers import make_data

from cutile_workbench.services.checks import ChecksResult, gather_checks
from cutile_workbench.tui.app import make_app

SIZES = [(80, 24), (160, 48)]


def _pinned_runner(root: Path) -> Callable[[Callable[[], bool]], ChecksResult]:
    def run(cancelled: Callable[[], bool]) -> ChecksResult:
        result = gather_checks(
            "bmm", root, ANALYSIS, python=sys.executable, env=CHILD_ENV, cancelled=cancelled
        )
        subs = (
            (str(root.resolve()), "$TILEGYM_PATH"),
            (str(root), "$TILEGYM_PATH"),
            (sys.executable, "python"),
        )

        def pin(text: str) -> str:
            for old, new in subs:
                text = text.replace(old, new)
            return text

        items = tuple(
            dataclasses.replace(i, **{f.name: pin(getattr(i, f.name)) for f in dataclasses.fields(i)})
            for i in result.items
        )
        return dataclasses.replace(result, items=items, tilegym="$TILEGYM_PATH")

    return run


async def _run(pilot: Any) -> None:
    await settle(pilot)  # the Ratios screen loaded
    await pilot.press("5")
    await until(pilot, lambda: pilot.app.current_mode == "checks", "the Checks screen")
    await pilot.press("r")
    await drain(pilot)  # the key handled: the checks worker is among the workers now
    await pilot.app.workers.wait_for_complete()
    await settle(pilot)  # the checks' result rendered


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_checks_snapshot(snap_compare: Any, size: tuple[int, int], tmp_path: Path) -> None:
    root = _tree(tmp_path)
    data = make_data()
    data.kernel = "bmm"
    data.tilegym = Path("$TILEGYM_PATH")  # shown in the status line; the runner gets the real root
    data.run_checks = _pinned_runner(root)
    assert snap_compare(make_app(data), terminal_size=size, run_before=_run)
