"""Statistics on numpy/scipy (issue 26), cross-checked against the old pure-Python implementation.

Data: the REAL recorded H200 samples of every shipped session (``cutile_workbench/profiles/*/session``: every
baseline and candidate log, forward-phase ``samples_ms``), paired per config across backends; plus
SYNTHETIC draws (seeded, labelled) for the distribution identity of the vectorised median draw.
The reference is ``tests/stats_reference.py`` (the code as it was before the move, verbatim).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import stats_reference as ref

from cutile_workbench.artifacts.perflog.parser import parse_perf_log
from cutile_workbench.history.regress import mann_whitney_u
from cutile_workbench.services.stage_e import open_kernel, ratio_table
from cutile_workbench.stages.e.stats import bootstrap_medians, median_ratio_ci

PROFILES = Path(__file__).resolve().parents[2] / "cutile_workbench" / "profiles"
SESSIONS = sorted(p for p in PROFILES.glob("*/session/*") if (p / "reports").is_dir())


def _recorded_pairs() -> list[tuple[str, tuple[float, ...], tuple[float, ...]]]:
    """(label, samples a, samples b) for every config measured by two logs of one recorded kernel."""
    pairs = []
    for kdir in SESSIONS:
        by_log: dict[str, dict[str, tuple[float, ...]]] = {}
        for path in sorted(kdir.glob("**/*.txt")):
            log = parse_perf_log(path)
            by_log[path.name] = {
                r.params: r.forward.samples_ms
                for r in log.records
                if r.forward is not None and r.forward.samples_ms
            }
        for (na, a), (nb, b) in itertools.combinations(sorted(by_log.items()), 2):
            for params in sorted(set(a) & set(b)):
                pairs.append((f"{kdir.name}:{params}:{na}/{nb}", a[params], b[params]))
    return pairs


PAIRS = _recorded_pairs()


def test_recorded_data_is_there() -> None:
    assert len(SESSIONS) >= 5 and len(PAIRS) >= 30
    assert all(len(a) >= 10 and len(b) >= 10 for _, a, b in PAIRS)


def test_mann_whitney_matches_the_old_implementation_on_recorded_data() -> None:
    """REAL samples: same U, same method, same p (the decisions cannot move)."""
    for label, a, b in PAIRS:
        new = mann_whitney_u(a, b)
        u, p, method, ties = ref.mann_whitney_u(a, b)
        assert (new.statistic, new.method, new.ties) == (u, method, ties), label
        assert new.p_value == pytest.approx(p, rel=1e-9, abs=1e-300), label


def test_mann_whitney_edge_cases_keep_their_meaning() -> None:
    """SYNTHETIC: all values identical → p 1 (no evidence), not scipy's NaN; an empty side refused."""
    r = mann_whitney_u([3.0] * 8, [3.0] * 9)
    assert r.p_value == 1.0 and r.method == "normal" and r.ties
    with pytest.raises(ValueError):
        mann_whitney_u([], [1.0])
    assert mann_whitney_u([1.0], [2.0]).method == "exact"


def test_vectorised_median_draw_has_the_resample_median_distribution() -> None:
    """SYNTHETIC (seeded): the order-statistic draw vs resample-then-median, odd and even n."""
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 20, 51):
        xs = np.sort(rng.random(n))
        fast = bootstrap_medians(np.random.default_rng(1), xs, 40_000)
        naive = np.median(xs[np.random.default_rng(2).integers(0, n, size=(40_000, n))], axis=1)
        assert fast.shape == (40_000,)
        for q in (0.025, 0.25, 0.5, 0.75, 0.975):
            assert np.quantile(fast, q) == pytest.approx(np.quantile(naive, q), abs=0.03), (n, q)


def test_median_ratio_ci_agrees_with_the_old_bootstrap_on_recorded_data() -> None:
    """REAL samples: the new CI (numpy stream) and the old one (random.Random stream) estimate the
    same percentiles; with 4000 replicates they agree to a small fraction of the CI's width."""
    for label, a, b in PAIRS:
        new = median_ratio_ci(a, b, n_boot=4000, seed=0, level=0.99)
        old = ref.median_ratio_ci(a, b, n_boot=4000, seed=0, level=0.99)
        assert new is not None and old is not None, label
        width = max(old[1] - old[0], 1e-9 * abs(old[1]))
        assert (
            abs(new[0] - old[0]) <= 0.25 * width + 1e-12 and abs(new[1] - old[1]) <= 0.25 * width + 1e-12
        ), (label, new, old)
        assert (
            new[0] <= np.median(a) / np.median(b) <= new[1]
            or old[0] > np.median(a) / np.median(b)
            or old[1] < np.median(a) / np.median(b)
        ), label


def test_median_ratio_ci_is_deterministic_for_a_seed() -> None:
    _, a, b = PAIRS[0]
    assert median_ratio_ci(a, b, seed=5) == median_ratio_ci(a, b, seed=5)
    assert median_ratio_ci(a, b, seed=5) != median_ratio_ci(a, b, seed=6)


@pytest.mark.parametrize("kdir", SESSIONS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_e_table_cis_agree_with_the_old_bootstrap_on_recorded_sessions(kdir: Path) -> None:
    """REAL sessions: each row's 95% CI from the vectorised bootstrap vs the old per-row one."""
    ws = open_kernel(kdir.name, out_root=kdir.parent, tilegym=None)
    table = ratio_table(ws)
    ok = [r for r in table.rows if r.status == "OK"]
    assert ok and all(r.ci_low is not None and r.ci_high is not None for r in ok)
    assert table.geomean_ci is not None and table.geomean_ci[0] <= table.geomean <= table.geomean_ci[1]
    cand = {
        r.params: r.forward
        for r in parse_perf_log(kdir / "reports/agent_logs/perf_cutile_rs.full.txt").records
        if r.forward is not None
    }
    for row in ok:
        base_log = kdir / (
            "baseline_perf_cutile.txt"
            if row.baseline_backend == "cutile"
            else "baseline_perf_triton_tileir.txt"
        )
        base = {r.params: r.forward for r in parse_perf_log(base_log).records if r.forward is not None}
        old = ref.median_ratio_ci(
            cand[row.params].samples_ms, base[row.params].samples_ms, n_boot=4000, level=0.95
        )
        assert old is not None
        width = old[1] - old[0]
        assert abs(row.ci_low - old[0]) <= 0.3 * width + 1e-12, row.params
        assert abs(row.ci_high - old[1]) <= 0.3 * width + 1e-12, row.params
