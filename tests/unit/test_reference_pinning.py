"""Issue 32: the reference's config pinned knob by knob (symbol constants, cluster dims, grid formula).

The reference wrapper is TileGym's real cuTile ``bmm.py`` (the snapshot in .fetched/TileGym); its
configs are the real sm_90 ones (TILE_M/N in 64..256, TILE_K 64, occupancy 1|2, num_ctas 2). The
captured launch of each case is SYNTHETIC, shaped like the real H200 one the issue quotes
(grid 264 blocks, cluster (2, 1, 1), 132 SMs for q=2, 2048^3, tile 256x128x64): with it the grid
formula leaves one occupancy; without the SM count it stays open and says why.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tilegym_snapshot

from cutile_workbench.evidence.reference_config import (
    ReferenceConfig,
    evaluate_grid,
    grid_functions,
    params_env,
    pin_by_launch,
    sm_count_for,
)
from cutile_workbench.evidence.search_space import TuneConfig

BMM = tilegym_snapshot.SNAPSHOT / "src" / "tilegym" / "ops" / "cutile" / "bmm.py"
ARGS = ("q", "m", "n", "k", "transpose_a", "transpose_b", "dtype")
P = "2-2048-2048-2048-False-False-torch.float16"


@pytest.fixture
def bmm_source() -> Path:
    if not BMM.is_file():
        if tilegym_snapshot.snapshot_required():
            pytest.fail("TileGym snapshot required but bmm.py is absent")
        pytest.skip("TileGym snapshot absent")
    return BMM


def _fits() -> tuple[TuneConfig, ...]:
    return tuple(
        TuneConfig.of(
            {"TILE_M": 256, "TILE_N": 128, "TILE_K": 64, "GROUP_SIZE_M": 8, "occupancy": occ, "num_ctas": 2},
            f"bmm.py:47 occupancy={occ}",
        )
        for occ in (1, 2)
    )


def _rc() -> ReferenceConfig:
    return ReferenceConfig(
        P,
        "cutile",
        "_static_persistent_bmm_kernel_Kt1_x",
        (("TILE_M", 256), ("TILE_N", 128), ("TILE_K", 64)),
        "the @ct.kernel signature",
        _fits(),
        "src/tilegym/ops/cutile/bmm.py:18 _bmm_autotune_configs()",
        open_knobs=("occupancy",),
    )


def test_the_real_grid_fn_evaluates_statically(bmm_source: Path) -> None:
    fns = grid_functions(bmm_source)
    assert [f.name for f in fns] == ["grid_fn"]
    env = params_env(ARGS, P)
    assert env["q"] == 2 and env["m"] == 2048 and env["transpose_a"] is False
    # min(132 // 2, 8 * 16 * 2) * occupancy programs
    assert [evaluate_grid(fns[0], c, env, 132) for c in _fits()] == [(66,), (132,)]


def test_grid_and_cluster_pin_occupancy_and_num_ctas(bmm_source: Path) -> None:
    fns = [(f, f"src/tilegym/ops/cutile/bmm.py:{f.lineno}") for f in grid_functions(bmm_source)]
    rc = pin_by_launch(
        _rc(), grid=(264, 1, 1), cluster=(2, 1, 1), grid_fns=fns, env=params_env(ARGS, P), num_sms=132
    )
    assert len(rc.fits) == 1 and rc.fits[0].get("occupancy") == 2 and rc.open_knobs == ()
    assert rc.decided and rc.config is not None and rc.config.get("occupancy") == 2
    assert any(p.startswith("occupancy=2: grid_fn (src/tilegym/ops/cutile/bmm.py:") for p in rc.pinned)
    assert any(p.startswith("num_ctas=2: CUPTI's cluster dims (2, 1, 1)") for p in rc.pinned)
    assert "(pinned: " in rc.text and "open:" not in rc.text
    # the other occupancy on its own grid
    one = pin_by_launch(
        _rc(), grid=(132, 1, 1), cluster=(2, 1, 1), grid_fns=fns, env=params_env(ARGS, P), num_sms=132
    )
    assert one.fits[0].get("occupancy") == 1


def test_without_the_sm_count_the_knob_stays_open_and_says_why(bmm_source: Path) -> None:
    fns = [(f, "bmm.py") for f in grid_functions(bmm_source)]
    rc = pin_by_launch(
        _rc(), grid=(264, 1, 1), grid_fns=fns, env=params_env(ARGS, P), num_sms=sm_count_for("Tesla X")
    )
    assert len(rc.fits) == 2 and rc.open_knobs == ("occupancy",) and not rc.decided
    assert any("the GPU's SM count is unknown" in u for u in rc.unknown)
    assert sm_count_for("NVIDIA H200") == 132


def test_a_grid_no_config_gives_is_reported_not_forced(bmm_source: Path) -> None:
    fns = [(f, "bmm.py") for f in grid_functions(bmm_source)]
    rc = pin_by_launch(
        _rc(), grid=(999, 1, 1), cluster=(2, 1, 1), grid_fns=fns, env=params_env(ARGS, P), num_sms=132
    )
    assert len(rc.fits) == 2 and any(
        "gives no fitting config the captured grid (999, 1, 1)" in u for u in rc.unknown
    )


def test_the_reference_autotuners_own_record_pins_what_it_chose() -> None:
    """REAL winner: the reference's exhaustive_search table of the H200 run (tests/fixtures/attribution)."""
    from cutile_workbench.artifacts.events import read_events
    from cutile_workbench.evidence.autotune import tables_from_events
    from cutile_workbench.evidence.reference_config import parse_config_repr, pin_by_autotune

    fix = Path(__file__).resolve().parents[1] / "fixtures" / "attribution" / "bmm_autotune_events.jsonl"
    table = tables_from_events(read_events(fix))[(P, "reference")]
    assert table.winner is not None
    assert parse_config_repr(table.winner.config) == {
        "TILE_M": 256,
        "TILE_N": 128,
        "TILE_K": 64,
        "GROUP_SIZE_M": 8,
        "occupancy": 2,
        "num_ctas": 2,
    }
    rc = pin_by_autotune(_rc(), table.winner.config, "workbench/events.jsonl")
    assert len(rc.fits) == 1 and rc.fits[0].get("occupancy") == 2 and rc.open_knobs == ()
    assert rc.pinned == ("occupancy=2: the reference's own autotune record (workbench/events.jsonl)",)
    # a record that matches every fit, or none, changes nothing
    assert pin_by_autotune(_rc(), "namespace(TILE_M=256)", "x") == _rc()
    assert pin_by_autotune(_rc(), "namespace(TILE_M=64, occupancy=2)", "x") == _rc()
