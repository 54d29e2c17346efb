"""Today's (pre-numpy) pure-Python statistics, kept verbatim as the cross-check reference.

``cutile_workbench.stages.e.stats`` and ``cutile_workbench.history.regress`` moved to numpy/scipy (issue 26); the tests in
``tests/unit/test_stats_numpy.py`` compare them with these on the REAL recorded samples. Copied from
``cutile_workbench/stages/e/stats.py`` and ``cutile_workbench/history/regress.py`` at 65cbbbf; not used by the package.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from functools import lru_cache

EXACT_MAX_PAIRS = 2500


def _valid(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and x > 0


def boot_median(rng: random.Random, xs: Sequence[float]) -> float:
    n = len(xs)
    if n == 1:
        return xs[0]
    if n % 2:
        k = (n + 1) // 2
        u = rng.betavariate(k, n + 1 - k)
        return xs[min(n - 1, int(n * u))]
    k = n // 2
    u1 = rng.betavariate(k, n + 1 - k)
    u2 = u1 + (1.0 - u1) * rng.betavariate(1, n - k)
    return (xs[min(n - 1, int(n * u1))] + xs[min(n - 1, int(n * u2))]) / 2


def percentile(sorted_vals: Sequence[float], q: float) -> float:
    pos = q * (len(sorted_vals) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def median_ratio_ci(
    numerator: Sequence[float],
    denominator: Sequence[float],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float] | None:
    num, den = sorted(numerator), sorted(denominator)
    if len(num) < 2 or len(den) < 2 or not all(_valid(x) for x in (*num, *den)) or n_boot <= 0:
        return None
    rng = random.Random(seed)
    ratios = sorted(boot_median(rng, num) / boot_median(rng, den) for _ in range(n_boot))
    tail = (1.0 - level) / 2
    return percentile(ratios, tail), percentile(ratios, 1.0 - tail)


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    groups: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        mid = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = mid
        groups.append(j - i + 1)
        i = j + 1
    return ranks, groups


@lru_cache(maxsize=64)
def _exact_counts(m: int, n: int) -> tuple[int, ...]:
    size = m * n + 1
    poly = [1] + [0] * (size + n + m)
    for i in range(1, m + 1):
        shift = n + i
        for k in range(len(poly) - 1, shift - 1, -1):
            poly[k] -= poly[k - shift]
        for k in range(i, len(poly)):
            poly[k] += poly[k - i]
    return tuple(poly[:size])


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> tuple[float, float, str, bool]:
    """(U of x, two-sided p, "exact"|"normal", ties) exactly as the old implementation decided them."""
    n1, n2 = len(x), len(y)
    ranks, groups = _ranks([*x, *y])
    u1 = math.fsum(ranks[:n1]) - n1 * (n1 + 1) / 2
    ties = any(g > 1 for g in groups)
    big = max(u1, n1 * n2 - u1)
    if not ties and n1 * n2 <= EXACT_MAX_PAIRS:
        counts = _exact_counts(min(n1, n2), max(n1, n2))
        total = math.comb(n1 + n2, n1)
        return u1, min(1.0, 2 * sum(counts[int(big) :]) / total), "exact", ties
    n = n1 + n2
    tie_term = sum(g**3 - g for g in groups) / (n * (n - 1)) if n > 1 else 0.0
    var = n1 * n2 / 12 * ((n + 1) - tie_term)
    if var <= 0:
        return u1, 1.0, "normal", ties
    z = (big - n1 * n2 / 2 - 0.5) / math.sqrt(var)
    return u1, max(min(1.0, math.erfc(z / math.sqrt(2))), 0.0), "normal", ties


def bootstrap(rows, n_boot: int, seed: int):  # type: ignore[no-untyped-def]
    """The old ``cutile_workbench.stages.e.stats._bootstrap`` (per-row CIs + the joint geomean CI), pure Python."""
    rng = random.Random(seed)
    samples = []
    for r in rows:
        cs, bs = r.cand.samples_ms, r.base.samples_ms
        ok = bool(cs) and bool(bs) and len(cs or ()) >= 2 and len(bs or ()) >= 2
        ok = ok and all(_valid(x) for x in (cs or ())) and all(_valid(x) for x in (bs or ()))
        samples.append((sorted(cs or ()), sorted(bs or ())) if ok else None)
    if n_boot <= 0 or not any(samples):
        return [None] * len(rows), None
    per_row: list[list[float]] = [[] for _ in rows]
    joint_ok = all(s is not None for s in samples)
    joint: list[float] = []
    for _ in range(n_boot):
        logs = 0.0
        for i, s in enumerate(samples):
            if s is None:
                continue
            ratio = boot_median(rng, s[0]) / boot_median(rng, s[1])
            per_row[i].append(ratio)
            logs += math.log(ratio)
        if joint_ok:
            joint.append(math.exp(logs / len(rows)))
    cis = []
    for i, s in enumerate(samples):
        if s is None:
            cis.append(None)
        else:
            vals = sorted(per_row[i])
            cis.append((percentile(vals, 0.025), percentile(vals, 0.975)))
    gci = None
    if joint_ok and joint:
        joint.sort()
        gci = (percentile(joint, 0.025), percentile(joint, 0.975))
    return cis, gci
