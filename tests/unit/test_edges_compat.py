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


# --------------------------------------------------------------------------- the provenance rules, edge by edge
# (issue 35, second wave: survivors of bench/mutation_test.py --modules compat; SYNTHETIC provenances)


@pytest.mark.parametrize("side", ["a", "b"])
def test_a_missing_provenance_on_either_side_is_all_unknown(side: str) -> None:
    a, b = (None, prov()) if side == "a" else (prov(), None)
    comp = compare_provenance(a, b)
    who = "candidate" if side == "a" else "baseline"
    assert comp.unknown == (f"all conditions: no provenance for the {who}",) and not comp.differences


@pytest.mark.parametrize("side", ["a", "b"])
def test_throttling_unrecorded_on_one_side_is_unknown_and_no_note(side: str) -> None:
    """No clock-event reasons and no counters on one side: its throttling is unknown, never "None"."""
    blind = snap(100.0)
    blind = dataclasses.replace(
        blind, clock_event_reasons=None, power_violation_ns=None, thermal_violation_ns=None
    )
    quiet = prov(before=None, after=blind)
    a, b = (quiet, prov()) if side == "a" else (prov(), quiet)
    comp = compare_provenance(a, b)
    who = "candidate" if side == "a" else "baseline"
    assert f"throttling: not recorded for the {who}" in comp.unknown
    assert not [d for d in comp.differences if d.kind == "throttling"], comp.differences


@pytest.mark.parametrize("side", ["a", "b"])
def test_throttling_notes_carry_the_throttled_sides_value_only(side: str) -> None:
    """The note's a_value/b_value (what a face shows per side): the throttled side's reasons, the other None."""
    hot = prov(after=snap(100.0, power_ns=5_000_000_000))  # 5 s of 100 s: 5 %, within the bound
    a, b = (hot, prov()) if side == "a" else (prov(), hot)
    (note,) = [d for d in compare_provenance(a, b).differences if d.kind == "throttling"]
    assert note.severity == "note"
    assert (
        note.text
        == f"throttling during the {'candidate' if side == 'a' else 'baseline'} run: power_violation_5000.0ms (5.0% of the run)"
    )
    expect = "power_violation_5000.0ms"
    assert (note.a_value, note.b_value) == ((expect, None) if side == "a" else (None, expect))


def test_both_runs_equally_throttled_is_no_exposure_flag() -> None:
    """30 % under violation on both sides: the exposures agree (0 points apart), so two notes and no flag."""
    hot = prov(after=snap(100.0, power_ns=30_000_000_000))
    comp = compare_provenance(hot, hot)
    assert comp.comparable and len([d for d in comp.differences if d.kind == "throttling"]) == 2


def test_the_exposure_flag_states_both_shares_and_the_points_apart() -> None:
    """95 % vs 5 %: 90 points (a percentage of the share difference, not 90.9)."""
    cand = prov(after=snap(100.0, power_ns=95_000_000_000))
    base = prov(after=snap(100.0, power_ns=5_000_000_000))
    (flag,) = [d for d in compare_provenance(cand, base).flags if d.kind == "throttling"]
    assert flag.text == (
        "throttle exposure: candidate 95.0% vs baseline 5.0% of the run under power/thermal violation, "
        "90 points apart (bound 10)"
    )
    assert (flag.a_value, flag.b_value) == ("95.0%", "5.0%")


@pytest.mark.parametrize("side", ["a", "b"])
def test_a_throttled_run_against_one_of_unknown_exposure_never_crashes(side: str) -> None:
    """The exposure known on one side only (either one): no exposure flag, the note stays."""
    hot = prov(after=snap(100.0, power_ns=35_000_000_000))
    unknown_exposure = prov(before=None, after=snap(100.0, reasons=("sw_thermal_slowdown",)))
    a, b = (hot, unknown_exposure) if side == "a" else (unknown_exposure, hot)
    comp = compare_provenance(a, b)
    assert not [d for d in comp.flags if d.kind == "throttling"]
    assert len([d for d in comp.differences if d.kind == "throttling"]) == 2


_EFFECT = "throttling effect:"


@pytest.mark.parametrize(
    ("throttled", "clocks", "effect"),
    [
        (True, False, True),  # throttled, clocks unrecorded: its effect cannot be judged
        (True, True, False),  # throttled, clocks recorded: judged by the clocks
        (False, False, False),  # not throttled: nothing to judge, whatever the clocks
    ],
)
def test_the_throttling_effect_is_unknown_only_when_a_throttled_run_lacks_clocks(
    throttled: bool, clocks: bool, effect: bool
) -> None:
    end = snap(100.0, power_ns=5_000_000_000 if throttled else 0)
    if not clocks:
        end = dataclasses.replace(end, sm_clock_mhz=None)
    comp = compare_provenance(prov(after=end), prov())
    assert any(u.startswith(_EFFECT) for u in comp.unknown) is effect, comp.unknown


@pytest.mark.parametrize("side", ["a", "b"])
def test_an_idle_snapshot_on_either_side_is_not_compared(side: str) -> None:
    idle = prov(after=snap(100.0, sm=345, reasons=("gpu_idle",)))
    a, b = (idle, prov()) if side == "a" else (prov(), idle)
    comp = compare_provenance(a, b)
    assert not [d for d in comp.differences if d.kind == "clocks"]
    assert any("idle" in u for u in comp.unknown if u.startswith("clocks:"))


