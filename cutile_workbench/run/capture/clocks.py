"""NVML clock readings taken by the harness around each measured call (the ``clocks`` record key).

Contract:
- :func:`open_sampler` returns a :class:`ClockSampler` for the CUDA device torch uses (by its
  UUID, else ``CUDA_VISIBLE_DEVICES`` as :mod:`cutile_workbench.history.provenance.gpu` selects). With
  ``WORKBENCH_CLOCKS=0``, without ``pynvml`` or when NVML cannot be initialised, the sampler is
  inert and its summary is ``{"source": "nvml", "unavailable": "<why>"}``: never a guess.
- :meth:`ClockSampler.read` is called once before the first window and once **after** each
  measured window, outside it (the window has already synchronised): SM clock, the clock-event
  reason mask and NVML's cumulative power/thermal violation counters -- four NVML queries, no
  thread, nothing inside a timed window. Reading ``k`` (k ≥ 1) describes window ``k - 1``: that
  call counts as *throttled* when the reading's reasons include a throttle reason
  (:data:`~cutile_workbench.history.provenance.gpu.THROTTLE_REASONS`) or a violation counter grew since the
  reading before (which also covers the L2 flush between the two: conservative).
- :meth:`ClockSampler.summary` summarises the kept windows (the ones whose samples the record
  reports) in the :mod:`cutile_workbench.clock_exposure` format; its cost is measured by
  ``bench/clock_sampler_cost.py`` (BENCHMARKS.md).
- ``WORKBENCH_DISCARD_THROTTLED=1`` (:func:`discard_throttled`) asks the harness to drop the
  throttled calls from the samples (NVBench's discard-on-throttle); the record says how many.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cutile_workbench.history.provenance.gpu import THROTTLE_REASONS, decode_clock_event_reasons

_CLOCK_SM = 0x1
_PERF_POLICY_POWER, _PERF_POLICY_THERMAL = 0, 1


def clocks_enabled(env: Mapping[str, str] | None = None) -> bool:
    return (os.environ if env is None else env).get("WORKBENCH_CLOCKS", "1") != "0"


def discard_throttled(env: Mapping[str, str] | None = None) -> bool:
    return (os.environ if env is None else env).get("WORKBENCH_DISCARD_THROTTLED", "0") == "1"


@dataclass(frozen=True)
class Reading:
    sm_mhz: int | None
    reasons: tuple[str, ...] | None
    violation_ns: int | None  # power + thermal violation counters (cumulative)


class ClockSampler:
    """Readings around measured windows (module contract). ``unavailable`` set = inert."""

    def __init__(self, nvml: Any = None, handle: Any = None, unavailable: str | None = None) -> None:
        self._nvml = nvml
        self._handle = handle
        self.unavailable = unavailable
        self.readings: list[Reading] = []
        self.errors: dict[str, str] = {}

    def _query(self, key: str, fn: Any) -> Any:
        try:
            return fn()
        except Exception as exc:  # one unsupported query leaves that field unknown, the rest stands
            self.errors.setdefault(key, f"{type(exc).__name__}: {exc}")
            return None

    def read(self) -> None:
        if self.unavailable is not None:
            return
        nvml, h = self._nvml, self._handle
        sm = self._query("sm_mhz", lambda: int(nvml.nvmlDeviceGetClockInfo(h, _CLOCK_SM)))
        mask = self._query("clock_event_reasons", lambda: _reasons_mask(nvml, h))
        power = self._query(
            "power_violation_ns",
            lambda: int(nvml.nvmlDeviceGetViolationStatus(h, _PERF_POLICY_POWER).violationTime),
        )
        thermal = self._query(
            "thermal_violation_ns",
            lambda: int(nvml.nvmlDeviceGetViolationStatus(h, _PERF_POLICY_THERMAL).violationTime),
        )
        violation = power + thermal if power is not None and thermal is not None else None
        self.readings.append(
            Reading(sm, decode_clock_event_reasons(mask) if mask is not None else None, violation)
        )

    def close(self) -> None:
        if self._nvml is not None and self.unavailable is None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:  # shutting down a library that answered is best-effort
                pass
        self._nvml = None

    def window_reasons(self, window: int) -> tuple[tuple[str, ...], bool] | None:
        """(throttle reasons seen, throttled?) for measured window ``window``; None when not read."""
        k = window + 1
        if self.unavailable is not None or k >= len(self.readings):
            return None
        now, before = self.readings[k], self.readings[k - 1]
        reasons = tuple(r for r in now.reasons or () if r in THROTTLE_REASONS)
        grew = (
            now.violation_ns is not None
            and before.violation_ns is not None
            and now.violation_ns > before.violation_ns
        )
        if grew and not reasons:
            reasons = ("violation_counter",)
        return reasons, bool(reasons)

    def throttled_windows(self, windows: Sequence[int]) -> list[int]:
        out = []
        for w in windows:
            seen = self.window_reasons(w)
            if seen is not None and seen[1]:
                out.append(w)
        return out

    def summary(self, kept: Sequence[int], *, discarded: int = 0) -> dict[str, Any]:
        """The record's ``clocks`` dict over the kept windows (see :mod:`cutile_workbench.clock_exposure`)."""
        if self.unavailable is not None:
            return {"source": "nvml", "unavailable": self.unavailable}
        clocks: list[int] = []
        throttled = 0
        reasons: dict[str, int] = {}
        for w in kept:
            seen = self.window_reasons(w)
            if seen is None:
                continue
            sm = self.readings[w + 1].sm_mhz
            if sm is not None:
                clocks.append(sm)
            if seen[1]:
                throttled += 1
                for r in seen[0]:
                    reasons[r] = reasons.get(r, 0) + 1
        if not clocks:
            why = self.errors.get("sm_mhz", "no reading after a kept window")
            return {"source": "nvml", "unavailable": f"SM clock not read: {why}"}
        ordered = sorted(clocks)
        out: dict[str, Any] = {
            "source": "nvml",
            "samples": len(clocks),
            "sm_mhz": [ordered[0], statistics.median_low(ordered), ordered[-1]],
            "throttled": throttled,
            "reasons": reasons,
        }
        if discarded:
            out["discarded"] = discarded
        if self.errors:
            out["errors"] = dict(self.errors)
        return out


