"""History comparisons are computed once (issue 26): cached in the history store, keyed on both
results, the policy and the statistics' code; the decisions are identical to computing them.

Data: the REAL recorded matmul session + two SYNTHETIC follow-up runs (tests/history_helpers.py).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from history_helpers import matmul_with_followups

from cutile_workbench.history import query
from cutile_workbench.history.regress import RegressionPolicy, compare_results, flag_from_json, flag_to_json
from cutile_workbench.history.store import HISTORY_FILE, HistoryStore


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []

    def counting(old, new, policy):  # type: ignore[no-untyped-def]
        calls.append(1)
        return compare_results(old, new, policy)

    monkeypatch.setattr(query, "compare_results", counting)
    return calls


def _load(paths) -> query.KernelHistory:  # type: ignore[no-untyped-def]
    with HistoryStore.open(paths.workbench_dir / HISTORY_FILE) as store:
        return query.load_history(store, "matmul")


def test_second_read_decides_nothing_and_gets_the_same_flags(tmp_path: Path, counted: list[int]) -> None:
    paths = matmul_with_followups(tmp_path)
    first = _load(paths)
    pairs = sum(len(s.changes) for s in first.series)
    assert pairs >= 6 and len(counted) == pairs
    second = _load(paths)
    assert len(counted) == pairs  # every pair served from the store
    assert [s.changes for s in second.series] == [s.changes for s in first.series]
    assert any(c.change == "improvement" for s in first.series for c in s.changes)


def test_another_policy_or_a_corrupt_entry_is_recomputed(tmp_path: Path, counted: list[int]) -> None:
    paths = matmul_with_followups(tmp_path)
    first = _load(paths)
    pairs = len(counted)
    with HistoryStore.open(paths.workbench_dir / HISTORY_FILE) as store:
        query.load_history(store, "matmul", policy=RegressionPolicy(min_effect=0.05))
    assert len(counted) == 2 * pairs
    con = sqlite3.connect(paths.workbench_dir / HISTORY_FILE)
    with con:
        con.execute("UPDATE comparisons SET flag_json = '{\"change\": 1}'")
    con.close()
    again = _load(paths)
    assert len(counted) == 3 * pairs and [s.changes for s in again.series] == [
        s.changes for s in first.series
    ]


def test_flag_json_round_trip(tmp_path: Path) -> None:
    paths = matmul_with_followups(tmp_path)
    for s in _load(paths).series:
        for flag in s.changes:
            assert flag_from_json(flag_to_json(flag)) == flag
    assert flag_from_json("not json") is None


def test_the_key_names_every_field_of_both_results() -> None:
    """SYNTHETIC results: any field of either side (a sample, the launches/call) changes the key."""
    from cutile_workbench.history.entries import ConfigResult
    from cutile_workbench.history.regress import comparison_key

    a = ConfigResult(
        "t::T::test_perf", "p", "cutile-rs", "forward", "t::T::test_perf[x]", 1.0, (1.0, 1.1, 0.9)
    )
    b = ConfigResult(
        "t::T::test_perf", "p", "cutile-rs", "forward", "t::T::test_perf[x]", 1.0, (1.0, 1.1, 0.9)
    )
    assert comparison_key(a, b) == comparison_key(a, b, digests={})
    for changed in (
        ConfigResult(*[*list(b.__dict__.values())[:6], (1.0, 1.1, 0.91)]),
        ConfigResult(*list(b.__dict__.values())[:7], launches_per_call=2),
    ):
        assert comparison_key(a, changed) != comparison_key(a, b)
    assert comparison_key(a, b) != comparison_key(
        b, a.__class__(*[*list(a.__dict__.values())[:5], 1.01, a.samples_ms])
    )
    assert comparison_key(a, b, RegressionPolicy(min_effect=0.05)) != comparison_key(a, b)
