"""The TUI's confirmation for ``report f --demonstrate`` (issue 23 B): D on the Report screen.

Data: the REAL recorded matmul session (cutile-rs vs cuTile, H200), opened read-only as shipped and
as a copy in an out root; TileGym's real tree from the snapshot (.fetched, 75a1430). No GPU here: a
confirmed demonstration really runs the runner in the throwaway copy, which cannot run TileGym's
test_perf on this machine, so the plan must say the demonstration FAILED (with its log) and keep the
verdict FIXABLE — never pretend it ran.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pilot_wait import settle

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data

ROOT = Path(__file__).resolve().parents[2]
REC = ROOT / "cutile_workbench/profiles/tilegym/session/matmul"
TILEGYM = ROOT / ".fetched" / "TileGym"


def _said(app: object) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications]  # type: ignore[attr-defined]


async def test_demonstrate_on_the_recorded_session_says_why_not() -> None:
    app = make_app(load_app_data("matmul", out_root=None, tilegym=None, env={}), prewarm=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4", "D")
        await settle(pilot)
        assert any("Cannot demonstrate" in s and "read-only" in s for s in _said(app)), _said(app)


async def test_demonstrate_without_a_tilegym_checkout_says_so(tmp_path: Path) -> None:
    shutil.copytree(REC, tmp_path / "matmul")
    app = make_app(load_app_data("matmul", out_root=tmp_path, tilegym=None, env={}), prewarm=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4", "D")
        await settle(pilot)
        assert any("Cannot demonstrate" in s and "TileGym checkout" in s for s in _said(app)), _said(app)


@pytest.mark.skipif(
    not (TILEGYM / "src/tilegym/ops/cutile_rs/matmul.py").is_file(), reason="TileGym snapshot absent"
)
async def test_a_confirmed_demonstration_that_cannot_run_is_reported_as_failed(tmp_path: Path) -> None:
    from cutile_workbench.tui.modals import ConfirmModal

    shutil.copytree(REC, tmp_path / "matmul")
    data = load_app_data("matmul", out_root=tmp_path, tilegym=TILEGYM, env={})
    app = make_app(data, prewarm=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4", "D")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("y")
        await settle(pilot)  # the runner's worker tries and fails on this GPU-less machine
        plan = getattr(app.screen, "plan", None)
        assert plan is not None and plan.stage == "F" and plan.verdict == "FIXABLE"
        inv = next(f.content for f in plan.files if f.relpath.startswith("reports/perf_investigation_"))
        assert "## Demonstrated in a throwaway copy" in inv and "The demonstration FAILED" in inv
    assert (tmp_path / "matmul/workbench/demonstrate").is_dir()  # its log is kept beside the removed copy
