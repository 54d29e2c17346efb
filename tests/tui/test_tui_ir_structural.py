"""IR screen on the REAL recorded matmul static_persistent pair (cuTile vs cutile-rs printers):
hunks in rank order, cosmetic hunks folded by z, / search in both panes, audit rows that show both
values and jump to their hunk."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pilot_wait import settle, until

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.data import AppData
from cutile_workbench.tui.ir_rows import build_ir_pair
from cutile_workbench.tui.widgets.audit_panel import AuditPanel, item_text
from cutile_workbench.tui.widgets.ir_diff_view import IRDiffView
from tests.tui_helpers import make_data

MATMUL = Path(__file__).resolve().parents[2] / "cutile_workbench/profiles/tilegym/session/matmul"


def _data() -> AppData:
    pair = build_ir_pair(
        "static_persistent",
        (MATMUL / "reference/reference_static_persistent.mlir").read_text(),
        (MATMUL / "generated/generated_static_persistent.mlir").read_text(),
        ref_label="reference_static_persistent.mlir",
        gen_label="generated_static_persistent.mlir",
    )
    return replace(make_data(), ir_pairs=[pair])


async def test_n_walks_hunks_in_rank_order_z_folds_cosmetic_and_search_marks_both_panes() -> None:
    app = make_app(_data())
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("3")
        await until(pilot, lambda: app.current_mode == "irdiff", "the IR Diff screen")
        view = app.screen.query_one(IRDiffView)
        await until(pilot, lambda: view.hunk_count > 0, "the IR pairs are loaded")
        await settle(pilot)
        pair = app.data.ir_pairs[0]
        assert pair.structure == "different" and view.folded
        assert not any(r.cosmetic for r in view.rows)  # cosmetic hunks folded by default
        row = view.rows[view.cursor]  # the screen opens on the top-ranked hunk
        assert (
            view.current_hunk == 0 and "num_cta_in_cga = 1" in row.left and "num_cta_in_cga = 4" in row.right
        )
        await pilot.press("n", "N")
        title = str(app.screen.query_one("#pair-title").render())
        assert "hunk 1/" in title and "tile/CTA shape" in title and "audit: num_cta" in title
        audit = app.screen.query_one(AuditPanel)
        assert audit.current_item is not None and audit.current_item.attribute == "num_cta"
        seen = [view.current_hunk]
        for _ in range(6):
            await pilot.press("n")
            seen.append(view.current_hunk)
        assert seen == sorted(seen) and pair.hunks[seen[-1]][0] != ""  # rank order, one by one
        await pilot.press("N")
        assert view.current_hunk == seen[-2]
        # z: unfold shows the cosmetic rows, n then also visits cosmetic hunks
        await pilot.press("z")
        assert not view.folded and any(r.cosmetic for r in view.rows)
        await pilot.press("z")
        # / search in both panes: "512" only exists on the generated side, "128x64" on both
        await pilot.press("slash")
        for ch in "128x512":
            await pilot.press(ch)
        await pilot.press("enter")
        await until(pilot, lambda: view.search_text == "128x512", "the search is applied")
        assert app.focused is view and view.search_text == "128x512"
        assert "128x512" in view.rows[view.cursor].right
        first = view.cursor
        await pilot.press("full_stop")
        assert view.cursor != first and "128x512" in view.rows[view.cursor].right
        await pilot.press("comma")
        assert view.cursor == first


async def test_audit_rows_show_both_values_and_jump_to_their_hunk() -> None:
    app = make_app(_data())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3")
        await until(pilot, lambda: app.current_mode == "irdiff", "the IR Diff screen")
        await until(pilot, lambda: app.screen.query_one(IRDiffView).hunk_count > 0, "the IR pairs are loaded")
        await settle(pilot)
        audit = app.screen.query_one(AuditPanel)
        item = next(i for i in audit.items if i.attribute == "tile_shapes")
        text = item_text(item).plain
        assert "ref tile<128x128xf16>" in text and "gen tile<128x512xf16>" in text
        assert item.hunk is not None
        await pilot.press("a")
        audit.highlighted = audit.items.index(item)
        await pilot.press("enter")
        view = app.screen.query_one(IRDiffView)
        await until(pilot, lambda: view.current_hunk == item.hunk, "Enter on the audit row jumps to its hunk")
        assert view.current_hunk == item.hunk
        assert app.data.ir_pairs[0].hunks[item.hunk][1] == "tile_shapes"