@pytest.mark.parametrize("side", ["a", "b"])
def test_a_clock_unread_on_either_side_is_unknown_not_a_crash(side: str) -> None:
    blind = prov(after=dataclasses.replace(snap(100.0), sm_clock_mhz=None))
    a, b = (blind, prov()) if side == "a" else (prov(), blind)
    comp = compare_provenance(a, b)
    who = "candidate" if side == "a" else "baseline"
    assert f"SM clock: not recorded for the {who}" in comp.unknown


@pytest.mark.parametrize(("mem_b", "flagged"), [(3041, False), (3040, True)])
def test_the_memory_clock_tolerance_edge(mem_b: int, flagged: bool) -> None:
    """5 % of 3201 MHz is 160.05 MHz: 160 apart is within, 161 beyond (and within 5.05 %: the default
    tolerance is exactly 5 %)."""
    base_end = dataclasses.replace(snap(100.0), mem_clock_mhz=mem_b)
    flags = [d for d in compare_provenance(prov(), prov(after=base_end)).flags if d.kind == "clocks"]
    assert bool(flags) is flagged
    if flagged:
        assert (
            flags[0].text == f"memory clock: candidate 3201 MHz vs baseline {mem_b} MHz (more than 5% apart)"
        )


@pytest.mark.parametrize(
    ("a_tools", "b_tools", "flagged"),
    [
        ({"tileiras": "13.4.92"}, {"tileiras": "13.4.92"}, False),  # the same version
        ({"tileiras": "13.4.92"}, {"tileiras": "13.3.0"}, True),  # another version: a flag
        ({"tileiras": "13.4.92"}, {}, False),  # recorded on one side only (an older run): silent
        ({}, {"tileiras": "13.4.92"}, False),
        ({"tileiras": ""}, {"tileiras": "13.4.92"}, False),  # an empty value is no record
        ({"tileiras": "13.4.92"}, {"tileiras": ""}, False),
    ],
)
def test_toolchain_versions_flag_only_when_both_recorded_and_different(
    a_tools: dict[str, str], b_tools: dict[str, str], flagged: bool
) -> None:
    comp = compare_provenance(prov(toolchain=a_tools), prov(toolchain=b_tools))
    flags = [d for d in comp.flags if d.kind == "toolchain"]
    assert bool(flags) is flagged
    assert not [d for d in comp.differences if d.kind == "toolchain" and d.severity == "note"]
    if flagged:
        assert flags[0].text == "tileiras: candidate 13.4.92 vs baseline 13.3.0"
        assert (flags[0].a_value, flags[0].b_value) == ("13.4.92", "13.3.0")
    assert not [u for u in comp.unknown if "tileiras" in u]


def test_a_toolchain_key_is_named_with_dashes() -> None:
    comp = compare_provenance(
        prov(toolchain={"cutile_rs_commit": "abc"}), prov(toolchain={"cutile_rs_commit": "def"})
    )
    assert [d.text for d in comp.flags] == ["cutile-rs-commit: candidate abc vs baseline def"]


@pytest.mark.parametrize("side", ["a", "b"])
@pytest.mark.parametrize("harness", [None, HarnessInfo("unknown", {})])
def test_a_harness_unknown_on_either_side_is_unknown_not_compared(
    side: str, harness: HarnessInfo | None
) -> None:
    """No harness recorded, or the suite's own unnamed one ("unknown"): nothing is compared, knobs included."""
    blind = prov(harness=harness)
    a, b = (blind, prov()) if side == "a" else (prov(), blind)
    comp = compare_provenance(a, b)
    assert "harness: not known for both runs" in comp.unknown
    assert not [d for d in comp.differences if d.kind == "harness"], comp.differences


def _harness_diffs(a_knobs: dict[str, str], b_knobs: dict[str, str]) -> list[tuple[str, str]]:
    comp = compare_provenance(
        prov(harness=HarnessInfo("workbench", a_knobs)), prov(harness=HarnessInfo("workbench", b_knobs))
    )
    return [(d.severity, d.text) for d in comp.differences if d.kind == "harness"]


@pytest.mark.parametrize(
    "knob",
    [
        "WARMUP",
        "REP",
        "MIN_REP",
        "INITIAL_REP",
        "MAX_REP",
        "DUMP_CUPTI_EVENTS",
        "WORKBENCH_CLOCKS",
        "WORKBENCH_DISCARD_THROTTLED",
    ],
)
def test_each_sampling_knob_set_differently_is_a_note(knob: str) -> None:
    assert _harness_diffs({knob: "1"}, {knob: "2"}) == [("note", f"{knob}: candidate 1 vs baseline 2")]


@pytest.mark.parametrize("knob", ["CUPTI", "CUDAGRAPH", "MODE", "WORKBENCH_CUPTI_WINDOW"])
def test_a_knob_that_changes_what_is_timed_is_a_flag(knob: str) -> None:
    assert _harness_diffs({knob: "1"}, {knob: "2"}) == [("flag", f"{knob}: candidate 1 vs baseline 2")]


@pytest.mark.parametrize("knob", ["CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "DISABLE_FALLBACK"])
def test_the_knobs_that_are_never_compared(knob: str) -> None:
    """Which GPU, and the candidate-only fallback guard: not a difference, set differently or on one side."""
    assert _harness_diffs({knob: "0"}, {knob: "1"}) == []
    assert _harness_diffs({knob: "0"}, {}) == []


@pytest.mark.parametrize("side", ["a", "b"])
def test_a_knob_set_on_one_side_only_is_a_note_naming_that_side(side: str) -> None:
    knobs: dict[str, str] = {"CUPTI": "1"}
    a, b = (knobs, {}) if side == "a" else ({}, knobs)
    who = "candidate" if side == "a" else "baseline"
    assert _harness_diffs(a, b) == [("note", f"CUPTI=1 set for the {who} only")]
