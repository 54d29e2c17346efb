"""Percentile-bootstrap confidence intervals of a ratio of medians (numpy, deterministic).

Contract: :func:`median_ratio_ci` / :func:`ratio_ci` resample the two samples independently with
``numpy.random.default_rng(seed)`` and return the ``level`` (95%) percentile interval of
``median(numerator) / median(denominator)``, or None with fewer than two valid (finite, positive)
values a side. :func:`bootstrap_medians` draws the median of each with-replacement resample exactly
via the order-statistic identity (the k-th smallest of n uniform draws is Beta(k, n+1-k)),
vectorised over the replicates. Shared by E's table (``stages/e/stats``), the run history's
regression test and F's gap evidence, which is why it lives below all three.
:func:`row_seed` is the seed of one E row's own random stream (issue 31): a stable hash of the table's
seed and the row's test id, so a row's draws depend on nothing but that row.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import numpy as np


def valid_sample(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and x > 0


def row_seed(seed: int, func_key: str, params: str) -> int:
    """The seed of one row's own stream: the first 8 bytes of SHA-256 over the table's ``seed`` and the
    row's key (its test function and params), stable across processes, machines and Python versions
    (``hash()`` is salted per process, so it would not do)."""
    digest = hashlib.sha256(f"e-row\0{seed}\0{func_key}\0{params}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "little")


def bootstrap_medians(rng: np.random.Generator, xs: np.ndarray, n_boot: int) -> np.ndarray:
    """Medians of ``n_boot`` with-replacement resamples of sorted ``xs`` (exact in distribution).

    The k-th smallest of n uniform draws is Beta(k, n+1-k), so the median of a resample is drawn in
    O(1) per replicate (vectorised over replicates) instead of resampling n values and sorting."""
    n = len(xs)
    if n == 1:
        return np.full(n_boot, float(xs[0]))
    if n % 2:
        k = (n + 1) // 2
        u = rng.beta(k, n + 1 - k, size=n_boot)
        return xs[np.minimum(n - 1, (n * u).astype(np.intp))]
    k = n // 2
    u1 = rng.beta(k, n + 1 - k, size=n_boot)
    # given the k-th order statistic, the next is the min of the n-k draws above it
    u2 = u1 + (1.0 - u1) * rng.beta(1, n - k, size=n_boot)
    lo = xs[np.minimum(n - 1, (n * u1).astype(np.intp))]
    hi = xs[np.minimum(n - 1, (n * u2).astype(np.intp))]
    medians: np.ndarray = (lo + hi) / 2
    return medians


def sorted_valid(values: Sequence[float]) -> np.ndarray | None:
    """Sorted float array of ``values``; None with fewer than 2 or any non-finite/non-positive value."""
    arr = np.sort(np.asarray(values, dtype=float))
    if arr.size < 2 or not bool(np.all(np.isfinite(arr) & (arr > 0))):
        return None
    return arr


def interval(values: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1.0 - level) / 2
    lo, hi = np.quantile(values, [tail, 1.0 - tail])  # linear interpolation between order statistics
    return float(lo), float(hi)


def median_ratio_ci(
    numerator: Sequence[float],
    denominator: Sequence[float],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile-bootstrap CI of ``median(numerator) / median(denominator)``, the two samples
    resampled independently (the rule E's per-row CIs use); None with < 2 valid values a side."""
    num, den = sorted_valid(numerator), sorted_valid(denominator)
    if num is None or den is None or n_boot <= 0:
        return None
    rng = np.random.default_rng(seed)
    ratios = bootstrap_medians(rng, num, n_boot) / bootstrap_medians(rng, den, n_boot)
    return interval(ratios, level)


def ratio_ci(
    candidate: Sequence[float], baseline: Sequence[float], *, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float] | None:
    """95% percentile-bootstrap CI of median(candidate) / median(baseline), as for E's rows.

    None unless both sides have at least two valid (finite, positive) samples."""
    return median_ratio_ci(candidate, baseline, n_boot=n_boot, seed=seed, level=0.95)


# --------------------------------------------------------------------------- matching
