"""Regression / improvement between two runs of one config, decided on the raw samples.

Contract of :func:`mann_whitney_u` (two-sided, ``statistic`` = U of the first sample, scipy's
convention): **exact** null distribution when there are no ties and ``n1·n2 ≤ EXACT_MAX_PAIRS``
(``scipy.stats.mannwhitneyu``, ``method="exact"``); otherwise the **normal approximation with tie
correction and continuity correction** (its ``asymptotic`` method). All values identical: p = 1.

Contract of :func:`compare_results` (old run → new run, ``ratio = median_new / median_old`` of the
recorded medians, as E's ratios are):

- ``inconclusive`` when either side has no raw samples (median only), fewer than 2 of them, or so
  few that no arrangement could reach ``alpha`` (``2 / C(n1+n2, n1) ≥ alpha``: at asv's
  ``alpha = 0.002`` that is 6 or fewer per side);
- ``regression`` when ``p < alpha`` **and** ``ratio ≥ 1 + min_effect`` **and** the bootstrap
  ``ci_level`` CI of the median ratio lies above 1; ``improvement`` symmetrically
  (``ratio ≤ 1/(1 + min_effect)``, CI below 1);
- ``same`` when the CI lies inside ``[1/(1 + min_effect), 1 + min_effect]`` (any difference is
  smaller than the effect threshold, significant or not);
- ``inconclusive`` otherwise (the data cannot tell a change ≥ the threshold from none).

Never decided on a bare percentage: without samples a 30 % jump is ``inconclusive``. The defaults
(``alpha`` 0.002 as asv, ``min_effect`` 2 %: above the ~1-2 % capture-to-capture drift reported
for GPU kernels, ``ci_level`` 99 %, 2000 replicates, seed 0) are stated in every reason.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Literal

import numpy as np

from cutile_workbench.artifacts.derive_cache import code_key_cached
from cutile_workbench.history.entries import ConfigResult
from cutile_workbench.infra.bootstrap import median_ratio_ci

EXACT_MAX_PAIRS = 2500

Change = Literal["regression", "improvement", "same", "inconclusive"]


@dataclass(frozen=True)
class MannWhitney:
    """Result of a two-sided Mann-Whitney U test."""

    statistic: float  # U of the first sample
    p_value: float
    method: Literal["exact", "normal"]
    n1: int
    n2: int
    ties: bool

    @property
    def method_text(self) -> str:
        return (
            "Mann-Whitney U, exact"
            if self.method == "exact"
            else "Mann-Whitney U, normal approx." + (" (tie-corrected)" if self.ties else "")
        )


@dataclass(frozen=True)
class RegressionPolicy:
    """The stated decision parameters (see module doc)."""

    alpha: float = 0.002
    min_effect: float = 0.02
    ci_level: float = 0.99
    n_boot: int = 2000
    seed: int = 0

    def describe(self) -> str:
        return (
            f"alpha={self.alpha:g}, effect threshold {self.min_effect:.0%}, "
            f"{self.ci_level:.0%} bootstrap CI ({self.n_boot} replicates)"
        )


DEFAULT_POLICY = RegressionPolicy()


@dataclass(frozen=True)
class ChangeFlag:
    """The verdict between two consecutive runs of one config, with its numbers."""

    change: Change
    ratio: float  # median_new / median_old
    reason: str
    ci: tuple[float, float] | None = None
    test: MannWhitney | None = None
    notes: tuple[str, ...] = ()  # launches/call or kernel changed, conditions differ, ...

    @property
    def symbol(self) -> str:
        """One character for tables: ``+`` slower, ``-`` faster, ``=`` same, ``~`` inconclusive (asv style)."""
        return {"regression": "+", "improvement": "-", "same": "=", "inconclusive": "~"}[self.change]


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> MannWhitney:
    """Two-sided Mann-Whitney U test of ``x`` vs ``y`` (see module doc for the method rule)."""
    from scipy.stats import mannwhitneyu  # scipy's import costs ~0.2 s: only commands that test pay it

    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("Mann-Whitney U needs at least one value per sample")
    both = np.asarray([*x, *y], dtype=float)
    ties = bool(np.unique(both).size < both.size)
    if not ties and n1 * n2 <= EXACT_MAX_PAIRS:
        res = mannwhitneyu(x, y, alternative="two-sided", method="exact")
        return MannWhitney(float(res.statistic), min(1.0, float(res.pvalue)), "exact", n1, n2, ties)
    if bool(np.all(both == both[0])):  # every value identical: no evidence of any difference (scipy: NaN)
        return MannWhitney(n1 * n2 / 2, 1.0, "normal", n1, n2, ties)
    res = mannwhitneyu(x, y, alternative="two-sided", use_continuity=True, method="asymptotic")
    return MannWhitney(float(res.statistic), min(1.0, max(float(res.pvalue), 0.0)), "normal", n1, n2, ties)


def min_attainable_p(n1: int, n2: int) -> float:
    """The smallest two-sided p any arrangement of n1 + n2 distinct values gives."""
    return min(1.0, 2 / math.comb(n1 + n2, n1))


def compare_results(
    old: ConfigResult, new: ConfigResult, policy: RegressionPolicy = DEFAULT_POLICY
) -> ChangeFlag:
    """Decide ``old`` → ``new`` for one config (see module doc)."""
    ratio = new.median_ms / old.median_ms
    notes = _notes(old, new)
    so, sn = old.samples_ms, new.samples_ms
    if not so or not sn:
        which = " and ".join(w for w, s in (("older", so), ("newer", sn)) if not s)
        return ChangeFlag(
            "inconclusive",
            ratio,
            f"no raw samples in the {which} run (median only): ratio {ratio:.3f} is not tested",
            notes=notes,
        )
    if len(so) < 2 or len(sn) < 2 or min_attainable_p(len(so), len(sn)) >= policy.alpha:
        return ChangeFlag(
            "inconclusive",
            ratio,
            f"n={len(so)} vs {len(sn)} samples cannot reach "
            f"p < {policy.alpha:g} (smallest attainable p {min_attainable_p(len(so), len(sn)):.2g})",
            notes=notes,
        )
    test = mann_whitney_u(sn, so)
    ci = median_ratio_ci(sn, so, n_boot=policy.n_boot, seed=policy.seed, level=policy.ci_level)
    hi_band, lo_band = 1 + policy.min_effect, 1 / (1 + policy.min_effect)
    ci_text = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "[n/a]"
    numbers = (
        f"median ratio {ratio:.3f}, {policy.ci_level:.0%} CI {ci_text}; {test.method_text} "
        f"p={test.p_value:.2g} (n={len(so)}→{len(sn)}); {policy.describe()}"
    )
    significant = test.p_value < policy.alpha
    if ci is not None and significant and ratio >= hi_band and ci[0] > 1:
        return ChangeFlag("regression", ratio, f"slower: {numbers}", ci, test, notes)
    if ci is not None and significant and ratio <= lo_band and ci[1] < 1:
        return ChangeFlag("improvement", ratio, f"faster: {numbers}", ci, test, notes)
    if ci is not None and lo_band <= ci[0] and ci[1] <= hi_band:
        what = "a significant change below the effect threshold" if significant else "no significant change"
        return ChangeFlag("same", ratio, f"{what}: {numbers}", ci, test, notes)
    return ChangeFlag(
        "inconclusive",
        ratio,
        f"cannot tell a ≥{policy.min_effect:.0%} change from none: {numbers}",
        ci,
        test,
        notes,
    )


def _notes(old: ConfigResult, new: ConfigResult) -> tuple[str, ...]:
    notes = []
    if (
        old.launches_per_call is not None
        and new.launches_per_call is not None
        and old.launches_per_call != new.launches_per_call
    ):
        notes.append(f"launches/call {old.launches_per_call} → {new.launches_per_call}")
    if old.kernel_name and new.kernel_name and old.kernel_name != new.kernel_name:
        notes.append(f"top kernel changed: {old.kernel_name} → {new.kernel_name}")
    if old.capture_source != new.capture_source:
        notes.append(
            f"capture source {old.capture_source or 'TileGym harness'} → "
            f"{new.capture_source or 'TileGym harness'}"
        )
    return tuple(notes)


# --------------------------------------------------------------------------- computed once

_CODE: list[str] = []


def _code_fingerprint() -> str:
    """Hash of the code that decides a comparison: an edited rule makes every cached one a miss."""
    if not _CODE:  # this module, the entries and all they import (the bootstrap among them)
        _CODE.append(code_key_cached((__name__, "cutile_workbench.history.entries")))
    return _CODE[0]


def result_digest(result: ConfigResult) -> bytes:
    """SHA-256 of one result's every field (the raw samples hashed as float64 bytes, not as text)."""
    h = hashlib.sha256()
    for f in fields(result):
        value = getattr(result, f.name)
        if f.name == "samples_ms" and value is not None:
            h.update(b"samples\0" + np.asarray(value, dtype=np.float64).tobytes())
        else:
            h.update(f"{f.name}={value!r}\0".encode())
    return h.digest()


