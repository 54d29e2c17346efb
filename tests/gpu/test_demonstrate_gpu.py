"""``report f matmul --demonstrate`` on REAL cutile-rs (``-m gpu``; skipped without a GPU or a built library).

The recorded matmul session's static_persistent rows run 1.73-2.04x the reference because the
reference's TILE 128x128x64 (num_ctas 1) is absent from the cutile-rs search space. F adds it to
``_static_persistent_configs()`` in a throwaway copy of ``$TILEGYM_PATH`` and re-runs those three
configs of TileGym's own test_perf with the workbench harness; the real tree must be unchanged and
every re-run config must come out faster than before. ``$WB_DEMO_OUT`` (optional) receives the
demonstration as JSON for BENCHMARKS.md.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

LIB = "src/tilegym/ops/cutile_rs/cutile_kernels/target/release/libcutile_kernels.so"
REC = Path(__file__).resolve().parents[2] / "cutile_workbench/profiles/tilegym/session/matmul"


@pytest.mark.gpu
def test_demonstrated_fix_closes_the_matmul_static_persistent_gap(tmp_path: Path) -> None:
    tg = Path(os.environ.get("TILEGYM_PATH", ""))
    if not (tg / LIB).is_file():
        pytest.skip(f"no built cutile-rs library under $TILEGYM_PATH ({tg / LIB})")
    from cutile_workbench.services import stage_f
    from cutile_workbench.services.demonstrate import tree_sha256

    root = tmp_path / "out"
    shutil.copytree(REC, root / "matmul")
    before = tree_sha256(tg)
    ws = stage_f.open_kernel("matmul", out_root=root, tilegym=tg)
    report = stage_f.plan(
        ws, run_real_scripts=False, demonstrate=stage_f.DemonstrateRequest(timeout_s=420, keep_overlay=False)
    )
    demo = report.demonstration
    assert demo is not None
    if os.environ.get("WB_DEMO_OUT"):
        Path(os.environ["WB_DEMO_OUT"]).write_text(
            json.dumps(dataclasses.asdict(demo), indent=1, default=str)
        )
        (root / "matmul" / demo.run_log).replace(Path(os.environ["WB_DEMO_OUT"]).with_suffix(".log"))
    assert demo.status == "done", demo.reason
    assert tree_sha256(tg) == before == demo.tree_sha256_after
    assert len(demo.outcomes) == 3
    for o in demo.outcomes:
        assert o.after_ms is not None and o.before_ms is not None and o.after_ms < o.before_ms, o
    assert report.plan.verdict == "FIXABLE"
