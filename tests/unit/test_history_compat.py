"""Comparability of candidate and baseline conditions, and performance.md's conditions section.

SYNTHETIC provenances (hand-made, one fact changed per case) for the rules; the REAL recorded
rms_norm session for the E report (performance.md must still pass the validators byte for byte).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import shutil
import sys
from pathlib import Path

from cutile_workbench.artifacts.workspace import open_workspace
from cutile_workbench.history.compat import compare_provenance, render_conditions_section
from cutile_workbench.history.provenance import HarnessInfo, Provenance
from cutile_workbench.history.provenance.gpu import ClockSnapshot, GpuIdentity
from cutile_workbench.stages.e.report import plan_e_report
from cutile_workbench.stages.e.validators import validate_agent_e

_spec = importlib.util.spec_from_file_location(
    "e_builders", Path(__file__).parent.parent / "fixtures/e/builders.py"
)
assert _spec and _spec.loader
B = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("e_builders", B)
_spec.loader.exec_module(B)

ROOT = Path(__file__).resolve().parents[2]
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


def snap(sm: int = 1980, reasons: tuple[str, ...] = ()) -> ClockSnapshot:
    return ClockSnapshot(1.0, sm, 3201, sm, 1980, reasons, 45, 300.0, 700.0, 0, 0, 0)


BASE = Provenance(
    source="live",
    gpu=GPU,
    before=snap(),
    after=snap(),
    host="node1",
    harness=HarnessInfo("workbench", {"WORKBENCH_CUPTI_WINDOW": "per_call"}),
    started_at=1.0,
)


def with_gpu(**kw: object) -> Provenance:
    return dataclasses.replace(BASE, gpu=dataclasses.replace(GPU, **kw))


def snap_at(
    at: float, *, sm: int = 1980, power_violation_ns: int = 0, reasons: tuple[str, ...] = ()
) -> ClockSnapshot:
    return ClockSnapshot(at, sm, 3201, sm, 1980, reasons, 45, 300.0, 700.0, 0, power_violation_ns, 0)


def test_power_cap_at_the_same_clocks_is_comparable_and_named():
    """SYNTHETIC numbers from issue 18's real batched GEMM (sw_power_cap: 396 ms of violation in a 31 s
    run, 1.7 s in 48 s, both at 1965-1980 MHz): a note with each run's exposure, not a flag."""
    cand = dataclasses.replace(
        BASE,
        before=snap_at(0.0, sm=1980),
        after=snap_at(31.0, sm=1965, power_violation_ns=396_000_000, reasons=("sw_power_cap",)),
    )
    base = dataclasses.replace(
        BASE, before=snap_at(0.0, sm=1980), after=snap_at(48.0, sm=1980, power_violation_ns=1_700_000_000)
    )
    comp = compare_provenance(cand, base)
    assert comp.comparable, comp.flags
    notes = [d.text for d in comp.differences if d.severity == "note"]
    assert (
        "throttling during the candidate run: sw_power_cap@end, power_violation_396.0ms (1.3% of the run)"
        in notes
    )
    assert "throttling during the baseline run: power_violation_1700.0ms (3.5% of the run)" in notes


def test_throttle_exposure_beyond_the_bound_is_flagged_with_the_gap():
    """SYNTHETIC: one run spent 35 % of its time power-capped, the other 1.3 %: flagged, by how much."""
    cand = dataclasses.replace(BASE, before=snap_at(0.0), after=snap_at(31.0, power_violation_ns=396_000_000))
    base = dataclasses.replace(
        BASE, before=snap_at(0.0), after=snap_at(40.0, power_violation_ns=14_000_000_000)
    )
    comp = compare_provenance(cand, base)
    assert [d.text for d in comp.flags] == [
        "throttle exposure: candidate 1.3% vs baseline 35.0% of the run under power/thermal violation, "
        "34 points apart (bound 10)"
    ]


def test_throttling_without_clocks_is_unknown_not_assumed():
    """SYNTHETIC: a throttled run whose clocks NVML did not read: the effect is unknown, not 'comparable'."""
    hot = dataclasses.replace(
        BASE, after=dataclasses.replace(snap(reasons=("sw_thermal_slowdown",)), sm_clock_mhz=None)
    )
    comp = compare_provenance(hot, BASE)
    assert comp.comparable and any(u.startswith("throttling effect:") for u in comp.unknown)
    assert "throttling during the candidate run: sw_thermal_slowdown@end" in [
        d.text for d in comp.differences
    ]


def test_same_conditions_are_comparable():
    comp = compare_provenance(BASE, BASE)
    assert comp.comparable and comp.differences == () and comp.unknown == ()
    assert comp.summary() == "same conditions (candidate vs baseline)"


