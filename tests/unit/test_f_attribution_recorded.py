"""Issue 32 on REAL H200 recordings (bench/gpu_runs/2026-12-02, trimmed to 6 calls per set in
tests/fixtures/attribution): TileGym's real cutile-rs wrappers with three bugs planted by
bench/plant_bugs.py (silu_and_mul canary, matmul zeros in kernel_fn, bmm fallback for q >= 8) and real
bmm rows (q = 2) with no best_config. F must name the planted line for each, confirm static findings
only through attributed launches, pin the reference's bmm config with no open knob, and derive the
minimal edit for each bug. The TileGym tree is the snapshot with the same bugs planted (as on the GPU).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import tilegym_snapshot

from cutile_workbench.artifacts.workspace import open_workspace
from cutile_workbench.stages.f.actions import plan_line_edits
from cutile_workbench.stages.f.diagnosis import diagnose
from cutile_workbench.stages.f.inputs import collect_inputs
from cutile_workbench.stages.f.render import change_first

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "attribution"
PLANTED = {b["kernel"]: b for b in json.loads((ROOT / "bench/gpu_runs/2026-12-02/planted.json").read_text())}


@pytest.fixture(scope="module")
def planted_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (tilegym_snapshot.SNAPSHOT / "src").is_dir():
        if tilegym_snapshot.snapshot_required():
            pytest.fail("TileGym snapshot required")
        pytest.skip("TileGym snapshot absent")
    tg = tmp_path_factory.mktemp("tg") / "TileGym"
    shutil.copytree(tilegym_snapshot.SNAPSHOT / "src", tg / "src")
    shutil.copytree(tilegym_snapshot.SNAPSHOT / "tests", tg / "tests")
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import plant_bugs
    finally:
        sys.path.remove(str(ROOT / "bench"))
    got = {b["kernel"]: b for b in plant_bugs.plant(tg)}
    assert got == PLANTED  # the same lines as on the H200
    return tg


def _inputs(kernel: str, tg: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    shutil.copytree(FIX / kernel, tmp_path / kernel)
    ws = open_workspace(kernel, out_root=tmp_path, tilegym=tg)
    return ws, collect_inputs(ws)


def _where(kernel: str) -> str:
    return f"{PLANTED[kernel]['file']}:{PLANTED[kernel]['line']}"


def test_silu_canary_named_at_its_line_and_the_entry_line_not_confirmed(
    planted_tree: Path, tmp_path: Path
) -> None:
    _ws, inputs = _inputs("silu_and_mul", planted_tree, tmp_path)
    inv = diagnose(inputs)[0]
    assert inv.verdict == "FIXABLE"
    lc = next(f for f in inv.findings if f.kind == "launch_count")
    assert f"canary `silu_and_mul_kernel_entry` x1 issued at {_where('silu_and_mul')}" in lc.summary
    ws = [f for f in inv.findings if f.kind == "wrapper" and f.details.get("rule") == "canary_hot_path"]
    at = {int(f.details["line"]): f for f in ws}
    assert (
        at[97].fixable
        and at[97].confidence == "high"
        and "(confirmed: the attributed call issued 1" in at[97].summary
    )
    # the op's entry line (`_forward_impl(input)`) carries every launch: it confirms nothing
    others = [f for line, f in at.items() if line != 97]
    assert others and all(not f.fixable and "main kernel's own path" in f.summary for f in others)
    assert change_first(inv, inputs) is not None and _where("silu_and_mul") in str(change_first(inv, inputs))


def test_matmul_fill_named_at_the_zeros_line(planted_tree: Path, tmp_path: Path) -> None:
    _ws, inputs = _inputs("matmul", planted_tree, tmp_path)
    inv = diagnose(inputs)[0]
    lc = next(f for f in inv.findings if f.kind == "launch_count")
    assert f"fill `vectorized_elementwise_kernel<FillFunctor>` x1 issued at {_where('matmul')}" in lc.summary
    z = [f for f in inv.findings if f.kind == "wrapper" and f.details.get("rule") == "kernel_fn_alloc"]
    assert z and z[0].details["line"] == 156 and "(confirmed: the attributed call issued" in z[0].summary
    edits, _notes = plan_line_edits([inv], lambda rel: (planted_tree / rel).read_text())
    assert [e.kind for e in edits] == ["replace_alloc"]
    assert "+        out = torch.empty((m, n), device=a.device, dtype=out_dtype)" in edits[0].diff


def test_bmm_fallback_line_and_the_pinned_reference_config(planted_tree: Path, tmp_path: Path) -> None:
    _ws, inputs = _inputs("bmm", planted_tree, tmp_path)
    invs = {inv.scope: inv for inv in diagnose(inputs)}
    fb = invs["8-2048-2048-2048-False-False-torch.float16"]
    ident = next(f for f in fb.findings if f.kind == "identity")
    assert f"issued at {_where('bmm')} `return torch.bmm(a, b)" in ident.summary
    assert "nvjet_sm90" in ident.summary
    # real bmm rows: the tile from the symbol, num_ctas from CUPTI's cluster dims, occupancy from the
    # reference's grid_fn inverted on the captured grid (264 blocks): nothing left open
    assert inputs.trust is not None
    rc = inputs.trust.reference_configs["2-2048-2048-2048-False-False-torch.float16"]
    assert rc.decided and rc.open_knobs == () and rc.config is not None
    assert (rc.config.get("tile_m"), rc.config.get("tile_n"), rc.config.get("tile_k")) == (256, 128, 64)
    assert (rc.config.get("num_ctas"), rc.config.get("occupancy")) == (2, 2)
    assert any(p.startswith("occupancy=2: grid_fn") for p in rc.pinned)
    assert any(p.startswith("num_ctas=2: CUPTI's cluster dims (2, 1, 1)") for p in rc.pinned)
    real = invs["2-2048-2048-2048-False-False-torch.float16"]
    first = change_first(real, inputs)
    assert first is not None and first.startswith(
        "add the reference's config `group_size_m=8 num_ctas=2 occupancy=2"
    )
    edits, _notes = plan_line_edits(list(invs.values()), lambda rel: (planted_tree / rel).read_text())
    assert [e.kind for e in edits] == [
        "route_fallback"
    ] and "8-2048-2048-2048-False-False-torch.float16" in edits[0].params
    assert "-        return torch.bmm(a, b)  # PLANTED fallback" in edits[0].diff
