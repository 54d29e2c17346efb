"""Issue 32 gap (E and F agreed on nothing): the reference's config pinned where trust is derived.

F pinned the reference's config knob by knob (symbol, CUPTI cluster dims, the reference's grid
function inverted on the captured grid) but only inside F's inputs, so E's table (``table --json``),
the TUI's Ratios detail and ``timeline`` still said "(open: occupancy)" for the same capture. On the
REAL H200 recording of bmm (tests/fixtures/attribution/bmm: q = 2 rows, no best_config, the real
cuTile ``bmm.py`` of the TileGym snapshot) every face must state the one pinned config.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import tilegym_snapshot

from cutile_workbench.artifacts.workspace import open_workspace

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "attribution"
REAL = (
    "2-2048-2048-2048-False-False-torch.float16",
    "2-4096-4096-4096-False-False-torch.float16",
)


@pytest.fixture
def bmm_ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    if not (tilegym_snapshot.SNAPSHOT / "src").is_dir():
        if tilegym_snapshot.snapshot_required():
            pytest.fail("TileGym snapshot required")
        pytest.skip("TileGym snapshot absent")
    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(tmp_path / "cache"))
    shutil.copytree(FIX / "bmm", tmp_path / "out" / "bmm")
    return open_workspace("bmm", out_root=tmp_path / "out", tilegym=tilegym_snapshot.SNAPSHOT)


def _pinned(rc) -> None:  # type: ignore[no-untyped-def]
    assert rc.decided and rc.open_knobs == (), rc.text
    assert (rc.config.get("num_ctas"), rc.config.get("occupancy")) == (2, 2)
    assert "open:" not in rc.text
    assert any(p.startswith("occupancy=2: grid_fn (src/tilegym/ops/cutile/bmm.py:") for p in rc.pinned)


def test_e_table_tui_and_timeline_state_the_pinned_config(bmm_ws) -> None:  # type: ignore[no-untyped-def]
    from cutile_workbench.services import stage_e
    from cutile_workbench.services.timeline import config_trust
    from cutile_workbench.stages.session.kernel import KernelSession

    trust = stage_e.trust(bmm_ws)  # what `table`, performance.md and the TUI's rows show
    for params in REAL:
        _pinned(trust.reference_configs[params])
    js = trust.as_dict()["reference_configs"][REAL[0]]
    assert js["decided"] and "open:" not in js["text"]
    one = config_trust("bmm", REAL[0], session=KernelSession.of(bmm_ws))  # timeline --config
    assert one.reference is not None and one.reference.text == trust.reference_configs[REAL[0]].text


def test_f_states_the_same_config_as_e(bmm_ws) -> None:  # type: ignore[no-untyped-def]
    from cutile_workbench.services import stage_e
    from cutile_workbench.stages.f.inputs import collect_inputs

    e_trust = stage_e.trust(bmm_ws)
    f_trust = collect_inputs(bmm_ws).trust
    assert f_trust is not None
    for params in REAL:
        assert f_trust.reference_configs[params].text == e_trust.reference_configs[params].text


def test_the_pinned_config_is_kept_per_config_and_served_warm(bmm_ws, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A second process-like open (a fresh workspace, the same user cache) reads the pinned config back."""
    from cutile_workbench.services import stage_e

    first = stage_e.trust(bmm_ws).reference_configs[REAL[0]]
    _pinned(first)
    again = open_workspace("bmm", out_root=tmp_path / "out", tilegym=tilegym_snapshot.SNAPSHOT)
    assert stage_e.trust(again).reference_configs[REAL[0]] == first
