"""``L`` and ``G`` run the doctor's preflight first (issue 36): a child Python without pytest is refused
with the doctor's line and nothing starts.

The child Python is SYNTHETIC: a ``venv --without-pip`` (no pytest), made the child through
``sys.executable`` as the TUI's re-runs use it. The runners are the suite's scripted/spy stand-ins.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
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


async def test_live_rerun_refused_without_pytest_in_the_child(bare_python: str) -> None:
    runner = ScriptedRunner([])
    app = make_app(make_data(runner=runner))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("L")
        await pilot.pause()
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
        await pilot.pause()
        await pilot.press("R")  # the sharded re-run (G is "last row", issue 34)
        await pilot.pause()
        assert isinstance(app.screen, RatiosScreen)  # no panel pushed
        assert started == []
        assert any("FAIL pytest in the child" in m for m in _messages(app))
