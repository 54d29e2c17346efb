"""Decision edges of F's pattern rule, the gap's noise band, the noise floor and the perf-log parser's
outcome rank, each pinned at, just below and just above its threshold (issue 35, item 2: the
mutation survivors the issue names — SLOW_RATIO 1.05→1.06, the 75 % uniform share, a spread of
exactly 2.0x, NA rows in the share, the gap's noise band, the floor taking the smaller side, a later
PASSED overriding a FAILED).

Rows are SYNTHETIC RatioRows (the rules read only status and ratio); the perf log is the REAL rms_norm
H200 candidate log with one status line edited.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fuzzing.logedit import Edit, edit_log

from cutile_workbench.artifacts.perflog.parser import parse_perf_log
from cutile_workbench.evidence.gap import NOISE_RATIO, _decide_in_band, interval_from_spread, noise_band
from cutile_workbench.history.noise import SideNoise, row_noise, side_spread
from cutile_workbench.model import PhaseStats, RatioRow
from cutile_workbench.stages.f.diagnosis import (
    SLOW_RATIO,
    UNIFORM_MAX_SPREAD,
    UNIFORM_MIN_SHARE,
    classify_pattern,
)


def _row(i: int, ratio: float | None) -> RatioRow:
    status = "OK" if ratio is not None else "NA"
    return RatioRow("f", f"cfg{i}", None, "cutile", 1.0, ratio, ratio, status)  # type: ignore[arg-type]


def _pattern(ratios: list[float | None]) -> str:
    return classify_pattern([_row(i, r) for i, r in enumerate(ratios)])[0]


def test_the_constants_are_the_documented_ones() -> None:
    assert (SLOW_RATIO, UNIFORM_MIN_SHARE, UNIFORM_MAX_SPREAD, NOISE_RATIO) == (1.05, 0.75, 2.0, 1.05)


@pytest.mark.parametrize(
    ("ratio", "slow"),
    [(1.05, False), (1.0499, False), (1.0501, True), (1.06, True)],  # 1.06: slow under 1.05, not under 1.0605
)
def test_slow_ratio_edge(ratio: float, slow: bool) -> None:
    assert _pattern([ratio]) == ("uniform" if slow else "none")


@pytest.mark.parametrize(
    ("slow", "fast", "pattern"),
    [
        (3, 1, "uniform"),  # exactly 75 %
        (5, 2, "shape_specific"),  # 71 %: just below
        (4, 1, "uniform"),  # 80 %: just above
    ],
)
def test_uniform_share_edge(slow: int, fast: int, pattern: str) -> None:
    assert _pattern([1.3] * slow + [1.0] * fast) == pattern


def test_na_rows_do_not_count_in_the_share() -> None:
    """3 slow of 4 matched is 75 % (uniform); counting 5 NA rows would make it 3 of 9 (shape-specific)."""
    assert _pattern([1.3, 1.3, 1.3, 1.0, None, None, None, None, None]) == "uniform"


@pytest.mark.parametrize(
    ("low", "high", "pattern"),
    [
        (1.25, 2.5, "uniform"),  # a spread of exactly 2.0x
        (1.25, 2.4999, "uniform"),
        (1.25, 2.5001, "shape_specific"),  # 2.00008x: just above (a 2.02 mutant calls it uniform)
        (1.25, 2.6, "shape_specific"),
    ],
)
def test_uniform_spread_edge(low: float, high: float, pattern: str) -> None:
    assert high / low == pytest.approx(high / low)  # plain floats: 2.5 / 1.25 is exactly 2.0
    assert _pattern([low, high]) == pattern


@pytest.mark.parametrize(
    ("floor", "band"),
    [(None, 1.05), (0.04, 1.05), (0.05, 1.05), (0.0501, 1.0501), (0.2, 1.2)],
)
def test_noise_band_is_the_wider_of_the_gate_and_the_floor(floor: float | None, band: float) -> None:
    got, why = noise_band(floor)
    assert got == pytest.approx(band, abs=1e-12)
    assert ("A/A" in why) is (band > 1.05)


@pytest.mark.parametrize(
    ("ratio", "ci", "status"),
    [
        (1.05, None, "noise"),  # at the band: noise
        (1.0501, None, "real"),  # just above, point estimate only
        (1.2, (1.05, 1.3), "unresolved"),  # the interval touches the band
        (1.2, (1.0501, 1.3), "real"),  # the whole interval above it
    ],
)
def test_gap_decision_edges(ratio: float, ci: tuple[float, float] | None, status: str) -> None:
    assert _decide_in_band(ratio, ci, "basis").status == status


def test_a_wider_floor_widens_the_gap_band() -> None:
    assert _decide_in_band(1.08, None, "b", noise_floor=0.1).status == "noise"
    assert _decide_in_band(1.08, None, "b", noise_floor=None).status == "real"


def test_interval_from_spread_is_1_96_standard_errors() -> None:
    stats = PhaseStats(1.0, rel_std_pct=10.0, nrep=100)
    se = math.sqrt(2) * 1.2533 * 0.10 / 10
    lo, hi = interval_from_spread(1.2, stats, stats) or (0.0, 0.0)
    assert (lo, hi) == pytest.approx((1.2 * math.exp(-1.96 * se), 1.2 * math.exp(1.96 * se)), rel=1e-12)


def test_the_noise_floor_is_the_larger_sides_spread() -> None:
    cand, base = SideNoise("cutile-rs", 3, 0.02), SideNoise("cutile", 4, 0.08)
    assert row_noise(cand, base).floor == 0.08 == row_noise(base, cand).floor
    assert row_noise(cand, SideNoise("cutile", 1, None)).floor == 0.02  # one side unknown: the other
    assert row_noise(SideNoise("a", 1, None), None).floor is None


@pytest.mark.parametrize(
    ("medians", "spread"),
    [([1.0], None), ([1.0, 1.0], 0.0), ([1.0, 1.1], pytest.approx(0.1)), ([2.0, 0.0, 1.0], 1.0)],
)
def test_side_spread_edges(medians: list[float], spread: object) -> None:
    assert side_spread(medians) == spread


# --------------------------------------------------------------------------- the parser's outcome rank

SESSION = Path(__file__).resolve().parents[2] / "cutile_workbench/profiles/rms_norm/session/rms_norm"
CONFIG = "8192-8192-torch.bfloat16"


def _nodeid(text: str) -> str:
    return next(
        line.split(": ", 1)[1].strip()
        for line in text.splitlines()
        if line.startswith("nodeid: ") and line.rstrip().endswith(f"{CONFIG}]")
    )


@pytest.mark.parametrize("later", ["PASSED", "SKIPPED"])
def test_a_later_lower_rank_word_does_not_override_failed(later: str) -> None:
    """FAILED (the record then dropped) and, later, a summary line ``PASSED <nodeid>``: still failed."""
    text = (SESSION / "reports/agent_logs/perf_cutile_rs.full.txt").read_text()
    nodeid = _nodeid(text)
    failed = edit_log(text, {CONFIG: Edit("fail_keep_record")})
    log = parse_perf_log("perf_cutile_rs.full.txt", text=failed + f"\n{later} {nodeid}\n")
    outcome = next(o for o in log.outcomes if o.nodeid == nodeid)
    assert outcome.outcome == "failed"
    assert nodeid not in {r.nodeid for r in log.records}


def test_a_later_failed_overrides_passed() -> None:
    """The rank's other side: PASSED with its record, then ``FAILED <nodeid>``: failed, record dropped."""
    text = (SESSION / "reports/agent_logs/perf_cutile_rs.full.txt").read_text()
    nodeid = _nodeid(text)
    log = parse_perf_log("perf_cutile_rs.full.txt", text=text + f"\nFAILED {nodeid} - boom\n")
    assert next(o for o in log.outcomes if o.nodeid == nodeid).outcome == "failed"
    assert nodeid not in {r.nodeid for r in log.records}


