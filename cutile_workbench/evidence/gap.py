"""Is a per-launch kernel-time gap real, noise, or unresolved? (the rule F's ALIGNED rests on)

Contract of :func:`assess_gap` — the ratio is candidate / reference **per-launch** main-kernel time:
- ``noise``: the ratio is ≤ :data:`NOISE_RATIO` (1.05, E's own gate: a gap E would pass is noise here),
  or ≤ 1 + the row's run-to-run A/A spread from the history where that is wider (``noise_floor``).
- ``real``: the ratio is > 1.05 and its 95% interval lies above 1.05 — or no interval can be formed
  (then ``ci`` is None and the reason says "point estimate only").
- ``unresolved``: the ratio is > 1.05 but the interval reaches down to ≤ 1.05: the samples are too
  noisy to call it either way (a focused re-measurement is needed, not a verdict).
- ``unknown``: no per-launch or per-call time on one side.
Intervals, by basis (``basis`` names which one was used):
1. per-call main-kernel durations of both sides' CUPTI captures → percentile bootstrap of the ratio of
   medians (:func:`cutile_workbench.infra.bootstrap.ratio_ci`);
2. E's row CI (``RatioRow.ci_low/ci_high``, bootstrap over raw samples) when the per-launch time is
   the per-call time (one launch per call on both sides);
3. the perf-log ``rel_std`` and ``nrep`` of both medians (same condition): the large-sample standard
   error of a median, ``1.2533·σ/√n``, combined in log space, ±1.96 SE.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from cutile_workbench.infra.bootstrap import ratio_ci
from cutile_workbench.model import PhaseStats, RatioRow

NOISE_RATIO = 1.05
GapStatus = Literal["noise", "real", "unresolved", "unknown"]


@dataclass(frozen=True)
class GapAssessment:
    """The verdict on one per-launch gap, with the numbers and the basis."""

    status: GapStatus
    ratio: float | None
    ci: tuple[float, float] | None
    basis: str
    reason: str

    @property
    def text(self) -> str:
        if self.ratio is None:
            return self.reason
        ci = f", 95% CI {self.ci[0]:.3f}–{self.ci[1]:.3f}" if self.ci else ""
        return f"per-launch ratio {self.ratio:.3f}x{ci} ({self.basis}): {self.reason}"


def _median_se_log(stats: PhaseStats) -> float | None:
    if stats.rel_std_pct is None or not stats.nrep or stats.nrep < 2 or not math.isfinite(stats.rel_std_pct):
        return None
    return 1.2533 * (stats.rel_std_pct / 100.0) / math.sqrt(stats.nrep)


def interval_from_spread(
    ratio: float, cand: PhaseStats | None, base: PhaseStats | None
) -> tuple[float, float] | None:
    """Basis 3 of the module docstring (None without rel_std/nrep on both sides)."""
    if cand is None or base is None:
        return None
    sc, sb = _median_se_log(cand), _median_se_log(base)
    if sc is None or sb is None:
        return None
    se = math.sqrt(sc * sc + sb * sb)
    return ratio * math.exp(-1.96 * se), ratio * math.exp(1.96 * se)


def noise_band(noise_floor: float | None) -> tuple[float, str]:
    """The band F calls noise: E's 1.05 gate, or the row's run-to-run A/A spread where that is wider."""
    if noise_floor is not None and 1.0 + noise_floor > NOISE_RATIO:
        return (
            1.0 + noise_floor,
            f"the row's run-to-run A/A spread ±{noise_floor:.1%} (history), wider than E's gate",
        )
    return NOISE_RATIO, "E's gate"


def _decide_in_band(
    ratio: float, ci: tuple[float, float] | None, basis: str, noise_floor: float | None = None
) -> GapAssessment:
    band, why = noise_band(noise_floor)
    if ratio <= band:
        return GapAssessment("noise", ratio, ci, basis, f"within the {band:.2f}x noise band ({why})")
    if ci is None:
        return GapAssessment(
            "real",
            ratio,
            None,
            basis,
            f"above the {band:.2f}x band (point estimate only: no samples or spread)",
        )
    if ci[0] > band:
        return GapAssessment("real", ratio, ci, basis, f"the whole 95% interval lies above {band:.2f}x")
    return GapAssessment(
        "unresolved",
        ratio,
        ci,
        basis,
        f"the 95% interval reaches {ci[0]:.3f}x: too noisy to call real or noise",
    )


def assess_gap(
    *,
    cand_per_launch_ns: Sequence[float] = (),
    base_per_launch_ns: Sequence[float] = (),
    row: RatioRow | None = None,
    one_launch_each: bool = False,
    cand_stats: PhaseStats | None = None,
    base_stats: PhaseStats | None = None,
    cand_per_launch_us: float | None = None,
    base_per_launch_us: float | None = None,
    noise_floor: float | None = None,
) -> GapAssessment:
    """Classify one gap (see the module docstring for the bases, in order of preference); ``noise_floor``
    (the row's A/A spread) widens the noise band where it is wider than E's gate (:func:`noise_band`)."""

    def _decide(ratio: float, ci: tuple[float, float] | None, basis: str) -> GapAssessment:
        return _decide_in_band(ratio, ci, basis, noise_floor)

    if cand_per_launch_ns and base_per_launch_ns:
        c, b = list(cand_per_launch_ns), list(base_per_launch_ns)
        mb = statistics.median(b)
        ratio = statistics.median(c) / mb if mb > 0 else math.inf
        if not math.isfinite(ratio):
            return GapAssessment("unknown", None, None, "captures", "reference per-launch time is zero")
        return _decide(ratio, ratio_ci(c, b), f"CUPTI per-launch times, {len(c)}/{len(b)} calls")
    if (
        cand_per_launch_us is not None
        and base_per_launch_us is not None
        and base_per_launch_us > 0
        and not one_launch_each
    ):
        return _decide(
            cand_per_launch_us / base_per_launch_us, None, "kernel_times per-launch time of one profiled call"
        )
    if row is not None and row.ratio is not None and one_launch_each:
        if row.ci_low is not None and row.ci_high is not None:
            return _decide(
                row.ratio, (row.ci_low, row.ci_high), "E medians, one launch per call (bootstrap CI)"
            )
        ci = interval_from_spread(row.ratio, cand_stats, base_stats)
        basis = "E medians, one launch per call" + (" (CI from rel_std and nrep)" if ci else "")
        return _decide(row.ratio, ci, basis)
    if cand_per_launch_us is not None and base_per_launch_us is not None and base_per_launch_us > 0:
        return _decide(cand_per_launch_us / base_per_launch_us, None, "kernel_times per-launch time")
    return GapAssessment("unknown", None, None, "none", "no per-launch time on both sides")
