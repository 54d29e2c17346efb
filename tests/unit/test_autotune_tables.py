"""Issue 32: both sides' autotune tables (SYNTHETIC stand-ins for cuda.tile's tuner and the event
stream; the real tables come from the H200 run in bench/gpu_runs/2026-12-02).

The reference's ``exhaustive_search`` twin returns the original's result unchanged and emits its table;
the reader names winner, runner-up and margin, and "winner unstable" when the margin is inside the
two measurements' noise.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from cutile_workbench.evidence.autotune import tables_from_events
from cutile_workbench.run.capture import autotune_tables


def test_the_twin_returns_the_original_result_and_emits_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    m = types.SimpleNamespace
    result = m(
        best=None,
        successes=[
            m(config={"TILE_M": 256}, mean_us=45.6, error_margin_us=0.2, num_samples=40),
            m(config={"TILE_M": 128}, mean_us=45.7, error_margin_us=0.2, num_samples=40),
        ],
        failures=[({"TILE_M": 64}, RuntimeError, "compile timeout")],
    )
    calls: list[Any] = []

    def original(*args: Any, **kwargs: Any) -> Any:
        calls.append((args, kwargs))
        return result

    tune = types.ModuleType("cuda.tile.tune")
    setattr(tune, autotune_tables.ORIGINAL_ATTR, original)
    monkeypatch.setitem(sys.modules, "cuda", types.ModuleType("cuda"))
    monkeypatch.setitem(sys.modules, "cuda.tile", types.ModuleType("cuda.tile"))
    monkeypatch.setitem(sys.modules, "cuda.tile.tune", tune)
    emitted: list[tuple[str, dict[str, Any]]] = []
    from cutile_workbench.artifacts import events

    monkeypatch.setattr(events, "emit", lambda cfg, kind, **f: emitted.append((kind, f)) or True)
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/ops/test_bmm.py::T::test_perf[cutile-2-2048] (call)")
    kernel = types.SimpleNamespace(__name__="_static_persistent_bmm_kernel", replace_hints=lambda **k: None)
    got = autotune_tables.exhaustive_search([1, 2, 3], "stream", "grid", kernel, "args", hints_fn=None)
    assert got is result and calls == [(([1, 2, 3], "stream", "grid", kernel, "args"), {"hints_fn": None})]
    ((kind, f),) = emitted
    assert kind == "autotune" and f["side"] == "reference" and f["failures"] == 1
    assert f["kernel"] == "_static_persistent_bmm_kernel"
    assert [r["mean_us"] for r in f["rows"]] == [45.6, 45.7]
    table = tables_from_events([{"event": "autotune", **f}])[(f["params"], "reference")]
    assert table.winner is not None and table.winner.config == "{'TILE_M': 256}"
    assert table.stable is False and "winner unstable" in table.text and "1 failed" in table.text


def test_a_clear_winner_and_an_unknown_noise() -> None:
    ev = [
        {
            "event": "autotune",
            "params": "p",
            "side": "candidate",
            "kernel": "k",
            "rows": [{"config": "a", "mean_us": 739.2, "error_us": 1.0, "samples": 10}],
        },
        {
            "event": "autotune",
            "params": "p",
            "side": "candidate",
            "kernel": "k",
            "rows": [{"config": "b", "mean_us": 67.2, "error_us": 0.3, "samples": 10}],
        },
        {
            "event": "autotune",
            "params": "q",
            "side": "candidate",
            "kernel": "k",
            "rows": [
                {"config": "a", "mean_us": 5.0, "error_us": None},
                {"config": "b", "mean_us": 6.0},
                {"config": 3},
            ],
        },
    ]
    t = tables_from_events(ev)
    p = t[("p", "candidate")]
    assert p.winner is not None and p.winner.config == "b" and p.stable is True
    assert "runner-up `a` 739.20 us (+1000.0 %" in p.text and "unstable" not in p.text
    q = t[("q", "candidate")]
    assert len(q.rows) == 2 and q.stable is None and "noise unknown" in q.text


def test_real_h200_tables_bmm_and_matmul() -> None:
    """REAL: the autotune events of the H200 run (bench/gpu_runs/2026-12-02/tune, planted tree)."""
    from pathlib import Path

    from cutile_workbench.artifacts.events import read_events

    fix = Path(__file__).resolve().parents[1] / "fixtures" / "attribution"
    bmm = tables_from_events(read_events(fix / "bmm_autotune_events.jsonl"))
    ref = bmm[("2-2048-2048-2048-False-False-torch.float16", "reference")]
    # the reference's own tuner picked the config F pins from the symbol, cluster dims and grid
    assert len(ref.rows) == 18 and ref.winner is not None and ref.stable is True
    assert ref.winner.config.startswith(
        "namespace(TILE_M=256, TILE_N=128, TILE_K=64, GROUP_SIZE_M=8, occupancy=2"
    )
    cand = bmm[("2-2048-2048-2048-False-False-torch.float16", "candidate")]
    assert len(cand.rows) == 2 and cand.winner is not None and "BM=128, BN=256" in cand.winner.config
    # the fallback row (torch.bmm) never reached the cutile-rs autotuner
    assert ("8-2048-2048-2048-False-False-torch.float16", "candidate") not in bmm
    mm = tables_from_events(read_events(fix / "matmul_autotune_events.jsonl"))
    sp = mm[("True-True-False-False-2048-2048-2048-0-0-torch.float16", "reference")]
    assert sp.failures == 1 and "1 failed" in sp.text
