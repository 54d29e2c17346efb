"""GPU facts from NVML (``pynvml``, package ``nvidia-ml-py``): identity, clocks, clock-event reasons.

Contract:
- ``pynvml`` is imported lazily, inside :func:`read_gpu`; this module imports without it. Nothing
  is ever invented: without pynvml, without the NVML library or without a visible GPU,
  :func:`read_gpu` returns ``GpuReading(identity=None, snapshot=None, unavailable="<reason>")``;
  a single query the device does not support leaves that field ``None`` and names the NVML error
  in ``errors[field]``.
- Which GPU: the first entry of ``CUDA_VISIBLE_DEVICES`` (a ``GPU-``/``MIG-`` UUID, or an index),
  else NVML index 0; or an exact UUID (``uuid=``, e.g. from torch's device properties).
  ``selected_by`` says which rule chose it, including the index caveat (CUDA enumerates
  fastest-first unless ``CUDA_DEVICE_ORDER=PCI_BUS_ID``; NVML enumerates by PCI bus).
- Clock-event ("throttle") reasons are decoded from NVML's bit mask to stable snake-case names
  (:data:`CLOCK_EVENT_REASONS`, the same set ``nvidia-smi -q -d PERFORMANCE`` prints);
  :data:`THROTTLE_REASONS` are the ones that lower clocks below what the workload asks for (power
  cap, thermal, hardware slowdown, power brake). Idle, application-clock settings, sync boost and
  display clocks are states, not throttling.
- The cumulative NVML violation counters (power and thermal, ns) are read with every snapshot, so
  a throttle episode *between* two snapshots is still seen (the instantaneous reasons miss it).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: NVML clock-event reason bits → names (nvml.h ``nvmlClocksEventReason*``; nvidia-smi's labels)
CLOCK_EVENT_REASONS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
#: reasons that mean the GPU ran slower than the work asked for (a measurement taken then is suspect)
THROTTLE_REASONS: frozenset[str] = frozenset(
    {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
)

# NVML enum values (nvml.h); pynvml exposes the same numbers, kept here so decoding needs no pynvml
_CLOCK_GRAPHICS, _CLOCK_SM, _CLOCK_MEM = 0, 1, 2
_TEMPERATURE_GPU = 0
_PERF_POLICY_POWER, _PERF_POLICY_THERMAL = 0, 1


def decode_clock_event_reasons(mask: int) -> tuple[str, ...]:
    """Names of the bits set in ``mask``, in bit order; an unknown bit becomes ``unknown_0x…``."""
    names = [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]
    rest = mask & ~sum(CLOCK_EVENT_REASONS)
    bit = 1
    while rest:
        if rest & bit:
            names.append(f"unknown_{bit:#x}")
            rest &= ~bit
        bit <<= 1
    return tuple(names)


@dataclass(frozen=True)
class GpuIdentity:
    """Which GPU, with driver/CUDA versions and MIG state. ``None`` = NVML could not say (see errors)."""

    name: str | None
    uuid: str | None
    pci_bus_id: str | None
    driver_version: str | None
    cuda_driver_version: str | None  # the CUDA version the driver supports, e.g. "13.0"
    mig_mode: str | None  # "enabled" | "disabled" | None (unsupported / unknown)
    mig_pending: str | None
    selected_by: str
    errors: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ClockSnapshot:
    """One instant of the GPU's clocks and limits (MHz, °C, W, ns)."""

    taken_at: float  # Unix seconds
    sm_clock_mhz: int | None
    mem_clock_mhz: int | None
    graphics_clock_mhz: int | None
    max_sm_clock_mhz: int | None
    clock_event_reasons: tuple[str, ...] | None  # decoded; None when NVML could not read them
    temperature_c: int | None
    power_w: float | None
    power_limit_w: float | None
    pstate: int | None
    power_violation_ns: int | None  # cumulative NVML counters (NVML_PERF_POLICY_POWER / _THERMAL)
    thermal_violation_ns: int | None
    errors: Mapping[str, str] = field(default_factory=dict)

    @property
    def throttle_reasons(self) -> tuple[str, ...]:
        return tuple(r for r in self.clock_event_reasons or () if r in THROTTLE_REASONS)

    @property
    def idle(self) -> bool:
        return "gpu_idle" in (self.clock_event_reasons or ())


@dataclass(frozen=True)
class GpuReading:
    """What :func:`read_gpu` found: identity + snapshot, or the reason there is none."""

    identity: GpuIdentity | None
    snapshot: ClockSnapshot | None
    unavailable: str | None = None


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _nvml_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _select(nvml: Any, env: Mapping[str, str], uuid: str | None) -> tuple[Any, Any, str]:
    """(handle for queries, MIG handle or None, how it was selected); raises on failure."""
    visible = env.get("CUDA_VISIBLE_DEVICES")
    first = uuid or (visible.split(",")[0].strip() if visible is not None else "")
    how = f"UUID {uuid} (the CUDA device in use)" if uuid else f"CUDA_VISIBLE_DEVICES={first}"
    if not uuid and visible is not None and first in ("", "-1", "none", "NoDevFiles"):
        raise LookupError(f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU")
    if first.startswith("MIG-"):
        mig = nvml.nvmlDeviceGetHandleByUUID(first)
        parent = nvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig)
        return parent, mig, f"{how} (MIG instance; clocks are the parent GPU's)"
    if first.startswith("GPU-"):
        return nvml.nvmlDeviceGetHandleByUUID(first), None, how
    index = int(first) if first.isdigit() else 0
    how = f"CUDA_VISIBLE_DEVICES={visible}" if visible is not None else "CUDA_VISIBLE_DEVICES unset"
    count = int(nvml.nvmlDeviceGetCount())
    caveat = ""
    if count > 1 and env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
        caveat = (
            f"; {count} GPUs and CUDA_DEVICE_ORDER is not PCI_BUS_ID, so CUDA's device {index} may differ"
        )
    return nvml.nvmlDeviceGetHandleByIndex(index), None, f"NVML index {index} ({how}{caveat})"


