"""A TUI open/close writes nothing under the out root (issue 33 §2, issue 30 item 4).

REAL: the recorded matmul session (H200) copied to an out root with the store a recording command
leaves; SYNTHETIC: the same store downgraded to the previous schema (version 1), which the old code
migrated on open. Every screen is visited (1-6), then the app quits.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from pilot_wait import until
from textual.worker import WorkerState

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.history.query import open_history
from cutile_workbench.tui.app import MODE_KEYS, make_app
from cutile_workbench.tui.loaders import load_app_data

ROOT = Path(__file__).resolve().parent.parent.parent
RECORDED = ROOT / "cutile_workbench" / "profiles" / "tilegym" / "session"


def _tree(root: Path) -> dict[str, bytes | str]:
    return {
        str(p.relative_to(root)): (
            p.read_bytes() if p.is_file() and not p.is_symlink() else f"{p.lstat().st_mode:o}"
        )
        for p in sorted(root.rglob("*"))
    }


def _loads_done(app: object) -> bool:
    """Every worker the screens started has ended (a screen's reads happen in its loader workers)."""
    ended = (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED)
    return all(worker.state in ended for worker in app.workers)  # type: ignore[attr-defined]


@pytest.mark.parametrize("schema", [2, 1])
async def test_open_visit_every_screen_close_leaves_the_out_root_byte_identical(
    tmp_path: Path, schema: int
) -> None:
    out = tmp_path / "root"
    shutil.copytree(RECORDED / "matmul", out / "matmul")
    store, _ = open_history(KernelPaths.under(out, "matmul"), source="out_root", persist=True)
    store.close()
    if schema == 1:
        with sqlite3.connect(out / "matmul" / "workbench" / "history.sqlite") as conn:
            conn.execute("DROP TABLE comparisons")
            conn.execute("DELETE FROM schema_migrations WHERE version > 1")
        conn.close()
    before = _tree(out)
    app = make_app(load_app_data("matmul", out_root=out, tilegym=None, env={}), prewarm=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(
            pilot, lambda: app.current_mode == "ratios" and _loads_done(app), "the Ratios screen loaded"
        )
        for key in "234561":
            await pilot.press(key)
            mode = MODE_KEYS[key]
            await until(
                pilot,
                lambda mode=mode: app.current_mode == mode and _loads_done(app),
                f"the {mode} screen loaded",
            )
        await pilot.press("ctrl+q")
    # leaving run_test waited for the app to exit: every reader it started has closed
    assert _tree(out) == before
