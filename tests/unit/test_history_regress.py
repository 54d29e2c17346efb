"""Regression statistics: Mann-Whitney U, the decision rule, and the bootstrap CI of the median ratio.

Data: SYNTHETIC series (seeded ``random.Random`` draws, labelled per test) for the statistics'
edge cases, plus REAL recorded H200 samples (``cutile_workbench/profiles/rms_norm/session``, 200 CUPTI samples per
config) for the decisions on real data. Reference p-values: textbook exact values and scipy
(``scipy.stats.mannwhitneyu``, which the implementation now calls; a runtime dependency).
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from cutile_workbench.artifacts.perflog.parser import parse_perf_log
from cutile_workbench.history.entries import ConfigResult
from cutile_workbench.history.regress import (
    RegressionPolicy,
    compare_results,
    mann_whitney_u,
    min_attainable_p,
)
from cutile_workbench.stages.e.stats import median_ratio_ci

SESSION = (
    Path(__file__).resolve().parents[2]
    / "cutile_workbench"
    / "profiles"
    / "rms_norm"
    / "session"
    / "rms_norm"
)


def result(samples: list[float] | None, median: float | None = None, **kw: object) -> ConfigResult:
    med = median if median is not None else sorted(samples or [1.0])[(len(samples or [1.0]) - 1) // 2]
    return ConfigResult(
        "t.py::T::test_perf",
        "4096-1024",
        "cutile",
        "forward",
        "t.py::T::test_perf[x]",
        med,
        tuple(samples) if samples is not None else None,
        **kw,
    )  # type: ignore[arg-type]


def real_samples(log_name: str, params: str) -> tuple[float, ...]:
    log = parse_perf_log(SESSION / log_name)
    rec = next(r for r in log.records if r.params == params)
    assert rec.forward is not None and rec.forward.samples_ms is not None
    return rec.forward.samples_ms


# --------------------------------------------------------------------------- Mann-Whitney U


def test_exact_null_distribution_counts_are_the_gaussian_binomial():
    """The old hand-written exact distribution (tests/stats_reference.py, the cross-check reference)."""
    from stats_reference import _exact_counts

    # [5 choose 2]_q = 1 + q + 2q^2 + 2q^3 + 2q^4 + q^5 + q^6 (textbook); sums are C(m+n, m)
    assert _exact_counts(2, 3) == (1, 1, 2, 2, 2, 1, 1)
    for m, n in ((1, 1), (3, 4), (5, 5), (7, 12)):
        counts = _exact_counts(m, n)
        assert sum(counts) == math.comb(m + n, m) and counts == counts[::-1]


def test_textbook_exact_values():
    # complete separation of 5 vs 5: two-sided p = 2 / C(10, 5) = 2/252
    r = mann_whitney_u([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert r.method == "exact" and r.statistic == 0 and r.p_value == pytest.approx(2 / 252, rel=1e-12)
    # U = 17 of (19, 22, 16, 29, 24) vs (20, 11, 17, 12): P(U >= 17) = 10/126, two-sided 0.1111...
    r = mann_whitney_u([19, 22, 16, 29, 24], [20, 11, 17, 12])
    assert r.statistic == 17 and r.p_value == pytest.approx(1 / 9, rel=1e-12)


def test_ties_use_the_tie_corrected_normal_approximation():
    # value from scipy 1.17.1: mannwhitneyu(x, y, method="asymptotic") (continuity-corrected)
    r = mann_whitney_u([1.1, 2.2, 2.2, 3.0, 4.5, 4.5, 5.0], [2.2, 3.0, 5.5, 6.0, 6.0, 7.1])
    assert r.method == "normal" and r.ties and r.statistic == 8.5
    assert r.p_value == pytest.approx(0.08344982949310291, rel=1e-12)
    assert mann_whitney_u([3.0] * 8, [3.0] * 9).p_value == 1.0  # all equal: no evidence


def test_matches_scipy_on_synthetic_series():
    """SYNTHETIC: 200 seeded pairs of samples, with and without ties, sizes 1..40."""
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(7)
    for _ in range(200):
        n1, n2 = rng.randint(1, 40), rng.randint(1, 40)
        if rng.random() < 0.5:  # ties: CUPTI timestamps are quantised to ~32 ns
            x = [rng.randint(0, 12) * 0.032 for _ in range(n1)]
            y = [rng.randint(1, 13) * 0.032 for _ in range(n2)]
        else:
            x = [rng.gauss(1.0, 0.05) for _ in range(n1)]
            y = [rng.gauss(1.02, 0.05) for _ in range(n2)]
        ours = mann_whitney_u(x, y)
        ref = stats.mannwhitneyu(
            x,
            y,
            alternative="two-sided",
            use_continuity=True,
            method="exact" if ours.method == "exact" else "asymptotic",
        )
        assert ours.statistic == pytest.approx(float(ref.statistic))
        assert ours.p_value == pytest.approx(float(ref.pvalue), rel=1e-9, abs=1e-15)


def test_min_attainable_p_is_the_permutation_bound():
    assert min_attainable_p(5, 5) == pytest.approx(2 / 252)
    assert min_attainable_p(6, 6) > 0.002 > min_attainable_p(7, 7)


# --------------------------------------------------------------------------- the decision rule


def test_median_only_is_inconclusive_whatever_the_percentage():
    flag = compare_results(result(None, 0.0100), result(None, 0.0130))  # +30 %, no samples
    assert flag.change == "inconclusive" and "no raw samples" in flag.reason
    assert flag.ratio == pytest.approx(1.3) and flag.test is None


def test_too_few_samples_is_inconclusive():
    """SYNTHETIC: 6 vs 6 perfectly separated samples cannot reach p < 0.002."""
    flag = compare_results(
        result([1.0, 1.01, 1.02, 1.03, 1.04, 1.05]), result([2.0, 2.1, 2.2, 2.3, 2.4, 2.5])
    )
    assert flag.change == "inconclusive" and "cannot reach" in flag.reason


def test_clear_shift_is_a_regression_and_back_an_improvement():
    """SYNTHETIC: 100 samples around 10 µs, then around 10.5 µs (+5 %), rel. std 1 %."""
    rng = random.Random(1)
    old = [rng.gauss(0.0100, 0.0001) for _ in range(100)]
    new = [rng.gauss(0.0105, 0.0001) for _ in range(100)]
    up = compare_results(result(old), result(new))
    assert up.change == "regression" and up.symbol == "+"
    assert up.ci is not None and up.ci[0] > 1.0 and up.test is not None and up.test.p_value < 0.002
    assert "p=" in up.reason and "alpha=0.002" in up.reason and "2%" in up.reason
    down = compare_results(result(new), result(old))
    assert down.change == "improvement" and down.ci is not None and down.ci[1] < 1.0


def test_a_significant_change_below_the_threshold_is_same():
    """SYNTHETIC: +0.5 % with 400 very tight samples: significant, but below the 2 % effect."""
    rng = random.Random(2)
    old = [rng.gauss(1.000, 0.001) for _ in range(400)]
    new = [rng.gauss(1.005, 0.001) for _ in range(400)]
    flag = compare_results(result(old), result(new))
    assert flag.change == "same" and "below the effect threshold" in flag.reason


def test_noisy_small_samples_are_inconclusive_not_same():
    """SYNTHETIC: 10 samples with 10 % noise: the CI is far wider than the ±2 % band."""
    rng = random.Random(3)
    old = [rng.gauss(1.0, 0.1) for _ in range(10)]
    new = [rng.gauss(1.0, 0.1) for _ in range(10)]
    flag = compare_results(result(old), result(new))
    assert flag.change == "inconclusive" and "cannot tell" in flag.reason


def test_false_regression_rate_under_the_null_is_small():
    """SYNTHETIC: 60 pairs of identically distributed series (n=50, 3 % noise): no regression."""
    rng = random.Random(4)
    changes = []
    for _ in range(60):
        a = [rng.gauss(1.0, 0.03) for _ in range(50)]
        b = [rng.gauss(1.0, 0.03) for _ in range(50)]
        changes.append(compare_results(result(a), result(b), RegressionPolicy(n_boot=300)).change)
    assert changes.count("regression") == 0 and changes.count("improvement") == 0


def test_launch_and_kernel_changes_are_noted():
    flag = compare_results(
        result(None, 1.0, launches_per_call=1, kernel_name="k1"),
        result(None, 1.2, launches_per_call=3, kernel_name="k2"),
    )
    assert "launches/call 1 → 3" in flag.notes and any("top kernel changed" in n for n in flag.notes)


# --------------------------------------------------------------------------- real recorded samples


def test_real_same_run_halves_are_same():
    """REAL: each recorded cuTile config's 200 CUPTI samples, first half vs second half."""
    for rec in parse_perf_log(SESSION / "baseline_perf_cutile.txt").records:
        samples = list(rec.forward.samples_ms or ()) if rec.forward else []
        half = len(samples) // 2
        flag = compare_results(result(samples[:half]), result(samples[half:]))
        assert flag.change == "same", (rec.params, flag.reason)
        assert (
            flag.test is not None and flag.test.method == "normal" and flag.test.ties
        )  # quantised timestamps


