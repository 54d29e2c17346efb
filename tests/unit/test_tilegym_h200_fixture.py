"""TileGym's own test_perf logs from the H200 (tests/fixtures/tilegym_h200, REAL): parse, match, compare.

The same 10 configs (5 shapes x cutile/triton, static_persistent fp16) measured by TileGym's harness
and by ours through ``--workbench-harness``: both logs parse strictly, carry TileGym's node ids, and
the medians agree within 2 % (the issue-3 target; 0.20 % seen). The launch records of the swapped run
load and say one launch per call.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cutile_workbench.artifacts.launches_io import load_launch_sets
from cutile_workbench.artifacts.perflog.parser import parse_perf_log

FIX = Path(__file__).parent.parent / "fixtures" / "tilegym_h200"
LOGS = ("baseline_perf_cutile.txt", "baseline_perf_triton_tileir.txt")


def _medians(run: str) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for name in LOGS:
        log = parse_perf_log(FIX / run / name, strict=True)
        assert not log.truncated
        for rec in log.records:
            assert rec.func_key == "tests/ops/test_rms_norm.py::Test_RMSNorm::test_perf"
            out[(rec.framework, rec.params)] = rec.phases["forward"].median_ms
    return out


def test_both_harnesses_measured_the_same_ten_configs_within_two_percent() -> None:
    plain, ours = _medians("plain"), _medians("harness")
    assert len(plain) == 10 and set(plain) == set(ours)
    assert {fw for fw, _ in plain} == {"cutile", "triton"}
    for key, median in plain.items():
        assert ours[key] == pytest.approx(median, rel=0.02), key


def test_only_the_swapped_run_has_raw_samples_and_launch_counts() -> None:
    for name in LOGS:
        plain = parse_perf_log(FIX / "plain" / name, strict=True).records
        ours = parse_perf_log(FIX / "harness" / name, strict=True).records
        assert all(r.phases["forward"].samples_ms is None for r in plain)
        for r in ours:
            fwd = r.phases["forward"]
            assert fwd.launches_per_call == 1
            assert fwd.samples_ms is not None and len(fwd.samples_ms) == fwd.nrep


def test_launch_records_of_the_swapped_run_load_with_one_launch_per_call() -> None:
    sets = load_launch_sets(FIX / "harness" / "launches.json.gz")
    assert len(sets) == 10
    for s in sets:
        assert s.nodeid.startswith("tests/ops/test_rms_norm.py::Test_RMSNorm::test_perf[")
        assert s.calls and all(len(c.launches) == 1 for c in s.calls)
        assert s.backend in ("cutile", "triton")
