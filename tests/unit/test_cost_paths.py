"""No quadratic paths (issue 26): the work per E table grows with its rows, not rows × selections.

Data: SYNTHETIC analysis/rows (N selected shapes with named dimensions, N E rows); the counts are
of calls, never of time.
"""

from __future__ import annotations

import pytest

from cutile_workbench.artifacts.analysis import Analysis, ConfigGroup, ShapeConfig
from cutile_workbench.evidence import sol as sol_mod
from cutile_workbench.evidence.gpu import GpuFacts
from cutile_workbench.model import RatioRow, RatioTable

GPU = GpuFacts(name="H200 (synthetic facts)", capability=(9, 0), capability_source="synthetic")


def _analysis(n: int) -> Analysis:
    shapes = tuple(
        ShapeConfig(id=f"{i}-1024-torch.float16", params={"m": i + 1, "n": 1024, "dtype": "float16"})
        for i in range(n)
    )
    return Analysis(
        path="synthetic",
        kernel_name="softmax",
        launch_path=None,
        pattern=None,
        reference_backend="cutile",
        reference_backend_selection=None,
        test_perf_configs=(ConfigGroup("g", "t.py::T::test_perf", None, shapes),),
        kernel_variants=(),
        config_to_variant={},
        autotune_configs=(),
        autotune_key=(),
        best_config=None,
    )


def _table(n: int) -> RatioTable:
    rows = [
        RatioRow("t.py::T::test_perf", f"{i}-1024-torch.float16", None, "cutile", 1.0, 1.1, 1.1, "OK")
        for i in range(n)
    ]
    return RatioTable(kernel="softmax", rows=rows, geomean=1.1, severity="MILD_GAP", verdict="INVESTIGATE")


@pytest.mark.parametrize("n", [50, 400])
def test_sol_rows_parse_each_selected_id_once(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    real = sol_mod.split_nodeid

    def counting(nodeid: str):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return real(nodeid)

    monkeypatch.setattr(sol_mod, "split_nodeid", counting)
    analysis = _analysis(n)
    rows = sol_mod.sol_rows(_table(n), "softmax", GPU, analysis=analysis)
    assert len(rows) == n and rows[n - 1].model.family == "softmax"
    assert calls <= n + 1, f"{calls} split_nodeid calls for {n} rows: the shape lookup is not indexed"
    # the index is built once per analysis, not once per call
    sol_mod.sol_rows(_table(n), "softmax", GPU, analysis=analysis)
    assert calls <= n + 1


def test_indexed_lookup_keeps_the_first_match_rule() -> None:
    """SYNTHETIC: a shape id with a backend token and a bare one for the same params: the first wins,
    a shape without named dimensions is skipped (as the scan did)."""
    shapes = (
        ShapeConfig(id="x-1", params={}),
        ShapeConfig(id="cutile-x-1", params={"m": 7, "dtype": "float16"}),
        ShapeConfig(id="x-1", params={"m": 9, "dtype": "float16"}),
    )
    a = Analysis(
        path="s",
        kernel_name=None,
        launch_path=None,
        pattern=None,
        reference_backend=None,
        reference_backend_selection=None,
        test_perf_configs=(ConfigGroup("g", None, None, shapes),),
        kernel_variants=(),
        config_to_variant={},
        autotune_configs=(),
        autotune_key=(),
        best_config=None,
    )
    assert sol_mod.shape_of("x-1", a) == {"m": 7, "dtype": "float16"}
    assert sol_mod.shape_of("y-2", a, ["m", "n"]) == {"m": "y", "n": 2}
    assert sol_mod.shape_of("y-2", a) is None