def comparison_key(
    old: ConfigResult,
    new: ConfigResult,
    policy: RegressionPolicy = DEFAULT_POLICY,
    *,
    digests: dict[int, bytes] | None = None,
) -> str:
    """SHA-256 of everything :func:`compare_results` reads (both results, the policy, the code).
    ``digests`` memoizes :func:`result_digest` by object id (a run's result is in two pairs)."""

    def digest(r: ConfigResult) -> bytes:
        if digests is None:
            return result_digest(r)
        d = digests.get(id(r))
        if d is None:
            d = digests[id(r)] = result_digest(r)
        return d

    h = hashlib.sha256(f"{_code_fingerprint()}\0{policy!r}\0".encode())
    h.update(digest(old))
    h.update(digest(new))
    return h.hexdigest()


def flag_to_json(flag: ChangeFlag) -> str:
    return json.dumps(
        {
            "change": flag.change,
            "ratio": flag.ratio,
            "reason": flag.reason,
            "ci": list(flag.ci) if flag.ci is not None else None,
            "test": asdict(flag.test) if flag.test is not None else None,
            "notes": list(flag.notes),
        }
    )


def flag_from_json(text: str) -> ChangeFlag | None:
    """The flag stored by :func:`flag_to_json`; None for anything else (the pair is then recomputed)."""
    try:
        d = json.loads(text)
        test = d["test"]
        return ChangeFlag(
            d["change"],
            float(d["ratio"]),
            str(d["reason"]),
            (float(d["ci"][0]), float(d["ci"][1])) if d["ci"] is not None else None,
            MannWhitney(
                float(test["statistic"]),
                float(test["p_value"]),
                test["method"],
                int(test["n1"]),
                int(test["n2"]),
                bool(test["ties"]),
            )
            if test
            else None,
            tuple(str(n) for n in d["notes"]),
        )
    except (ValueError, KeyError, TypeError, IndexError):
        return None