def test_real_cutile_vs_triton_is_decided_on_the_samples():
    """REAL: Triton 6.40 µs vs cuTile 7.30 µs at 4096x1024 (README of the recorded session)."""
    tri = real_samples("baseline_perf_triton_tileir.txt", "4096-1024-torch.bfloat16")
    cut = real_samples("baseline_perf_cutile.txt", "4096-1024-torch.bfloat16")
    flag = compare_results(result(list(tri), 0.0064), result(list(cut), 0.007296))
    assert flag.change == "regression" and flag.ratio == pytest.approx(0.007296 / 0.0064)
    assert flag.ci is not None and flag.ci[0] > 1.1 and flag.test is not None and flag.test.p_value < 1e-30


def test_median_ratio_ci_brackets_the_ratio_of_medians():
    tri = real_samples("baseline_perf_triton_tileir.txt", "8192-8192-torch.bfloat16")
    cut = real_samples("baseline_perf_cutile.txt", "8192-8192-torch.bfloat16")
    ci = median_ratio_ci(cut, tri, n_boot=500, seed=0, level=0.95)
    assert ci is not None and ci[0] <= 0.081088 / 0.06848 <= ci[1]
    assert median_ratio_ci([1.0], [1.0, 2.0]) is None  # fewer than 2 values: no CI
