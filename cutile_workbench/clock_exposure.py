"""Throttling as a measured exposure: the SM clock and clock-event reasons around each measured call.

Contract:
- The workbench harness adds a ``clocks`` dict to every benchmark result (so it lands in the perf
  log record, the raw ``perf_cutile_rs.full.txt``/baseline logs and ``workbench/events.jsonl``):
  ``{"source": "nvml", "samples": n, "sm_mhz": [min, median, max], "throttled": k,
  "reasons": {"sw_power_cap": k1, ...}, "discarded": m}`` -- one NVML reading after each kept
  measured call (``throttled``: calls during which a throttle reason was set or NVML's power /
  thermal violation counters grew, see :mod:`cutile_workbench.run.capture.clocks`; ``discarded``: calls
  dropped by ``WORKBENCH_DISCARD_THROTTLED=1``, NVBench's discard-on-throttle) -- or
  ``{"source": "nvml", "unavailable": "<why>"}`` when NVML could not be read.
  :func:`exposure_from_dict` reads it back; a malformed dict raises ``ValueError`` naming the key.
- :func:`compare_exposures` judges one row: its two sides are ``comparable`` when the median SM
  clocks are within :data:`CLOCK_BOUND` of the larger one **and** the throttled shares within
  :data:`EXPOSURE_BOUND` (a power cap that fired on both sides alike, or that did not move the
  clocks, does not disqualify a row); ``not_comparable`` names which differs and by how much;
  ``unknown`` says which side has no sample and why. Nothing is guessed from a missing side.
Pure: no I/O, no NVML.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

#: SM clock medians within this fraction of the larger are "the same clock": a compute-bound kernel's time
#: scales at most ~1/clock, so a 2 % clock difference moves a ratio by at most ~2 %, inside the 1.05 band
CLOCK_BOUND = 0.02
#: throttled shares (fraction of a side's calls) within this many points of each other are the same exposure
EXPOSURE_BOUND = 0.10

ClockState = Literal["comparable", "not_comparable", "unknown"]


@dataclass(frozen=True)
class ClockExposure:
    """One side's clock readings over its measured calls (``unavailable``: why there are none)."""

    samples: int = 0
    sm_min_mhz: float | None = None
    sm_median_mhz: float | None = None
    sm_max_mhz: float | None = None
    throttled: int = 0
    reasons: Mapping[str, int] = field(default_factory=dict)
    discarded: int = 0
    unavailable: str | None = None

    @property
    def measured(self) -> bool:
        return self.unavailable is None and self.samples > 0 and self.sm_median_mhz is not None

    @property
    def throttled_share(self) -> float | None:
        return self.throttled / self.samples if self.samples else None

    def describe(self) -> str:
        """``1980 MHz (1965-1980), throttled 12 % (sw_power_cap 6/50)``; the reason when unmeasured."""
        if not self.measured:
            return f"clocks unknown: {self.unavailable or 'no NVML reading during the measured calls'}"
        assert self.sm_median_mhz is not None and self.sm_min_mhz is not None and self.sm_max_mhz is not None
        text = f"{self.sm_median_mhz:.0f} MHz ({self.sm_min_mhz:.0f}-{self.sm_max_mhz:.0f})"
        share = self.throttled_share or 0.0
        reasons = ", ".join(f"{r} {n}/{self.samples}" for r, n in sorted(self.reasons.items()))
        text += f", throttled {share:.0%}" + (f" ({reasons})" if reasons else "")
        if self.discarded:
            text += f", {self.discarded} throttled call(s) discarded"
        return text


def _int(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"clocks.{key} must be a non-negative integer, got {value!r:.40}")
    return value


def exposure_from_dict(data: Any) -> ClockExposure:
    """The ``clocks`` dict of a record (module contract); ``ValueError`` names the bad key."""
    if not isinstance(data, Mapping):
        raise ValueError(f"clocks must be a dict, got {type(data).__name__}")
    if data.get("unavailable") is not None:
        why = data["unavailable"]
        if not isinstance(why, str) or not why:
            raise ValueError("clocks.unavailable must be a non-empty string")
        return ClockExposure(unavailable=why)
    samples, throttled, discarded = _int(data, "samples"), _int(data, "throttled"), _int(data, "discarded")
    if throttled > samples:
        raise ValueError(f"clocks.throttled ({throttled}) exceeds clocks.samples ({samples})")
    sm = data.get("sm_mhz")
    if samples == 0:
        return ClockExposure(
            unavailable="no NVML reading was taken during the measured calls", discarded=discarded
        )
    if (
        not isinstance(sm, (list, tuple))
        or len(sm) != 3
        or any(
            isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0
            for v in sm
        )
    ):
        raise ValueError(f"clocks.sm_mhz must be [min, median, max] in MHz, got {sm!r:.60}")
    lo, mid, hi = (float(v) for v in sm)
    if not lo <= mid <= hi:
        raise ValueError(f"clocks.sm_mhz must be ordered [min, median, max], got {list(sm)!r}")
    reasons = data.get("reasons", {})
    if not isinstance(reasons, Mapping) or any(
        not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= samples
        for k, v in reasons.items()
    ):
        raise ValueError("clocks.reasons must map reason names to counts between 0 and clocks.samples")
    return ClockExposure(samples, lo, mid, hi, throttled, dict(reasons), discarded)


@dataclass(frozen=True)
class RowClocks:
    """The clock verdict of one row's two sides (``text`` says by how much, or what is unknown)."""

    state: ClockState
    text: str


