"""Pins for the rules whose hand mutations survived the suite (issue 22): one test per mutant.

Each test drives the public rule with inputs and checks the decision (inputs → decision), so it
holds whatever implements the rule (the statistics may move to numpy/scipy). The mutant each test
kills is named in its docstring; every one was applied to the code, seen to fail here, and reverted.

Data: SYNTHETIC seeded samples and tables (edge cases no recording holds), except where a test says
it starts from a recorded session (the rms_norm stand-in session's real perf log).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random
import statistics
from pathlib import Path

import pytest

from cutile_workbench.errors import WorkbenchError
from cutile_workbench.history.entries import ConfigResult
from cutile_workbench.history.regress import RegressionPolicy, compare_results

REPO = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- history/regress.py


def _result(samples: list[float], median_ms: float | None = None) -> ConfigResult:
    return ConfigResult(
        "perf",
        "cfg",
        "cutile-rs",
        "forward",
        "t::test_perf[cfg]",
        statistics.median(samples) if median_ms is None else median_ms,
        tuple(samples),
    )


def _gauss(seed: int, n: int, mu: float, sd: float) -> list[float]:
    rng = random.Random(seed)
    return [mu + rng.gauss(0, sd) for _ in range(n)]


def test_a_regression_needs_the_test_to_be_significant() -> None:
    """Mutant 1 (``significant = True``). SYNTHETIC: +5 % with sd 5 %, n=40 each: the CI lies above 1
    (~[1.02, 1.10]) and p ≈ 3e-5. Under a policy demanding p < 1e-6 it is not a regression."""
    old = _gauss(100, 40, 1.00, 0.05)
    new = [x + 0.05 for x in _gauss(200, 40, 1.00, 0.05)]
    strict = compare_results(_result(old), _result(new), RegressionPolicy(alpha=1e-6))
    assert strict.test is not None and 1e-6 < strict.test.p_value < 2e-3
    assert strict.ci is not None and strict.ci[0] > 1.0 and strict.ratio >= 1.02
    assert strict.change == "inconclusive", strict.reason
    assert compare_results(_result(old), _result(new)).change == "regression"  # default alpha 0.002


def test_a_regression_needs_the_ci_above_one() -> None:
    """Mutant 2 (``ci[0] > 1`` dropped). SYNTHETIC edge: the recorded medians say +5 % but the raw
    samples say the new run is faster (significant, CI below 1): never a regression."""
    old = _gauss(1, 40, 1.00, 0.01)
    new = [x - 0.03 for x in _gauss(2, 40, 1.00, 0.01)]
    flag = compare_results(_result(old, median_ms=1.00), _result(new, median_ms=1.05))
    assert flag.ratio == pytest.approx(1.05) and flag.test is not None and flag.test.p_value < 0.002
    assert flag.ci is not None and flag.ci[1] < 1.0
    assert flag.change != "regression", flag.reason
    assert flag.change == "inconclusive"


def test_same_needs_the_whole_ci_inside_the_band() -> None:
    """Mutant 3 (``ci[1] <= hi_band`` dropped from "same"). SYNTHETIC: a noisy +2 % run whose CI
    (~[0.997, 1.042]) starts inside the ±2 % band but reaches above it, p ≈ 0.025: inconclusive."""
    old = _gauss(0, 40, 1.00, 0.01)
    new = [x + 0.02 for x in _gauss(0, 40, 1.00, 0.04)]
    flag = compare_results(_result(old), _result(new))
    assert flag.ci is not None and flag.ci[0] >= 1 / 1.02 and flag.ci[1] > 1.02
    assert flag.change == "inconclusive", flag.reason


# --------------------------------------------------------------------------- report_e.py


def test_e_refuses_a_done_table_with_a_missing_config(tmp_path: Path) -> None:
    """Mutant 4 (the "refuse DONE with a missing config" check deleted). The real rms_norm E table
    (recorded stand-in session) with one row turned NA while the verdict stays DONE: refused, no plan."""
    import importlib.util
    import sys

    from cutile_workbench.artifacts.workspace import open_workspace
    from cutile_workbench.stages.e.report import load_candidate, plan_e_report
    from cutile_workbench.stages.e.stats import build_ratio_table

    builders = sys.modules.get("e_builders")  # tests/fixtures/e/builders.py, as test_report_e loads it
    if builders is None:
        spec = importlib.util.spec_from_file_location(
            "e_builders", Path(__file__).parent.parent / "fixtures/e/builders.py"
        )
        assert spec and spec.loader
        builders = importlib.util.module_from_spec(spec)
        sys.modules["e_builders"] = builders
        spec.loader.exec_module(builders)

    def plan_for(root: Path, kernel: str, **kw: object):
        return plan_e_report(open_workspace(kernel, out_root=root, env={}), run_real_scripts=False, **kw)

    builders.copy_real(tmp_path, "rms_norm")
    ws = open_workspace("rms_norm", out_root=tmp_path, env={})

    candidate, _parsed, _notes = load_candidate(ws)
    table = build_ratio_table(ws.kernel, candidate, ws.baseline_logs(), ws.analysis)
    assert table.verdict == "DONE" and len(table.rows) > 1
    na = dataclasses.replace(table.rows[0], ratio=None, candidate_ms=None, status="NA", reason="test failed")
    bad = dataclasses.replace(table, rows=[na, *table.rows[1:]])
    with pytest.raises(WorkbenchError, match="refusing DONE with a missing or failed config"):
        plan_for(tmp_path, "rms_norm", table=bad)
    assert plan_for(tmp_path, "rms_norm", table=table).verdict == "DONE"  # the same table, complete: fine


# --------------------------------------------------------------------------- scaleout/plan.py, merge.py


@pytest.mark.parametrize(
    ("weights", "k"),
    [
        ([1, 1, 1, 100], 4),
        ([1, 1, 50], 3),
        ([5, 5], 2),
        ([1] * 7, 7),
        ([3, 1, 1, 1, 1, 9, 1], 5),
        ([5, 5, 0, 0], 2),
    ],
)
def test_balanced_cuts_always_give_k_nonempty_parts(weights: list[int], k: int) -> None:
    """Mutant 6 (``or left_items == left_parts`` dropped: fewer shards than asked when the weight
    sits at the end). SYNTHETIC weights."""
    from cutile_workbench.run.scaleout.plan import balanced_cuts

    cuts = balanced_cuts(weights, k)
    assert len(cuts) == k - 1, cuts
    bounds = [0, *cuts, len(weights)]
    assert all(a < b for a, b in itertools.pairwise(bounds)), cuts


def test_balanced_cuts_property() -> None:
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    from cutile_workbench.run.scaleout.plan import balanced_cuts

    @hypothesis.given(st.lists(st.integers(0, 1000), min_size=1, max_size=30), st.data())
    def check(weights: list[int], data: object) -> None:
        k = data.draw(st.integers(1, len(weights)))  # type: ignore[attr-defined]
        cuts = balanced_cuts(weights, k)
        bounds = [0, *cuts, len(weights)]
        assert len(cuts) == k - 1 and all(a < b for a, b in itertools.pairwise(bounds))

    check()


@pytest.fixture(scope="module")
def clean_sharded_run(tmp_path_factory: pytest.TempPathFactory):
    """The runner fixture suite (SYNTHETIC faults off: every config passes) over two CPU slots."""
    from scaleout_helpers import FAULTS_ROLES, faults_suite, role_runs

    from cutile_workbench.artifacts.layout import KernelPaths
    from cutile_workbench.run.scaleout.devices import resolve_devices
    from cutile_workbench.run.scaleout.service import ScaleoutRequest, run_scaled

    root = tmp_path_factory.mktemp("merge_rc")
    roles = role_runs(faults_suite(root), FAULTS_ROLES)
    out = KernelPaths.under(root / "out", "rms_norm")
    result = run_scaled(
        ScaleoutRequest(
            kernel="rms_norm",
            out=out,
            roles=roles,
            mode="local",
            devices=tuple(resolve_devices(["0", "1"], probe=False)),
        )
    )
    assert result.merged is not None and result.rc == 0
    assert {r.rc for r in result.merged.results.values()} == {0}
    return result, out


@pytest.mark.parametrize("damage", ["shard_rc", "not_run"])
def test_merged_rc_counts_not_run_tests_and_shard_exit_codes(clean_sharded_run, damage: str) -> None:
    """Mutant 5 (``rc = 1 if parts.failed else 0``). A shard whose pytest exited 3 (internal error)
    or that left a config not run, with no failed config: the merged role's rc must be 1."""
    from cutile_workbench.run.scaleout.merge import merge_plan

    result, out = clean_sharded_run
    session = result.paths.shard_out(result.plan.shards[1].index).session_json
    original = session.read_text()
    doc = json.loads(original)
    role = "candidate"
    meta = doc["runs"][role]
    assert not meta.get("failed") and not meta.get("not_run") and meta.get("rc") == 0
    if damage == "shard_rc":
        meta["rc"] = 3
    else:
        meta["not_run"] = {result.plan.shards[1].by_role[role][0]: "worker stopped before it ran (SYNTHETIC)"}
    try:
        session.write_text(json.dumps(doc))
        merged = merge_plan(result.plan, result.paths, out)
        assert merged.results[role].rc == 1
        assert merged.results["baseline_cutile"].rc == 0
    finally:
        session.write_text(original)


