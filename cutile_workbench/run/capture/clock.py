"""Check that CUPTI's clock runs at wall-clock speed, and undo a replaced one.

Contract:
- :func:`clock_rate` measures ``Δ cupti.get_timestamp() / Δ time.perf_counter_ns()`` over
  ``span_ns`` (busy-wait; ~2 ms). CUPTI's default clock runs at 1.000; a process in which Kineto
  (torch.profiler) registered its TSC timestamp callback runs at the TSC frequency in GHz
  (2.1x seen on the H200 host), and every record duration is scaled by the same factor.
- :func:`restore_default_clock` re-registers CUPTI's own clock by calling
  ``cuptiActivityRegisterTimestampCallback(NULL)`` on the libcupti this process already loaded
  (found through ``/proc/self/maps``; cupti-python's wrapper does not accept ``None``). It returns
  the CUPTI result code, or None when no loaded libcupti or symbol is found.
- :func:`ensure_clock` runs the check, restores once when the rate is off by more than
  :data:`RATE_TOLERANCE`, checks again and returns a :class:`ClockCheck`; ``ok`` False means the
  capture must be refused (a measurement is right or refused).
Pure helpers (:func:`rate_ok`, :func:`loaded_libcupti`) are unit-tested without a GPU.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: |rate - 1| above this means another clock is registered (TSC ticks are 2x+ off, NTP slew ~1e-5)
RATE_TOLERANCE = 0.02
#: busy-wait span of one rate measurement: long enough that two timer reads (~1 µs) are < 0.1 %
SPAN_NS = 2_000_000


@dataclass(frozen=True)
class ClockCheck:
    """Result of :func:`ensure_clock` (rates are CUPTI ns per wall ns)."""

    rate: float
    restored: bool = False
    rate_before_restore: float | None = None
    restore_result: int | None = None
    ok: bool = True
    reason: str = ""

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"rate": round(self.rate, 5), "ok": self.ok}
        if self.restored or self.rate_before_restore is not None:
            out.update(
                restored=self.restored,
                rate_before_restore=self.rate_before_restore,
                restore_result=self.restore_result,
            )
        if self.reason:
            out["reason"] = self.reason
        return out


def rate_ok(rate: float, tolerance: float = RATE_TOLERANCE) -> bool:
    return abs(rate - 1.0) <= tolerance


def _paired_read(get_timestamp: Callable[[], int], tries: int = 5) -> tuple[int, float]:
    """(CUPTI ts, wall ns) read close together: bracketed by two wall reads, retried when preempted."""
    best: tuple[int, float, int] | None = None
    for _ in range(tries):
        a = time.perf_counter_ns()
        c = get_timestamp()
        b = time.perf_counter_ns()
        if best is None or b - a < best[2]:
            best = (c, (a + b) / 2, b - a)
        if b - a < 20_000:
            break
    assert best is not None
    return best[0], best[1]


def clock_rate(get_timestamp: Callable[[], int], span_ns: int = SPAN_NS) -> float:
    """CUPTI clock ns per ``perf_counter_ns`` ns over a busy-wait of ``span_ns``."""
    c0, p0 = _paired_read(get_timestamp)
    until = p0 + span_ns
    while time.perf_counter_ns() < until:
        pass
    c1, p1 = _paired_read(get_timestamp)
    return (c1 - c0) / max(1.0, p1 - p0)


def loaded_libcupti(maps: str | None = None) -> str | None:
    """Path of the libcupti mapped into this process (``/proc/self/maps`` text), else None."""
    if maps is None:
        try:
            maps = Path("/proc/self/maps").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    for line in maps.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and "/libcupti.so" in parts[5]:
            return parts[5].strip()
    return None


def restore_default_clock() -> int | None:
    """``cuptiActivityRegisterTimestampCallback(NULL)`` on the loaded libcupti; its result code."""
    path = loaded_libcupti()
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path)  # already mapped: dlopen returns the same handle
        fn = lib.cuptiActivityRegisterTimestampCallback
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return int(fn(None))


def ensure_clock(
    get_timestamp: Callable[[], int], *, restore: Callable[[], int | None] = restore_default_clock
) -> ClockCheck:
    """Measure the clock; on a replaced clock restore CUPTI's own once and measure again."""
    rate = clock_rate(get_timestamp)
    if rate_ok(rate):
        return ClockCheck(rate=rate)
    result = restore()
    after = clock_rate(get_timestamp)
    if rate_ok(after):
        return ClockCheck(
            rate=after, restored=True, rate_before_restore=round(rate, 5), restore_result=result
        )
    return ClockCheck(
        rate=after,
        restored=False,
        rate_before_restore=round(rate, 5),
        restore_result=result,
        ok=False,
        reason=(
            f"CUPTI's clock runs at {rate:.3f}x wall-clock speed (another timestamp callback, e.g. "
            f"Kineto's TSC clock, is registered) and could not be restored (result {result}, "
            f"rate now {after:.3f}x): every duration would be scaled; measure in a fresh process"
        ),
    )