def compare_exposures(
    candidate: ClockExposure | None,
    baseline: ClockExposure | None,
    *,
    clock_bound: float = CLOCK_BOUND,
    exposure_bound: float = EXPOSURE_BOUND,
) -> RowClocks:
    """Were the row's two sides measured at the same clocks and the same throttle exposure? (contract)"""
    missing = []
    for label, side in (("candidate", candidate), ("baseline", baseline)):
        if side is None:
            missing.append(
                f"{label}: not sampled (the record carries no clock readings: recorded before "
                "clock sampling, or by another harness)"
            )
        elif not side.measured:
            missing.append(f"{label}: {side.unavailable or 'no NVML reading during the measured calls'}")
    if missing:
        if len(missing) == 2 and missing[0].split(": ", 1)[1] == missing[1].split(": ", 1)[1]:
            missing = [f"both sides: {missing[0].split(': ', 1)[1]}"]
        return RowClocks("unknown", "clocks unknown: " + "; ".join(missing))
    assert candidate is not None and baseline is not None
    assert candidate.sm_median_mhz is not None and baseline.sm_median_mhz is not None
    ca, cb = candidate.sm_median_mhz, baseline.sm_median_mhz
    apart = abs(ca - cb) / max(ca, cb)
    sa, sb = candidate.throttled_share or 0.0, baseline.throttled_share or 0.0
    points = abs(sa - sb)
    problems = []
    if apart > clock_bound:
        problems.append(
            f"SM clock median candidate {ca:.0f} MHz vs baseline {cb:.0f} MHz: {apart:.1%} apart "
            f"(bound {clock_bound:.0%})"
        )
    if points > exposure_bound:
        problems.append(
            f"throttled share candidate {sa:.0%} vs baseline {sb:.0%} of the measured calls: "
            f"{points * 100:.0f} points apart (bound {exposure_bound * 100:.0f})"
        )
    if problems:
        return RowClocks("not_comparable", "; ".join(problems))
    fired = [
        f"{who} {e.describe().split(', throttled ', 1)[1]}"
        for who, e in (("candidate", candidate), ("baseline", baseline))
        if e.throttled
    ]
    tail = f"; throttled calls: {'; '.join(fired)}, within the bound" if fired else "; no throttled call"
    return RowClocks(
        "comparable", f"SM clock {ca:.0f}/{cb:.0f} MHz ({apart:.1%} apart, bound {clock_bound:.0%})" + tail
    )


def clock_lines(rows: Sequence[tuple[str, RowClocks]]) -> list[str]:
    """What a face prints under a ratio table about the rows' clocks (``rows``: (config, verdict) pairs).

    One line of counts with the bounds, then one line per row that is not comparable (by how much);
    rows that are all unknown for the same reason collapse into one line naming it."""
    if not rows:
        return []
    by_state: dict[str, list[tuple[str, RowClocks]]] = {"comparable": [], "not_comparable": [], "unknown": []}
    for params, verdict in rows:
        by_state[verdict.state].append((params, verdict))
    unknown = by_state["unknown"]
    if len(unknown) == len(rows) and len({v.text for _p, v in unknown}) == 1:
        return [
            f"clocks: not known for any of the {len(rows)} row(s): {unknown[0][1].text.removeprefix('clocks unknown: ')}"
        ]
    head = (
        f"clocks: {len(by_state['comparable'])} row(s) at the same clocks (SM clock medians within "
        f"{CLOCK_BOUND:.0%}, throttled shares within {EXPOSURE_BOUND * 100:.0f} points), "
        f"{len(by_state['not_comparable'])} not comparable, {len(unknown)} unknown"
    )
    out = [head]
    out += [f"  not comparable {params}: {v.text}" for params, v in by_state["not_comparable"]]
    reasons: dict[str, list[str]] = {}
    for params, v in unknown:  # one line per reason, not per row: a long table stays readable
        reasons.setdefault(v.text.removeprefix("clocks unknown: "), []).append(params)
    out += [f"  unknown ({len(ps)} row(s), first {ps[0]}): {why}" for why, ps in reasons.items()]
    return out


def row_mark(verdict: RowClocks) -> str:
    """The per-row clock mark of a table: ``=`` same clocks, ``≠`` not comparable, ``?`` unknown."""
    return {"comparable": "=", "not_comparable": "≠", "unknown": "?"}[verdict.state]


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_clock_section(rows: Sequence[tuple[str, ClockExposure | None, ClockExposure | None]]) -> str:
    """performance.md's per-row clock section (``rows``: config, candidate and baseline exposure).

    Holds no validated line (no ``geomean_ratio=``, ``VERDICT:``, ``PASSED``/``FAILED``)."""
    if not rows:
        return ""
    verdicts = [(params, compare_exposures(c, b)) for params, c, b in rows]
    head = [
        "### Clocks and throttling per row\n",
        "\n",
        "NVML's SM clock and clock-event reasons, read after each measured call (outside its window). "
        f"A row's two sides are comparable when their SM clock medians are within {CLOCK_BOUND:.0%} and their "
        f"throttled shares within {EXPOSURE_BOUND * 100:.0f} points, even if a power cap fired.\n",
        "\n",
    ]
    lines = clock_lines(verdicts)
    if len(lines) == 1 and verdicts[0][1].state == "unknown":
        return "".join(head) + _md(lines[0]) + ".\n"

    def side(e: ClockExposure | None) -> str:
        return "not sampled" if e is None else e.describe()

    out = [*head, "| Config | candidate | baseline | clocks |\n", "|---|---|---|---|\n"]
    words = {"comparable": "same", "not_comparable": "**not comparable**", "unknown": "unknown"}
    for (params, c, b), (_p, v) in zip(rows, verdicts, strict=True):
        detail = v.text.removeprefix("clocks unknown: ") if v.state != "comparable" else ""
        out.append(
            f"| {_md(params)} | {_md(side(c))} | {_md(side(b))} | {words[v.state]}"
            f"{': ' + _md(detail) if detail else ''} |\n"
        )
    return "".join(out)