# --------------------------------------------------------------------------- f_evidence/gap.py


def test_the_spread_interval_is_a_95_percent_interval() -> None:
    """Mutant 7 (1.96 SE → 0.5 SE). SYNTHETIC stats: 1.10x with 10 % rel_std over 20 reps per side:
    the 95 % interval reaches below 1.05, so the gap is unresolved, not real."""
    from scipy.stats import norm

    from cutile_workbench.evidence.gap import assess_gap, interval_from_spread
    from cutile_workbench.model import PhaseStats, RatioRow

    cand, base = PhaseStats(1.10, rel_std_pct=10.0, nrep=20), PhaseStats(1.00, rel_std_pct=10.0, nrep=20)
    se = math.hypot(*(1.2533 * 0.10 / math.sqrt(20),) * 2)  # SE of log median per side, combined
    lo, hi = interval_from_spread(1.10, cand, base) or (0.0, 0.0)
    z = norm.ppf(0.975)
    assert lo == pytest.approx(1.10 * math.exp(-z * se), rel=1e-3)
    assert hi == pytest.approx(1.10 * math.exp(z * se), rel=1e-3)
    row = RatioRow("perf", "cfg", None, "cutile", 1.0, 1.1, 1.10, "OK")
    gap = assess_gap(row=row, one_launch_each=True, cand_stats=cand, base_stats=base)
    assert gap.status == "unresolved" and gap.ci is not None and gap.ci[0] < 1.05


