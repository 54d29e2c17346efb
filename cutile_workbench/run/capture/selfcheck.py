"""Capture self-check: CUPTI's per-call device time against an independent CUDA-event measure.

Contract: :func:`event_samples_ms` times ``n`` extra calls of ``fn`` with CUDA events, each call
prepared like a CUPTI sample (L2 flush + sync) and then queued **behind a GPU sleep**
(``torch.cuda._sleep``) long enough to cover the host's enqueue time, so the events bracket GPU
time only (without the sleep, events read host launch latency: 36-70 µs for a 6 µs kernel on the
H200). :func:`judge` compares the CUPTI median with the event median and returns a
:class:`CaptureCheck`.

Bound (stated, and measured on the H200 in BENCHMARKS.md §1): the events span every launch of the
call plus the gaps between them, so a right CUPTI sum is never above it. The capture is
**suspect** when ``cupti > events × (1 + REL_BOUND) + ABS_BOUND_MS`` (10 % + 2 µs): a CUPTI clock
running fast (Kineto's TSC callback made it 2.1x), records of other work attributed to the call,
or duplicated records. A CUPTI sum far *below* the events (< half, beyond 10 µs) is reported as a
note, not a suspicion: host gaps inside the call (a sync, a Python-side wait) legitimately widen
the event span. A suspect row's median is not a valid median: E shows it as NA
("capture suspect"), F does not use it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

REL_BOUND = 0.10
ABS_BOUND_MS = 0.002
#: GPU sleep cycles per microsecond (H200 SM clock ~1.98 GHz; a slower clock only sleeps longer)
_CYCLES_PER_US = 2000
_MAX_SLEEP_US = 20_000.0


@dataclass(frozen=True)
class CaptureCheck:
    """CUPTI median vs CUDA events behind a GPU sleep, for one measured config."""

    cupti_median_ms: float
    events_median_ms: float
    n: int
    verdict: str  # "ok" | "suspect"
    reason: str = ""
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.cupti_median_ms / self.events_median_ms if self.events_median_ms > 0 else float("inf")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "method": "cuda_events_behind_gpu_sleep",
            "cupti_median_ms": self.cupti_median_ms,
            "events_median_ms": self.events_median_ms,
            "ratio": round(self.ratio, 4),
            "n": self.n,
            "bound": f"cupti <= events x {1 + REL_BOUND:.2f} + {ABS_BOUND_MS * 1000:.0f} us",
            "verdict": self.verdict,
        }
        if self.reason:
            out["reason"] = self.reason
        if self.note:
            out["note"] = self.note
        return out


def judge(cupti_median_ms: float, events_ms: Sequence[float]) -> CaptureCheck:
    """The verdict for one config (pure; see the module docstring for the bound)."""
    ev = statistics.median(events_ms)
    n = len(events_ms)
    limit = ev * (1 + REL_BOUND) + ABS_BOUND_MS
    if cupti_median_ms > limit:
        # an event span of 0 (below the events' resolution) makes no ratio; say "more than"
        times = f"{cupti_median_ms / ev:.2f}x" if ev > 0 else "more than"
        return CaptureCheck(
            cupti_median_ms,
            ev,
            n,
            "suspect",
            reason=(
                f"CUPTI median {cupti_median_ms * 1000:.2f} us is {times} the CUDA-event "
                f"span of the same call ({ev * 1000:.2f} us; bound {1 + REL_BOUND:.2f}x + "
                f"{ABS_BOUND_MS * 1000:.0f} us): the capture over-counts (clock or attribution)"
            ),
        )
    note = ""
    if cupti_median_ms * 2 + 0.010 < ev:
        note = (
            f"CUDA-event span {ev * 1000:.2f} us is over twice the CUPTI sum "
            f"{cupti_median_ms * 1000:.2f} us: host gaps inside the call (sync, Python waits)"
        )
    return CaptureCheck(cupti_median_ms, ev, n, "ok", note=note)


def host_enqueue_us(fn: Callable[[], Any], torch: Any) -> float:
    """Host time of one call without a sync (what the GPU sleep must cover)."""
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    fn()
    t1 = time.perf_counter_ns()
    torch.cuda.synchronize()
    return (t1 - t0) / 1000.0


def event_samples_ms(
    torch: Any, fn: Callable[[], Any], n: int, cache: Any, grad_to_none: Sequence[Any] | None = None
) -> list[float]:
    """``n`` CUDA-event timed calls, each after an L2 flush and behind a covering GPU sleep."""
    sleep_us = min(_MAX_SLEEP_US, 3 * host_enqueue_us(fn, torch) + 50)
    cycles = int(sleep_us * _CYCLES_PER_US)
    pairs = []
    for _ in range(n):
        if grad_to_none is not None:
            for t in grad_to_none:
                t.grad = None
        if cache is not None:
            cache.zero_()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(cycles)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        pairs.append((start, end))
    return [float(s.elapsed_time(e)) for s, e in pairs]


def check_count(nrep: int) -> int:
    """How many event-timed calls a config of ``nrep`` CUPTI samples gets (5..20)."""
    return max(5, min(20, nrep // 5))