def test_each_difference_is_flagged_and_named():
    cases = {
        "GPU: candidate NVIDIA H100 80GB HBM3 vs baseline NVIDIA H200": with_gpu(
            name="NVIDIA H100 80GB HBM3"
        ),
        "driver: candidate 590.10 vs baseline 580.159.04": with_gpu(driver_version="590.10"),
        "MIG mode: candidate enabled vs baseline disabled": with_gpu(mig_mode="enabled"),
        "SM clock: candidate 1500 MHz vs baseline 1980 MHz (more than 5% apart)": dataclasses.replace(
            BASE, after=snap(sm=1500)
        ),
        "WORKBENCH_CUPTI_WINDOW: candidate session vs baseline per_call": dataclasses.replace(
            BASE, harness=HarnessInfo("workbench", {"WORKBENCH_CUPTI_WINDOW": "session"})
        ),
        "harness: candidate tilegym vs baseline workbench": dataclasses.replace(
            BASE, harness=HarnessInfo("tilegym", {"WORKBENCH_CUPTI_WINDOW": "per_call"})
        ),
    }
    for text, cand in cases.items():
        comp = compare_provenance(cand, BASE)
        assert [d.text for d in comp.flags] == [text]
        assert not comp.comparable and text in comp.summary()


def test_small_clock_drift_another_gpu_host_and_sample_counts_are_notes_only():
    cand = dataclasses.replace(
        with_gpu(uuid="GPU-2"),
        after=snap(sm=1950),
        host="node9",
        harness=HarnessInfo("workbench", {"WORKBENCH_CUPTI_WINDOW": "per_call", "REP": "200"}),
    )
    base = dataclasses.replace(
        BASE, harness=HarnessInfo("workbench", {"WORKBENCH_CUPTI_WINDOW": "per_call", "REP": "50"})
    )
    comp = compare_provenance(cand, base)
    assert comp.comparable
    assert {d.kind for d in comp.differences} == {"gpu_instance", "host", "harness"}
    assert "REP: candidate 200 vs baseline 50" in [d.text for d in comp.differences]


def test_unknown_facts_are_listed_never_equal():
    bare = Provenance(
        source="imported", gpu=dataclasses.replace(GPU, mig_mode=None, cuda_driver_version=None)
    )
    comp = compare_provenance(bare, BASE)
    assert comp.comparable and comp.checked  # nothing known differs, GPU and driver are known ...
    text = " | ".join(comp.unknown)  # ... but what is unknown is said
    assert (
        "MIG mode: not recorded for the candidate" in text
        and "throttling: not recorded for the candidate" in text
    )
    assert "clocks: not recorded" in text
    idle = dataclasses.replace(BASE, after=snap(reasons=("gpu_idle",)))
    assert any("idle" in u for u in compare_provenance(idle, BASE).unknown)
    none = compare_provenance(None, BASE)
    assert none.unknown == ("all conditions: no provenance for the candidate",) and not none.checked
    assert none.summary().startswith("conditions unknown")


def test_section_never_adds_validated_lines():
    bad = with_gpu(driver_version="590.10")
    text = render_conditions_section(
        bad, [("triton_tileir", BASE, compare_provenance(bad, BASE, b_label="baseline"))]
    )
    assert "**Not comparable** with `triton_tileir`: driver: candidate 590.10 vs baseline 580.159.04." in text
    assert "geomean_ratio=" not in text and not re.search(r"PASSED|FAILED|SKIPPED|^VERDICT", text, re.M)
    assert render_conditions_section(BASE, []) == ""


def _performance_md(root: Path, kernel: str) -> tuple[str, object]:
    ws = open_workspace(kernel, out_root=root, env={})
    plan = plan_e_report(ws, run_real_scripts=False)
    assert plan.ok, plan.validator_output
    files = {f.relpath: f.content for f in plan.files}
    assert validate_agent_e(ws.paths.root, files).exit_code == 0
    perf = files["reports/performance.md"]
    assert perf.count("\ngeomean_ratio=") == 1 and perf.startswith("VERDICT: ")
    return perf[perf.index("### Measurement conditions") :], plan


def test_e_report_of_the_recorded_session_states_its_conditions(tmp_path):
    """REAL recorded rms_norm session (with its session.json): the section is there, validators pass."""
    shutil.copytree(
        ROOT / "cutile_workbench" / "profiles" / "rms_norm" / "session" / "rms_norm", tmp_path / "rms_norm"
    )
    section, _plan = _performance_md(tmp_path, "rms_norm")
    assert "| GPU | NVIDIA H200 | NVIDIA H200 |" in section and "Comparable with `triton_tileir`" in section
    assert "MIG mode (not recorded for either run)" in section


def test_e_report_without_any_recorded_conditions_says_it_cannot_check(tmp_path):
    """REAL logs without session.json or a device line: no claim of comparability."""
    B.copy_real(tmp_path, "rms_norm")
    section, _plan = _performance_md(tmp_path, "rms_norm")
    assert "cannot be checked" in section and "Comparable with" not in section


def test_discard_on_throttle_set_differently_is_a_note():
    """SYNTHETIC: one side dropped its throttled calls (WORKBENCH_DISCARD_THROTTLED=1), the other kept them."""
    a = dataclasses.replace(
        BASE,
        harness=HarnessInfo(
            "workbench", {"WORKBENCH_CUPTI_WINDOW": "per_call", "WORKBENCH_DISCARD_THROTTLED": "1"}
        ),
    )
    b = dataclasses.replace(
        BASE,
        harness=HarnessInfo(
            "workbench", {"WORKBENCH_CUPTI_WINDOW": "per_call", "WORKBENCH_DISCARD_THROTTLED": "0"}
        ),
    )
    comp = compare_provenance(a, b)
    assert comp.comparable
    assert [d.text for d in comp.differences] == ["WORKBENCH_DISCARD_THROTTLED: candidate 1 vs baseline 0"]