# --------------------------------------------------------------------------- diagnosis.py


def test_f_verdict_confidence_follows_the_evidence() -> None:
    """Mutant 8 (ALIGNED always "high"; FIXABLE picking the least confident finding)."""
    from cutile_workbench.evidence.gap import GapAssessment
    from cutile_workbench.model import Finding
    from cutile_workbench.stages.f.diagnosis import _verdict

    fixable = [
        Finding("ir", "low-confidence fix", True, ("a",), "low"),
        Finding("search_space", "high-confidence fix", True, ("b",), "high"),
        Finding("ir", "medium-confidence fix", True, ("c",), "medium"),
    ]
    assert _verdict(fixable, counts_match=True, gap=None, limitation=None, capture=True) == (
        "FIXABLE",
        "high",
    )
    assert _verdict(fixable[:1], counts_match=True, gap=None, limitation=None, capture=True) == (
        "FIXABLE",
        "low",
    )
    noise_ci = GapAssessment("noise", 1.01, (0.99, 1.03), "captures", "within")
    noise_point = GapAssessment("noise", 1.01, None, "E medians", "within")
    assert _verdict([], counts_match=True, gap=noise_ci, limitation=None, capture=True) == ("ALIGNED", "high")
    assert _verdict([], counts_match=True, gap=noise_point, limitation=None, capture=True) == (
        "ALIGNED",
        "medium",
    )
    assert _verdict([], counts_match=True, gap=noise_ci, limitation=None, capture=False) == (
        "ALIGNED",
        "medium",
    )
    assert _verdict([], counts_match=True, gap=None, limitation="no capture", capture=True) == (
        "ALIGNED",
        "medium",
    )
    assert _verdict([], counts_match=False, gap=noise_ci, limitation=None, capture=True) == ("BLOCKED", "low")


# --------------------------------------------------------------------------- perflog/sanitizer.py


def test_a_section_with_two_record_blocks_is_dropped() -> None:
    """The sanitizer's "more than one record block in one section" rule. Starts from the recorded
    rms_norm stand-in session's perf log; the second block in the first section is the edit."""
    from cutile_workbench.artifacts.perflog.printer import MARKER
    from cutile_workbench.artifacts.perflog.sanitizer import sanitize

    text = (
        REPO
        / "cutile_workbench/profiles/rms_norm/session/rms_norm/reports/agent_logs/perf_cutile_rs.full.txt"
    ).read_text()
    lines = text.splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if MARKER in ln)
    end = next(i for i in range(start + 1, len(lines)) if set(lines[i].strip()) == {"-"})
    doubled = "".join(lines[: end + 1] + lines[start : end + 1] + lines[end + 1 :])
    clean = sanitize(text, pytest_rc=1)
    out = sanitize(doubled, pytest_rc=1)
    assert out.kept_records == clean.kept_records - 1
    assert "more than one record block in one test section" in out.investigation_log
    assert len(out.dropped_nodeids) == len(clean.dropped_nodeids) + 1


# --------------------------------------------------------------------------- provenance


def _snap(at: float, power_ns: int | None, thermal_ns: int | None):
    from cutile_workbench.history.provenance.gpu import ClockSnapshot

    return ClockSnapshot(
        taken_at=at,
        sm_clock_mhz=1980,
        mem_clock_mhz=3201,
        graphics_clock_mhz=1980,
        max_sm_clock_mhz=1980,
        clock_event_reasons=None,
        temperature_c=41,
        power_w=312.0,
        power_limit_w=700.0,
        pstate=0,
        power_violation_ns=power_ns,
        thermal_violation_ns=thermal_ns,
    )