def _reasons_mask(nvml: Any, handle: Any) -> int:
    fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
    if fn is not None:
        return int(fn(handle))
    return int(nvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle))


def _torch_uuid(torch: Any) -> str | None:
    try:
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        raw = str(getattr(props, "uuid", "") or "")
    except Exception:  # a broken CUDA context: select by CUDA_VISIBLE_DEVICES instead
        return None
    return raw if raw.startswith(("GPU-", "MIG-")) else (f"GPU-{raw}" if raw else None)


def open_sampler(
    torch: Any = None, *, env: Mapping[str, str] | None = None, nvml: Any = None
) -> ClockSampler:
    """A sampler for the device torch uses, or an inert one that says why (module contract). Never raises."""
    environ = os.environ if env is None else env
    if not clocks_enabled(environ):
        return ClockSampler(unavailable="clock sampling switched off (WORKBENCH_CLOCKS=0)")
    if nvml is None:
        try:
            import pynvml  # nvidia-ml-py; on the GPU image, not a dependency of ours
        except ImportError as exc:
            return ClockSampler(unavailable=f"pynvml not importable ({exc}); install nvidia-ml-py")
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return ClockSampler(unavailable=f"NVML init failed ({type(exc).__name__}: {exc})")
    from cutile_workbench.history.provenance.gpu import _select

    try:
        handle, _mig, _how = _select(nvml, environ, _torch_uuid(torch) if torch is not None else None)
    except Exception as exc:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass
        return ClockSampler(unavailable=f"no GPU selected ({type(exc).__name__}: {exc})")
    return ClockSampler(nvml, handle)
