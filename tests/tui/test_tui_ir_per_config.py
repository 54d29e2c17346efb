"""IR screen on the recorded REAL cutile-rs matmul session: the pair shown is the IR the config
highlighted on Ratios actually ran (``workbench/ir/index.json``), with how each side was chosen."""

from __future__ import annotations

from pilot_wait import settle, until

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.widgets.ratio_table import RatioTable


async def test_ir_screen_follows_the_ratios_selection_to_its_recorded_pair() -> None:
    data = load_app_data("matmul", out_root=None, tilegym=None, env={})
    app = make_app(data)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RatioTable)
        while table.current_row is not None and not table.current_row.params.startswith(
            "True-True-False-False-4096"
        ):
            await pilot.press("down")
        assert app.selected_row is not None
        await pilot.press("3")
        await until(pilot, lambda: not app.ir_loading, "the IR pairs loaded")
        await settle(pilot)
        pair = app.data.ir_pairs[app.screen.pair_index]
        assert pair.config == "True-True-False-False-4096-4096-4096-0-0-torch.float16"
        assert pair.verdict == "FAIL_FIXABLE"  # num_cta 1 vs 4, accumulator 128x128 vs 128x512 (real)
        assert "autotuner's best config namespace(BM=128, BN=512, BK=64, NUM_CTAS=4" in pair.how
        assert "entry symbol is the kernel CUPTI recorded" in pair.how
        # variant pairs stay reachable with p; back on Ratios another config re-targets the screen
        await pilot.press("1")
        await pilot.press("up")
        await pilot.press("3")
        await settle(pilot)
        assert app.data.ir_pairs[app.screen.pair_index].config == app.selected_row.params


async def test_shape_hunks_of_a_config_pair_show_its_launch_evidence() -> None:
    """Real session: on the static_persistent config the top hunk (num_cta 1 vs 4) is shown with the
    launches that config recorded (smem 196760 B for cuTile, 229600 B for cutile-rs)."""
    data = load_app_data("matmul", out_root=None, tilegym=None, env={})
    app = make_app(data)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(RatioTable)
        while table.current_row is not None and not table.current_row.params.startswith(
            "True-True-False-False-4096"
        ):
            await pilot.press("down")
        await pilot.press("3")
        await until(pilot, lambda: not app.ir_loading, "the IR pairs loaded")
        await settle(pilot)
        launch = str(app.screen.query_one("#hunk-launch").render())
        assert "smem 196760 B" in launch and "smem 229600 B" in launch and "grid 132x1x1" in launch