def _query(errors: dict[str, str], key: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:  # NVMLError_NotSupported & co.: that one field is unknown, the rest stands
        errors[key] = _nvml_error(exc)
        return None


def _text_query(errors: dict[str, str], key: str, fn: Callable[[], Any]) -> str | None:
    value = _query(errors, key, fn)
    return _text(value) if value is not None else None


def _identity(nvml: Any, handle: Any, mig: Any, selected_by: str) -> GpuIdentity:
    errors: dict[str, str] = {}
    cuda = _query(errors, "cuda_driver_version", nvml.nvmlSystemGetCudaDriverVersion)
    modes = _query(errors, "mig_mode", lambda: nvml.nvmlDeviceGetMigMode(handle))
    state = {0: "disabled", 1: "enabled"}
    named = mig if mig is not None else handle  # a MIG instance has its own name and UUID
    return GpuIdentity(
        name=_text_query(errors, "name", lambda: nvml.nvmlDeviceGetName(named)),
        uuid=_text_query(errors, "uuid", lambda: nvml.nvmlDeviceGetUUID(named)),
        pci_bus_id=_text_query(errors, "pci_bus_id", lambda: nvml.nvmlDeviceGetPciInfo(handle).busId),
        driver_version=_text_query(errors, "driver_version", nvml.nvmlSystemGetDriverVersion),
        cuda_driver_version=f"{int(cuda) // 1000}.{int(cuda) % 1000 // 10}" if cuda else None,
        mig_mode=state.get(int(modes[0]), str(modes[0])) if modes else None,
        mig_pending=state.get(int(modes[1]), str(modes[1])) if modes else None,
        selected_by=selected_by,
        errors=errors,
    )


def _snapshot(nvml: Any, handle: Any) -> ClockSnapshot:
    errors: dict[str, str] = {}
    taken_at = time.time()
    mask = _query(errors, "clock_event_reasons", lambda: _reasons_mask(nvml, handle))
    power_mw = _query(errors, "power_w", lambda: nvml.nvmlDeviceGetPowerUsage(handle))
    limit_mw = _query(errors, "power_limit_w", lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle))
    power_v = _query(
        errors,
        "power_violation_ns",
        lambda: nvml.nvmlDeviceGetViolationStatus(handle, _PERF_POLICY_POWER).violationTime,
    )
    thermal_v = _query(
        errors,
        "thermal_violation_ns",
        lambda: nvml.nvmlDeviceGetViolationStatus(handle, _PERF_POLICY_THERMAL).violationTime,
    )
    return ClockSnapshot(
        taken_at=taken_at,
        sm_clock_mhz=_query(
            errors, "sm_clock_mhz", lambda: int(nvml.nvmlDeviceGetClockInfo(handle, _CLOCK_SM))
        ),
        mem_clock_mhz=_query(
            errors, "mem_clock_mhz", lambda: int(nvml.nvmlDeviceGetClockInfo(handle, _CLOCK_MEM))
        ),
        graphics_clock_mhz=_query(
            errors, "graphics_clock_mhz", lambda: int(nvml.nvmlDeviceGetClockInfo(handle, _CLOCK_GRAPHICS))
        ),
        max_sm_clock_mhz=_query(
            errors, "max_sm_clock_mhz", lambda: int(nvml.nvmlDeviceGetMaxClockInfo(handle, _CLOCK_SM))
        ),
        clock_event_reasons=decode_clock_event_reasons(int(mask)) if mask is not None else None,
        temperature_c=_query(
            errors, "temperature_c", lambda: int(nvml.nvmlDeviceGetTemperature(handle, _TEMPERATURE_GPU))
        ),
        power_w=power_mw / 1000.0 if power_mw is not None else None,
        power_limit_w=limit_mw / 1000.0 if limit_mw is not None else None,
        pstate=_query(errors, "pstate", lambda: int(nvml.nvmlDeviceGetPerformanceState(handle))),
        power_violation_ns=int(power_v) if power_v is not None else None,
        thermal_violation_ns=int(thermal_v) if thermal_v is not None else None,
        errors=errors,
    )


def _reasons_mask(nvml: Any, handle: Any) -> int:
    # The "event" name is current; the "throttle" name is what drivers before r535 export.
    fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
    try:
        if fn is not None:
            return int(fn(handle))
    except Exception as exc:
        if "FunctionNotFound" not in type(exc).__name__:
            raise
    return int(nvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle))


def read_gpu(
    *, env: Mapping[str, str] | None = None, uuid: str | None = None, nvml: Any = None
) -> GpuReading:
    """Identity + one clock snapshot of the GPU this process uses (see module doc). Never raises."""
    environ = os.environ if env is None else env
    if nvml is None:
        try:
            import pynvml  # nvidia-ml-py; on the GPU image, not a dependency of ours
        except ImportError as exc:
            return GpuReading(None, None, f"unavailable: pynvml not importable ({exc}); install nvidia-ml-py")
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return GpuReading(None, None, f"unavailable: NVML init failed ({_nvml_error(exc)})")
    try:
        try:
            handle, mig, how = _select(nvml, environ, uuid)
        except Exception as exc:
            return GpuReading(None, None, f"unavailable: no GPU selected ({_nvml_error(exc)})")
        return GpuReading(_identity(nvml, handle, mig, how), _snapshot(nvml, handle))
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # shutting down a library that answered is best-effort
            pass
