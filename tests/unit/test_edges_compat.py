"""compat's edges: the throttle-exposure bound (at 10 points: not flagged; just above: flagged), a
throttled run whose exposure is unknown, the clock tolerance at exactly 5 %, and "same conditions"
never claimed with the driver unrecorded (issue 35, item 2). SYNTHETIC provenances built on the
H200 identity the recorded sessions carry (as tests/unit/test_history_compat.py does)."""

from __future__ import annotations

import dataclasses

import pytest

from cutile_workbench.clock_exposure import CLOCK_BOUND, ClockExposure, compare_exposures
from cutile_workbench.clock_exposure import EXPOSURE_BOUND as ROW_EXPOSURE_BOUND
from cutile_workbench.history.compat import EXPOSURE_BOUND, compare_provenance
from cutile_workbench.history.provenance import HarnessInfo, Provenance
from cutile_workbench.history.provenance.gpu import ClockSnapshot, GpuIdentity

GPU = GpuIdentity(
    name="NVIDIA H200",
    uuid="GPU-1",
    pci_bus_id=None,
    driver_version="580.159.04",
    cuda_driver_version="13.0",
    mig_mode="disabled",
    mig_pending="disabled",
    selected_by="test",
)


def snap(at: float, *, sm: int = 1980, power_ns: int = 0, reasons: tuple[str, ...] = ()) -> ClockSnapshot:
    return ClockSnapshot(at, sm, 3201, sm, 1980, reasons, 45, 300.0, 700.0, 0, power_ns, 0)


def prov(**kw: object) -> Provenance:
    base = Provenance(
        source="live",
        gpu=GPU,
        before=snap(0.0),
        after=snap(100.0),
        host="node1",
        harness=HarnessInfo("workbench", {"WORKBENCH_CUPTI_WINDOW": "per_call"}),
        started_at=1.0,
    )
    return dataclasses.replace(base, **kw)


def _exposure_flags(violation_s: float) -> list[str]:
    cand = prov()
    base = prov(after=snap(100.0, power_ns=int(violation_s * 1e9)))
    return [d.text for d in compare_provenance(cand, base).flags if d.kind == "throttling"]


def test_the_bound_is_ten_points() -> None:
    assert EXPOSURE_BOUND == 0.10


@pytest.mark.parametrize(("violation_s", "flagged"), [(9.99, False), (10.0, False), (10.01, True)])
def test_throttle_exposure_edge(violation_s: float, flagged: bool) -> None:
    assert bool(_exposure_flags(violation_s)) is flagged


def test_a_throttled_run_of_unknown_exposure_is_a_note_not_a_crash() -> None:
    """The candidate was throttled but has no start snapshot (exposure None); the baseline's is 35 %."""
    cand = prov(before=None, after=snap(100.0, reasons=("sw_thermal_slowdown",)))
    base = prov(after=snap(100.0, power_ns=35_000_000_000))
    comp = compare_provenance(cand, base)
    assert not [d for d in comp.flags if d.text.startswith("throttle exposure")]
    assert any(d.text.startswith("throttling during the candidate run") for d in comp.differences)


@pytest.mark.parametrize(("sm_b", "flagged"), [(1881, False), (1880, True)])
def test_the_clock_tolerance_edge(sm_b: int, flagged: bool) -> None:
    """5 % of 1980 MHz is 99 MHz: 1881 is at the tolerance (not flagged), 1880 just beyond."""
    cand = prov(after=snap(100.0, sm=1980))
    base = prov(after=snap(100.0, sm=sm_b))
    flags = [d for d in compare_provenance(cand, base).flags if d.kind == "clocks"]
    assert bool(flags) is flagged


@pytest.mark.parametrize("side", ["a", "b"])
def test_same_conditions_is_never_claimed_with_the_driver_unrecorded(side: str) -> None:
    blind = prov(gpu=dataclasses.replace(GPU, driver_version=None))
    a, b = (blind, prov()) if side == "a" else (prov(), blind)
    comp = compare_provenance(a, b)
    assert comp.comparable and not comp.checked
    assert not comp.summary().startswith("same conditions")
    assert compare_provenance(prov(), prov()).summary().startswith("same conditions")  # the other side


# --------------------------------------------------------------------------- a row's clock exposure


def _exp(mhz: float, throttled: int = 0) -> ClockExposure:
    return ClockExposure(samples=100, sm_min_mhz=mhz, sm_median_mhz=mhz, sm_max_mhz=mhz, throttled=throttled)


def test_the_row_clock_bounds() -> None:
    assert (CLOCK_BOUND, ROW_EXPOSURE_BOUND) == (0.02, 0.10)


@pytest.mark.parametrize(
    ("mhz_b", "verdict"), [(1960.4, "comparable"), (1960.0, "comparable"), (1959.0, "not_comparable")]
)
def test_row_clock_edge(mhz_b: float, verdict: str) -> None:
    """2 % of 2000 MHz is 40 MHz: 1960 is at the bound (comparable), 1959 beyond it."""
    assert compare_exposures(_exp(2000.0), _exp(mhz_b)).state == verdict


@pytest.mark.parametrize(("throttled", "verdict"), [(10, "comparable"), (11, "not_comparable")])
def test_row_exposure_edge(throttled: int, verdict: str) -> None:
    """10 of 100 calls throttled on one side only: 10 points apart is at the bound; 11 beyond."""
    assert compare_exposures(_exp(2000.0, throttled), _exp(2000.0)).state == verdict


def test_an_unmeasured_side_is_unknown_not_comparable() -> None:
    assert compare_exposures(_exp(2000.0), ClockExposure()).state == "unknown"
    assert compare_exposures(None, _exp(2000.0)).state == "unknown"


@pytest.mark.parametrize("side", ["a", "b"])
def test_a_side_without_clock_snapshots_is_unknown_clocks(side: str) -> None:
    bare = prov(before=None, after=None)
    a, b = (bare, prov()) if side == "a" else (prov(), bare)
    comp = compare_provenance(a, b)
    assert any(u.startswith("clocks:") for u in comp.unknown), comp.unknown
