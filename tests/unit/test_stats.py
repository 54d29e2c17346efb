"""Ratio engine: matching, bands at their exact edges, NA handling, per-variant geomeans, bootstrap.

Non-edge numbers are REAL H200 medians (gpu.md §4, see tests/fixtures/e/make_fixtures.py); band
edges, NaN/negative medians and raw sample sets are SYNTHETIC edge cases, labelled per test.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from cutile_workbench.artifacts.analysis import parse_analysis
from cutile_workbench.artifacts.perflog.parser import parse_perf_log
from cutile_workbench.model import PerfLog, PerfRecord, PhaseStats
from cutile_workbench.model import TestOutcome as Outcome
from cutile_workbench.stages.e.stats import build_ratio_table, round4, severity_for

FIX = Path(__file__).parent.parent / "fixtures" / "e" / "real"
FUNC = "tests/ops/test_x.py::Test_X::test_perf"


def rec(
    fw: str, params: str, median: float, samples: tuple[float, ...] | None = None, launches: int | None = None
) -> PerfRecord:
    token = fw.replace("-", "_")
    return PerfRecord(
        nodeid=f"{FUNC}[{token}-{params}]",
        func_key=FUNC,
        framework=fw,
        params=params,
        phases={"forward": PhaseStats(median_ms=median, samples_ms=samples, launches_per_call=launches)},
    )


def log(path: str, *records: PerfRecord, outcomes: tuple[Outcome, ...] = ()) -> PerfLog:
    return PerfLog(path=path, records=list(records), outcomes=list(outcomes))


def table_for(ratios: list[float], **kw):  # synthetic: baseline 1.0 ms, candidate = ratio ms
    cand = log("c", *[rec("cutile-rs", f"p{i}", r) for i, r in enumerate(ratios)])
    base = log("b", *[rec("cutile", f"p{i}", 1.0) for i in range(len(ratios))])
    return build_ratio_table("k", cand, {"cutile": base}, None, **kw)


@pytest.mark.parametrize(
    ("g", "severity", "verdict"),
    [
        (1.05, "DONE", "DONE"),
        (1.05004, "DONE", "DONE"),
        (1.050051, "MILD_GAP", "INVESTIGATE"),
        (1.0501, "MILD_GAP", "INVESTIGATE"),
        (1.10, "MILD_GAP", "INVESTIGATE"),
        (1.1001, "MODERATE_GAP", "INVESTIGATE"),
        (1.50, "MODERATE_GAP", "INVESTIGATE"),
        (1.5001, "LARGE_GAP", "INVESTIGATE"),
        (0.5, "DONE", "DONE"),
    ],
)
def test_band_edges_exact(g: float, severity: str, verdict: str) -> None:
    """SYNTHETIC edges: a single row with ratio g; also three rows whose geomean is g."""
    t = table_for([g])
    assert (t.severity, t.verdict) == (severity, verdict)
    assert severity_for(g) == severity
    # a geomean that lands on the edge through floating-point arithmetic (1.05 = exp(mean ln))
    t3 = table_for([g * 1.2, g / 1.2, g])
    assert round4(t3.geomean) == round4(g)
    assert t3.severity == severity


def test_written_value_and_verdict_agree_under_rounding() -> None:
    """The verdict is decided on the 4-decimal value that is written (rounding rule)."""
    rng = random.Random(1)
    for _ in range(2000):
        g = rng.uniform(1.0495, 1.0505)
        sev = severity_for(g)
        written = float(f"{g:.4f}")
        assert (sev == "DONE") == (written <= 1.05)


def test_real_rms_norm_triton_reference() -> None:
    """REAL H200 medians: cuTile vs Triton reference (gpu.md §4 + TileGym fp16 runs)."""
    k = FIX / "rms_norm"
    cand = parse_perf_log(k / "reports/agent_logs/perf_cutile_rs.full.txt", strict=True)
    bases = {
        "cutile": parse_perf_log(k / "baseline_perf_cutile.txt", strict=True),
        "triton_tileir": parse_perf_log(k / "baseline_perf_triton_tileir.txt", strict=True),
    }
    from cutile_workbench.artifacts.analysis import load_analysis

    t = build_ratio_table("rms_norm", cand, bases, load_analysis(k / "reference/analysis.json"))
    ratios = {r.params: r.ratio for r in t.rows}
    assert ratios["static_persistent-16384-2048-torch.bfloat16"] == pytest.approx(82.78 / 44.16)
    assert ratios["static_persistent-4096-1024-torch.bfloat16"] == pytest.approx(7.01 / 10.14)
    assert {r.baseline_backend for r in t.rows} == {"triton_tileir"}
    expected = math.exp(
        sum(
            math.log(x)
            for x in (7.01 / 10.14, 82.78 / 44.16, 74.66 / 76.24, 0.2781 / 0.348959, 539.1 / 548.1)
        )
        / 5
    )
    assert t.geomean == pytest.approx(expected)
    assert (t.verdict, t.severity) == ("DONE", "DONE")
    # without analysis.json: the faster available baseline per row (cuTile itself or Triton)
    t2 = build_ratio_table("rms_norm", cand, bases, None)
    for r in t2.rows:
        meds = [b.forward.median_ms for lg in bases.values() for b in lg.records if b.params == r.params]
        assert r.baseline_ms == min(meds)
    row16 = next(r for r in t2.rows if r.params.startswith("static_persistent-16384"))
    assert row16.baseline_backend == "triton_tileir"


def test_missing_config_forces_investigate() -> None:
    """One failed candidate test (SYNTHETIC failure) next to REAL-number rows."""
    failed = Outcome(
        nodeid=f"{FUNC}[cutile_rs-p2]",
        func_key=FUNC,
        backend_token="cutile_rs",
        params="p2",
        outcome="failed",
        reason="CompilerExecutionError",
    )
    cand = log("c", rec("cutile-rs", "p0", 0.00701), rec("cutile-rs", "p1", 0.07466), outcomes=(failed,))
    base = log("b", rec("cutile", "p0", 0.00701), rec("cutile", "p1", 0.07466), rec("cutile", "p2", 0.08278))
    t = build_ratio_table("k", cand, {"cutile": base}, None)
    assert t.geomean == pytest.approx(1.0)
    assert (t.verdict, t.severity) == ("INVESTIGATE", "MISSING_DATA")
    na = [r for r in t.rows if r.status == "NA"]
    assert [r.params for r in na] == ["p2"] and "failed" in na[0].reason


def test_selected_config_without_candidate_median_is_na() -> None:
    doc = {"test_perf_configs": {"g": {"test": FUNC, "shapes": [{"id": "p0"}, {"id": "p9"}]}}}
    cand = log("c", rec("cutile-rs", "p0", 1.0))
    base = log("b", rec("cutile", "p0", 1.0))
    t = build_ratio_table("k", cand, {"cutile": base}, parse_analysis(doc))
    assert t.verdict == "INVESTIGATE" and t.severity == "MISSING_DATA"
    assert [r.params for r in t.rows if r.status == "NA"] == ["p9"]


@pytest.mark.parametrize("bad", [float("nan"), -1.0, 0.0, float("inf")])
def test_invalid_candidate_median_is_na(bad: float) -> None:
    """SYNTHETIC: NaN/negative/zero/inf medians (tolerant parse) never count as data."""
    cand = log("c", rec("cutile-rs", "p0", 1.0), rec("cutile-rs", "p1", bad))
    base = log("b", rec("cutile", "p0", 1.0), rec("cutile", "p1", 1.0))
    t = build_ratio_table("k", cand, {"cutile": base}, None)
    assert t.verdict == "INVESTIGATE" and t.severity == "MISSING_DATA"


def test_all_missing_is_blocked() -> None:
    failed = [
        Outcome(
            nodeid=f"{FUNC}[cutile_rs-p{i}]",
            func_key=FUNC,
            backend_token="cutile_rs",
            params=f"p{i}",
            outcome="failed",
        )
        for i in range(3)
    ]
    t = build_ratio_table(
        "k", log("c", outcomes=tuple(failed)), {"cutile": log("b", rec("cutile", "p0", 1.0))}, None
    )
    assert t.verdict == "BLOCKED" and t.geomean is None and t.severity is None
    assert build_ratio_table("k", log("c"), {}, None).verdict == "BLOCKED"


def test_no_baseline_rows_listed_and_excluded() -> None:
    cand = log("c", rec("cutile-rs", "p0", 2.0), rec("cutile-rs", "p1", 9.0))
    base = log("b", rec("cutile", "p0", 2.0))
    t = build_ratio_table("k", cand, {"cutile": base}, None)
    assert t.geomean == pytest.approx(1.0) and t.verdict == "DONE"
    assert [r.status for r in t.rows] == ["OK", "NO_BASELINE"]
    assert any("without a baseline" in n for n in t.notes)


def test_reference_backend_winner_per_variant() -> None:
    """Variant v1's winner is triton, v2's is cutile (per_variant), matched via config_to_variant."""
    doc = {
        "reference_backend": "cutile",
        "reference_backend_selection": {
            "winner": "cutile",
            "per_variant": {"v1": {"winner": "triton"}, "v2": {"winner": "cutile"}},
        },
        "config_to_variant": {"a": "v1", "b": "v2"},
        "kernel_variants": [{"variant_name": "v1"}, {"variant_name": "v2"}],
    }
    cand = log("c", rec("cutile-rs", "a", 1.2), rec("cutile-rs", "b", 1.0))
    cut = log("b1", rec("cutile", "a", 1.0), rec("cutile", "b", 0.5))
    tri = log("b2", rec("triton", "a", 1.5), rec("triton", "b", 0.1))
    t = build_ratio_table("k", cand, {"cutile": cut, "triton_tileir": tri}, parse_analysis(doc))
    by = {r.params: r for r in t.rows}
    assert by["a"].baseline_backend == "triton_tileir" and by["a"].ratio == pytest.approx(0.8)
    assert by["b"].baseline_backend == "cutile" and by["b"].ratio == pytest.approx(2.0)
    assert t.variant_geomeans == pytest.approx({"v1": 0.8, "v2": 2.0})
    # the winner's log lacks a config → NO_BASELINE, never a silent switch to the other backend
    tri_missing = log("b2", rec("triton", "zz", 1.0))
    t2 = build_ratio_table("k", cand, {"cutile": cut, "triton_tileir": tri_missing}, parse_analysis(doc))
    assert {r.params: r.status for r in t2.rows} == {"b": "OK", "a": "NO_BASELINE"}


def _samples(rng: random.Random, center: float, n: int, spread: float) -> tuple[float, ...]:
    return tuple(center * (1 + rng.gauss(0, spread)) for _ in range(n))


def test_bootstrap_ci_deterministic_and_covers() -> None:
    """SYNTHETIC samples (gaussian noise, 2% and 0.5% rel. std) around REAL medians."""
    rng = random.Random(7)
    cs = _samples(rng, 0.08278, 50, 0.02)
    bs = _samples(rng, 0.04416, 51, 0.005)
    cand = log("c", rec("cutile-rs", "p", sorted(cs)[25], samples=cs))
    base = log("b", rec("cutile", "p", sorted(bs)[25], samples=bs))
    t1 = build_ratio_table("k", cand, {"cutile": base}, None, n_boot=500, seed=3)
    t2 = build_ratio_table("k", cand, {"cutile": base}, None, n_boot=500, seed=3)
    assert t1.geomean_ci == t2.geomean_ci and t1.rows == t2.rows
    row = t1.rows[0]
    assert row.ci_low is not None and row.ci_high is not None
    assert row.ci_low < row.ratio < row.ci_high
    assert 0.95 * row.ratio < row.ci_low and row.ci_high < 1.05 * row.ratio
    assert t1.geomean_ci == pytest.approx((row.ci_low, row.ci_high))  # one row: same distribution
    assert not t1.inconclusive


def _noisy_rows(n: int, seed: int) -> tuple[PerfLog, PerfLog]:
    """SYNTHETIC: n configs, candidate ~ 1.2 ms and baseline ~ 1.0 ms with 3% gaussian noise, 21 and 20
    samples (an odd and an even count: both median draws)."""
    rng = random.Random(seed)
    cand, base = [], []
    for i in range(n):
        cs, bs = _samples(rng, 1.2, 21, 0.03), _samples(rng, 1.0, 20, 0.03)
        cand.append(rec("cutile-rs", f"p{i}", sorted(cs)[10], samples=cs))
        base.append(rec("cutile", f"p{i}", (sorted(bs)[9] + sorted(bs)[10]) / 2, samples=bs))
    return log("c", *cand), log("b", *base)


def test_a_rows_ci_depends_on_that_row_alone() -> None:
    """Issue 31: each row draws from its own stream, seeded from its key: the same row in a table of one
    and in a table of five has the same CI to the last digit, and the seed still moves it."""
    cand, base = _noisy_rows(5, 3)
    whole = build_ratio_table("k", cand, {"cutile": base}, None, n_boot=300, seed=2)
    for i in (0, 4):
        alone = build_ratio_table(
            "k", log("c", cand.records[i]), {"cutile": log("b", base.records[i])}, None, n_boot=300, seed=2
        )
        assert (alone.rows[0].ci_low, alone.rows[0].ci_high) == (whole.rows[i].ci_low, whole.rows[i].ci_high)
    other = build_ratio_table("k", cand, {"cutile": base}, None, n_boot=300, seed=3)
    assert other.rows[0].ci_low != whole.rows[0].ci_low
    assert len({(r.ci_low, r.ci_high) for r in whole.rows}) == 5  # rows' streams differ from each other


def test_per_row_ci_is_a_correct_bootstrap_ci() -> None:
    """The per-row stream's CI is still E's percentile bootstrap: against the old pure-Python joint
    bootstrap (tests/stats_reference.py, one stream for every row) each row's bounds and the geomean's
    agree within a fifth of the interval's width (Monte-Carlo error at n_boot = 2000), and over 300
    SYNTHETIC configs whose true ratio is known (candidate 1.2 / baseline 1.0 ms, lognormal noise) the
    95% intervals cover it about 95% of the time."""
    import stats_reference as ref

    from cutile_workbench.stages.e import stats

    cand, base = _noisy_rows(6, 5)
    table = build_ratio_table("k", cand, {"cutile": base}, None, n_boot=2000, seed=0)
    pending = [
        stats._Pending("f", r.params, None, c.forward, b.forward, "cutile")  # type: ignore[arg-type]
        for r, c, b in zip(table.rows, cand.records, base.records, strict=True)
    ]
    old_cis, old_g = ref.bootstrap(pending, 4000, 0)
    for row, old in zip(table.rows, old_cis, strict=True):
        width = old[1] - old[0]
        assert abs(row.ci_low - old[0]) <= 0.2 * width and abs(row.ci_high - old[1]) <= 0.2 * width
    assert table.geomean_ci is not None
    width = old_g[1] - old_g[0]
    assert abs(table.geomean_ci[0] - old_g[0]) <= 0.2 * width
    assert abs(table.geomean_ci[1] - old_g[1]) <= 0.2 * width
    assert table.geomean_ci[0] < table.geomean < table.geomean_ci[1]
    rng = random.Random(9)
    covered, n = 0, 300
    cands, bases = [], []
    for i in range(n):  # lognormal: the medians are exactly 1.2 and 1.0
        cs = tuple(1.2 * math.exp(rng.gauss(0, 0.05)) for _ in range(25))
        bs = tuple(1.0 * math.exp(rng.gauss(0, 0.05)) for _ in range(25))
        cands.append(rec("cutile-rs", f"q{i}", sorted(cs)[12], samples=cs))
        bases.append(rec("cutile", f"q{i}", sorted(bs)[12], samples=bs))
    many = build_ratio_table("k", log("c", *cands), {"cutile": log("b", *bases)}, None, n_boot=1000)
    covered = sum(1 for r in many.rows if r.ci_low is not None and r.ci_low <= 1.2 <= r.ci_high)
    assert 0.88 * n <= covered <= 0.995 * n, covered


def test_bootstrap_median_matches_naive_resampling() -> None:
    """The O(1) order-statistic draw has the same distribution as resample-then-median."""
    import numpy as np

    from cutile_workbench.stages.e.stats import bootstrap_medians

    xs = np.sort(np.random.default_rng(0).random(20))
    fast = np.sort(bootstrap_medians(np.random.default_rng(1), xs, 20000))
    naive = np.sort(np.median(xs[np.random.default_rng(2).integers(0, 20, size=(20000, 20))], axis=1))
    for q in (0.025, 0.25, 0.5, 0.75, 0.975):
        i = int(q * 19999)
        assert fast[i] == pytest.approx(naive[i], abs=0.03)


def test_inconclusive_when_ci_straddles_gate() -> None:
    """SYNTHETIC: a noisy pair whose ratio of medians sits at 1.05."""
    rng = random.Random(11)
    cs = _samples(rng, 1.05, 30, 0.05)
    bs = _samples(rng, 1.0, 30, 0.05)
    cand = log("c", rec("cutile-rs", "p", 1.05, samples=cs))
    base = log("b", rec("cutile", "p", 1.0, samples=bs))
    t = build_ratio_table("k", cand, {"cutile": base}, None, n_boot=400)
    assert t.geomean_ci is not None and t.geomean_ci[0] < 1.05 < t.geomean_ci[1]
    assert t.inconclusive


def test_no_samples_no_ci() -> None:
    t = table_for([1.2, 1.3])
    assert t.geomean_ci is None and all(r.ci_low is None for r in t.rows) and not t.inconclusive


def test_invariant_never_done_with_missing_property() -> None:
    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies

    @hyp.given(
        st.lists(
            st.one_of(
                st.floats(min_value=0.01, max_value=100), st.sampled_from([float("nan"), -1.0, 0.0, None])
            ),
            min_size=0,
            max_size=6,
        )
    )
    def check(ratios: list[float | None]) -> None:
        recs, outs = [], []
        for i, r in enumerate(ratios):
            if r is None:
                outs.append(
                    Outcome(
                        nodeid=f"{FUNC}[cutile_rs-p{i}]",
                        func_key=FUNC,
                        backend_token="cutile_rs",
                        params=f"p{i}",
                        outcome="failed",
                    )
                )
            else:
                recs.append(rec("cutile-rs", f"p{i}", r))
        base = log("b", *[rec("cutile", f"p{i}", 1.0) for i in range(len(ratios))])
        t = build_ratio_table("k", log("c", *recs, outcomes=tuple(outs)), {"cutile": base}, None)
        missing = any(r.status == "NA" for r in t.rows)
        assert not (missing and t.verdict == "DONE")
        if t.geomean is None:
            assert t.verdict == "BLOCKED"

    check()


def test_capture_suspect_rows_are_na_never_a_median() -> None:
    """A self-check that doubted a capture (the REAL 2.06x case of bench/gpu_runs/2026-12-01/clock.call1.json:
    266.379 µs CUPTI vs 129.4 µs events) makes that row NA on either side; the rest still count."""
    from dataclasses import replace

    bad = replace(
        rec("cutile-rs", "p1", 0.266379).phases["forward"],
        capture_verdict="suspect",
        capture_reason="CUPTI median 266.38 us is 2.06x the CUDA-event span",
        harness="workbench",
    )
    cand = log(
        "c",
        rec("cutile-rs", "p0", 0.12685),
        PerfRecord(
            nodeid=f"{FUNC}[cutile_rs-p1]",
            func_key=FUNC,
            framework="cutile-rs",
            params="p1",
            phases={"forward": bad},
        ),
        rec("cutile-rs", "p2", 0.12685),
    )
    bad_base = replace(rec("cutile", "p2", 0.26).phases["forward"], capture_verdict="suspect")
    base = log(
        "b",
        rec("cutile", "p0", 0.12685),
        rec("cutile", "p1", 0.12685),
        PerfRecord(
            nodeid=f"{FUNC}[cutile-p2]",
            func_key=FUNC,
            framework="cutile",
            params="p2",
            phases={"forward": bad_base},
        ),
    )
    t = build_ratio_table("k", cand, {"cutile": base}, None)
    na = {r.params: r.reason for r in t.rows if r.status == "NA"}
    assert set(na) == {"p1", "p2"}
    assert na["p1"].startswith("capture suspect (median 0.266379 ms not valid): CUPTI median 266.38 us")
    assert na["p2"].startswith("baseline capture suspect (cutile)")
    assert [r.params for r in t.matched] == ["p0"] and t.severity == "MISSING_DATA"
