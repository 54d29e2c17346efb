"""Issue #34: the Ratios table's work per key, COUNTED (never timed: the box is loaded).

A sort or a reverse reorders the rows already in the table (no ``add_row``); each row's cell texts
are built once for the table's data (a sort, filter, slow-only or variant tab reuses them); the
screen's cursor follower runs once per key, not once per row added; the footer is recomposed only
when a key's enabled state changes. And the cheap paths show exactly what a full rebuild shows
(labels, widths, rows, order), on the REAL recorded sessions.

SYNTHETIC ``tui_synthetic.big_table`` (300 configs of realistic shape) where a count needs more
rows than a screen holds: the recorded sessions have 4-7 configs.
"""

from __future__ import annotations

import gc
from dataclasses import replace
from typing import Any

import pytest
import tui_synthetic as syn
from pilot_wait import settle, type_fast
from textual.screen import Screen

from cutile_workbench.tui import chrome
from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.data import AppData
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.screens import ratios as ratios_screen
from cutile_workbench.tui.widgets import ratio_table
from cutile_workbench.tui.widgets.ratio_table import COLUMN_KEYS, RatioTable

N = 300


def _big_app() -> Any:
    return make_app(AppData(kernel="rms_norm", source="synthetic", gpu="test", table=syn.big_table(N)))


def _count(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Count the calls of ``owner.name`` (the real one still runs): a spy, not a stand-in."""
    calls = [0]
    real = getattr(owner, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return calls


def _shown(table: RatioTable) -> list[list[str]]:
    """What the table shows: every row's cell texts in display order."""
    return [[cell.plain for cell in table.get_row_at(i)] for i in range(table.row_count)]


def _layout(table: RatioTable) -> dict[str, object]:
    """Labels, widths and rows as the DataTable holds them (what a full rebuild would give)."""
    return {
        "labels": [(str(c.key.value), c.label.plain, c.width) for c in table.ordered_columns],
        "rows": _shown(table),
        "keys": [str(r.key.value) for r in table.ordered_rows],
        "cursor": table.cursor_row,
    }


async def _fresh_layout(pilot: Any, table: RatioTable) -> dict[str, object]:
    """The layout a full rebuild from scratch gives for the same view state and cursor row."""
    table._rebuild(fresh=True)
    await settle(pilot)
    return _layout(table)


async def test_sort_and_reverse_reorder_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every sort key and a reverse: no row re-added (before: a rebuild, ``add_row`` per row of
    the first batch and the rest appended, for every key whose mark did not fit its column)."""
    app = _big_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RatioTable)
        added = _count(monkeypatch, RatioTable, "add_row")
        for key in ["s"] * len(COLUMN_KEYS) + ["r", "s", "r"]:
            before = (table.sort_key, table.reverse)
            await pilot.press(key)
            await settle(pilot)
            assert (table.sort_key, table.reverse) != before
            want = ratio_table.visible_rows(
                syn.big_table(N).rows, sort_key=table.sort_key, reverse=table.reverse
            )
            assert [str(r.key.value) for r in table.ordered_rows] == [ratio_table.row_key(r) for r in want]
        assert added[0] == 0


async def test_row_texts_built_once_per_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mount, every sort, a filter typed and erased, slow only, a variant tab: each row's texts
    are built once (before: every rebuild built every shown row's texts again)."""
    texts = _count(monkeypatch, ratio_table, "_row_texts")
    app = _big_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RatioTable)
        for key in ["s"] * 4 + ["r", "o", "o", "v", "v"]:
            await pilot.press(key)
            await settle(pilot)
        type_fast(pilot, "slash", "8", "8", "backspace", "backspace", "1")
        await settle(pilot)
        assert table.filter_text == "1"
        assert texts[0] == N