def test_throttling_seen_only_in_the_violation_counters() -> None:
    """NVML could not decode the clock-event reasons (None at both ends); only the cumulative violation
    counters moved: that growth is the evidence. SYNTHETIC snapshots."""
    from cutile_workbench.history.provenance import Provenance

    def prov(before, after) -> Provenance:
        return Provenance(source="live", before=before, after=after)

    assert prov(_snap(0, 1_000_000, 0), _snap(60, 6_000_000, 0)).throttling() == ("power_violation_5.0ms",)
    assert prov(_snap(0, 0, 2_000_000), _snap(60, 0, 2_500_000)).throttling() == ("thermal_violation_0.5ms",)
    assert prov(_snap(0, 7, 7), _snap(60, 7, 7)).throttling() == ()  # read, unchanged: no throttling
    assert prov(_snap(0, None, None), _snap(60, None, None)).throttling() is None  # nothing known


# --------------------------------------------------------------------------- capture/selfcheck.py


def test_self_check_with_a_zero_median() -> None:
    """CUPTI median 0 (nothing attributed) against a real event span: not suspect, and the note says
    the event span is far above CUPTI; an event median of 0 (below the events' resolution) with a
    positive CUPTI median: suspect, explained, never a ZeroDivisionError. SYNTHETIC numbers."""
    from cutile_workbench.run.capture.selfcheck import judge

    zero_cupti = judge(0.0, [0.020, 0.021, 0.022])
    assert zero_cupti.verdict == "ok" and "host gaps" in zero_cupti.note
    zero_events = judge(0.010, [0.0, 0.0, 0.0])
    assert zero_events.verdict == "suspect" and "0.00 us" in zero_events.reason


def test_median_only_on_one_side_is_inconclusive() -> None:
    """``compare_results`` with raw samples on one side only (an older run by TileGym's harness):
    inconclusive, saying which side has none — never a crash, never a decision (a mutant turning
    ``not so or not sn`` into ``and`` survived the suite). SYNTHETIC samples."""
    samples = _gauss(5, 30, 1.0, 0.01)
    bare = dataclasses.replace(_result(samples), samples_ms=None)
    for old, new, which in (
        (bare, _result([x * 1.3 for x in samples]), "older"),
        (_result(samples), dataclasses.replace(bare, median_ms=1.3), "newer"),
    ):
        flag = compare_results(old, new)
        assert flag.change == "inconclusive" and f"no raw samples in the {which} run" in flag.reason, (
            flag.reason
        )


def test_mann_whitney_needs_a_value_on_each_side() -> None:
    """An empty sample is refused, whichever side it is on (the ``n1 == 0 or n2 == 0`` guard)."""
    from cutile_workbench.history.regress import mann_whitney_u

    for x, y in (([], [1.0, 2.0]), ([1.0, 2.0], []), ([], [])):
        with pytest.raises(ValueError):
            mann_whitney_u(x, y)


def test_gap_gate_edges_and_one_sided_spread() -> None:
    """F's gap rule at its edges (E's gate: ratio ≤ 1.05 is noise; "real" needs the whole interval
    *above* 1.05), and a spread on one side only gives no interval. Mutants of ``_decide`` and
    ``interval_from_spread`` survived the first mutation run. SYNTHETIC numbers."""
    from cutile_workbench.evidence.gap import NOISE_RATIO, interval_from_spread
    from cutile_workbench.evidence.gap import _decide_in_band as _decide
    from cutile_workbench.model import PhaseStats

    assert _decide(NOISE_RATIO, (1.0, 1.1), "b").status == "noise"
    assert _decide(1.2, (NOISE_RATIO, 1.3), "b").status == "unresolved"
    assert _decide(1.2, (NOISE_RATIO + 1e-9, 1.3), "b").status == "real"
    spread, bare = PhaseStats(1.0, rel_std_pct=5.0, nrep=50), PhaseStats(1.0)
    for cand, base in ((spread, None), (None, spread), (spread, bare), (bare, spread)):
        assert interval_from_spread(1.2, cand, base) is None


def test_self_check_bound_is_inclusive() -> None:
    """CUPTI exactly at the bound (events × (1 + REL_BOUND) + ABS_BOUND_MS) is still "ok"; a hair
    above is "suspect". SYNTHETIC numbers."""
    from cutile_workbench.run.capture.selfcheck import ABS_BOUND_MS, REL_BOUND, judge

    events = [0.5, 0.5, 0.5]
    limit = 0.5 * (1 + REL_BOUND) + ABS_BOUND_MS
    assert judge(limit, events).verdict == "ok"
    assert judge(limit * (1 + 1e-9), events).verdict == "suspect"
