"""``L`` and ``G`` run the doctor's preflight first (issue 36): a child Python without pytest is refused
with the doctor's line and nothing starts.

The child Python is SYNTHETIC: a ``venv --without-pip`` (no pytest), made the child through
``sys.executable`` as the TUI's re-runs use it. The runners are the suite's scripted/spy stand-ins.
The tests wait for the state they assert (``pilot_wait``), never for a fixed pause (issue #35).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pilot_wait import until
from tui_helpers import ScriptedRunner, make_data

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.screens.ratios import RatiosScreen


@pytest.fixture
def bare_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    monkeypatch.setattr(sys, "executable", py)
    return py


def _messages(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications]


def _ratios_shown(app: Any) -> bool:
    """The Ratios screen is current and mounted (a row highlighted for the re-run keys)."""
    return isinstance(app.screen, RatiosScreen) and app.screen.is_mounted


def _refused(app: Any) -> bool:
    """The preflight's refusal was notified."""
    return any("FAIL pytest in the child" in m for m in _messages(app))


async def test_live_rerun_refused_without_pytest_in_the_child(bare_python: str) -> None:
    runner = ScriptedRunner([])
    app = make_app(make_data(runner=runner))
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: _ratios_shown(app), "the Ratios screen first")
        await pilot.press("L")
        await until(pilot, lambda: _refused(app), "L refused by the preflight")
        assert runner.calls == []  # nothing ran
        assert any(
            "FAIL pytest in the child" in m and f"{bare_python} -m pip install pytest" in m
            for m in _messages(app)
        )


async def test_sharded_rerun_refused_without_pytest_in_the_child(bare_python: str) -> None:
    started: list[Any] = []
    data = make_data(runner=ScriptedRunner([]))
    data.sharded = lambda *a, **k: started.append(a)
    app = make_app(data, prewarm=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: _ratios_shown(app), "the Ratios screen first")
        await pilot.press("R")  # the sharded re-run (G is "last row", issue 34)
        await until(pilot, lambda: _refused(app), "R refused by the preflight")
        assert isinstance(app.screen, RatiosScreen)  # no panel pushed
        assert started == []
        assert any("FAIL pytest in the child" in m for m in _messages(app))


async def test_timeline_live_rerun_refused_without_pytest_in_the_child(bare_python: str) -> None:
    """The Timeline's L takes the same path (review finding 3b: one helper for the three re-run keys)."""
    from cutile_workbench.tui.modals import ConfirmModal
    from cutile_workbench.tui.screens.timeline import TimelineScreen

    runner = ScriptedRunner([])
    app = make_app(make_data(runner=runner))
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: _ratios_shown(app), "the Ratios screen first")
        await pilot.press("enter")  # the Timeline of the highlighted row (not live)
        await until(pilot, lambda: isinstance(app.screen, TimelineScreen), "the Timeline")
        await pilot.press("L")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), "L asks first")
        await pilot.press("y")
        await until(pilot, lambda: any("FAIL pytest in the child" in m for m in _messages(app)), "refusal")
        screen = app.screen
        assert isinstance(screen, TimelineScreen) and not screen.live_running
        assert runner.calls == []  # nothing ran