async def test_cursor_follower_runs_once_per_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The detail line is rebuilt a few times per key, not once per row added (before: ``add_row``
    re-set the cursor for every row, and each set ran the screen's follower: ~80 per rebuild)."""
    details = _count(monkeypatch, ratios_screen.RatiosScreen, "update_detail")
    app = _big_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        keys = ["s", "s", "r", "o", "o"]
        details[0] = 0
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        assert details[0] <= 4 * len(keys)


async def test_footer_recomposed_only_when_a_key_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sorting changes no key's enabled state: the footer is left alone (before: recomposed twice
    per key, ~35 widgets restyled each time). An empty filter result disables ``t``: recomposed."""
    app = _big_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        recomposed = _count(monkeypatch, chrome.WorkbenchFooter, "recompose")
        for key in ["s", "s", "r", "s"]:
            await pilot.press(key)
            await settle(pilot)
        assert recomposed[0] == 0
        type_fast(pilot, "slash", "x", "y", "z", "q")
        await settle(pilot)
        assert app.screen.query_one(RatioTable).shown_rows == []
        assert recomposed[0] >= 1


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_end_scrolls_the_last_row_into_view(size: tuple[int, int]) -> None:
    """G on a table taller than the screen scrolls to the last row (before: the table's virtual
    size stayed 0x0 after the fast width pass, so it never scrolled and the cursor left the screen)."""
    app = _big_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RatioTable)
        await pilot.press("G")
        await settle(pilot)
        assert table.cursor_row == N - 1
        assert table.max_scroll_y > 0
        assert table.scroll_y + table.scrollable_content_region.height >= N  # the last row is in view
        await pilot.press("s")  # a sort keeps the cursor's row, scrolled to where it now is
        await settle(pilot)
        row = table.cursor_row
        assert table.scroll_y <= row < table.scroll_y + table.scrollable_content_region.height


@pytest.mark.parametrize("kernel", ["matmul", "rms_norm"])
@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_cheap_paths_show_what_a_rebuild_shows(kernel: str, size: tuple[int, int]) -> None:
    """After each key (sorts, reverse, moves, filter, slow only, variant tab) on a REAL session, the
    table equals a full rebuild from scratch of the same view: labels, widths, rows, order, cursor."""
    app = make_app(load_app_data(kernel, out_root=None, tilegym=None, env={}))
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RatioTable)
        steps = [
            *[["s"]] * (len(COLUMN_KEYS) + 1),
            ["r"],
            ["down", "down", "s"],
            ["o"],
            ["s", "r"],
            ["o"],
            ["v"],
            ["s"],
            ["v", "v"],
            ["slash", "2"],
            ["backspace", "4"],
            ["escape"],
        ]
        for keys in steps:
            type_fast(pilot, *keys)
            await settle(pilot)
            seen = _layout(table)
            assert seen == await _fresh_layout(pilot, table), keys


async def test_set_rows_keeps_the_cursor_config_and_rebuilds_the_cells() -> None:
    """New row objects for the same configs (a reload): the cursor stays on its config and the
    cells show the new numbers (the per-row caches start again; REAL matmul session)."""
    app = make_app(load_app_data("matmul", out_root=None, tilegym=None, env={}))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RatioTable)
        await pilot.press("down", "down")
        await settle(pilot)
        before = table.current_row
        assert before is not None
        fresh = [replace(r, candidate_ms=(r.candidate_ms or 0.0) + 1.0) for r in table.shown_rows]
        table.set_rows(fresh)
        await settle(pilot)
        assert table.current_row is not None and table.current_row.params == before.params
        assert table.current_row is fresh[[r.params for r in fresh].index(before.params)]
        want = ratio_table.row_cells(table.current_row)[COLUMN_KEYS.index("cand_ms")].plain
        assert want in [cell.plain for cell in table.get_row_at(table.cursor_row)]


async def test_the_session_is_out_of_the_gc_scans_before_the_rows_are_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Building the rows allocates ~10 cells each; the loaded session is frozen out of the cyclic
    GC's scans by then (before: frozen only at the app's on_ready, later, so those allocations set
    off a full collection over the whole session between the first frame and the first key:
    0.18 s at 1,000 configs on the loaded box)."""
    data = AppData(kernel="rms_norm", source="synthetic", gpu="test", table=syn.big_table(N))
    scanned: list[bool] = []
    real = RatioTable._add_rows

    def spy(self: RatioTable, *args: Any) -> None:
        # frozen objects are in no generation; an unfrozen session is in one
        scanned.append(any(obj is data.table for obj in gc.get_objects()))
        real(self, *args)

    monkeypatch.setattr(RatioTable, "_add_rows", spy)
    gc.unfreeze()  # earlier tests' apps froze their sessions: start from nothing frozen
    app = make_app(data)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app.screen.query_one(RatioTable).row_count == N
    assert scanned and not any(scanned)


def test_gc_freeze_is_called_in_one_place() -> None:
    """``gc.freeze`` is process-wide: one call, in the app's ``_freeze_session`` (run where the app
    mounts with its loaded data, before any screen builds from it, or once the whole session is in
    after a quick first screen), justified by bench/tui_keys.py --gc-freeze-ab (BENCHMARKS §13).
    Before: three calls (the app's on_ready, Ratios' compose, every config the Timeline showed)."""
    import ast
    import pathlib

    import cutile_workbench

    root = pathlib.Path(cutile_workbench.__file__).parent
    calls = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "freeze"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "gc"
                ):
                    calls.append(f"{path.relative_to(root)}:{fn.name}")
    assert calls == ["tui/app.py:_freeze_session"]


async def test_every_row_is_in_the_table_at_the_first_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    """No row work left for after the first frame, where it delays the first key (before: a
    screenful first, the rest appended right after the frame, with a relayout for the scrollbar;
    appending is cheap now, so the deferral cost the first key more than it saved the frame)."""
    at_first_frame: list[int] = []
    real = Screen._compositor_refresh

    def spy(self: Screen[Any]) -> None:
        if isinstance(self, ratios_screen.RatiosScreen) and not at_first_frame:
            at_first_frame.append(self.query_one(RatioTable).row_count)
        real(self)

    monkeypatch.setattr(Screen, "_compositor_refresh", spy)
    app = _big_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
    assert at_first_frame == [N]