def test_in_physical_range_edges() -> None:
    from cutile_workbench.artifacts.perflog.parser import MAX_COUNT, MAX_VALUE, in_physical_range

    assert in_physical_range(0, integer=True) and in_physical_range(MAX_COUNT, integer=True)  # both ends
    assert not in_physical_range(MAX_COUNT + 1, integer=True) and not in_physical_range(-1, integer=True)
    assert in_physical_range(0.0) and in_physical_range(MAX_VALUE)
    assert not in_physical_range(math.nextafter(MAX_VALUE, math.inf)) and not in_physical_range(-1e-300)
    assert not in_physical_range(math.inf) and not in_physical_range(math.nan)


def test_a_second_failed_line_keeps_the_first_reason() -> None:
    """Same outcome twice: a reason fills an empty one, it never replaces the first one given."""
    text = (SESSION / "reports/agent_logs/perf_cutile_rs.full.txt").read_text()
    nodeid = _nodeid(text)
    log = parse_perf_log(
        "perf_cutile_rs.full.txt", text=text + f"\nFAILED {nodeid} - first\nFAILED {nodeid} - second\n"
    )
    assert next(o for o in log.outcomes if o.nodeid == nodeid).reason == "first"


def test_the_geomean_ci_contains_the_geomean_on_a_real_session() -> None:
    """The joint bootstrap averages the rows' log ratios (a sum times n, not over n, misses it)."""
    from cutile_workbench.services import stage_e
    from cutile_workbench.stages.e.e_table import load_e_table

    ws = stage_e.open_kernel("rms_norm", out_root=SESSION.parent, tilegym=None)
    table = load_e_table(ws, n_boot=200, use_cache=False).table
    assert table.geomean is not None and table.geomean_ci is not None and len(table.matched) > 2
    assert table.geomean_ci[0] <= table.geomean <= table.geomean_ci[1]
