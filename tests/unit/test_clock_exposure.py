"""Throttling as a measured exposure (issue 18 §3): per-row NVML clock readings, their comparison and faces.

REAL: the recorded matmul session (H200, real cutile-rs vs cuTile), whose records carry no clock
readings (recorded before clock sampling): every face must say the clocks are unknown and why.
SYNTHETIC (labelled per test): ``clocks`` dicts written into a copy of that session's records, and a
fake NVML module standing in for pynvml on this GPU-less machine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from history_helpers import copy_matmul

from cutile_workbench.artifacts.perflog.parser import parse_perf_log
from cutile_workbench.artifacts.workspace import open_workspace
from cutile_workbench.cli import main
from cutile_workbench.clock_exposure import ClockExposure, compare_exposures, exposure_from_dict
from cutile_workbench.errors import InputError
from cutile_workbench.run.capture.clocks import ClockSampler, open_sampler
from cutile_workbench.services import stage_e
from cutile_workbench.services.history import ratio_comparability
from cutile_workbench.stages.e.report import plan_e_report

CAPPED = {
    "source": "nvml",
    "samples": 50,
    "sm_mhz": [1965, 1980, 1980],
    "throttled": 3,
    "reasons": {"sw_power_cap": 3},
}  # SYNTHETIC: issue 18's batched GEMM, a cap at the same clocks
CLEAN = {"source": "nvml", "samples": 40, "sm_mhz": [1965, 1975, 1980], "throttled": 0, "reasons": {}}
SLOW = {
    "source": "nvml",
    "samples": 40,
    "sm_mhz": [1500, 1755, 1980],
    "throttled": 30,
    "reasons": {"sw_power_cap": 30},
}  # SYNTHETIC: a side that really ran slower


def _inject(root: Path, candidate: dict[str, Any] | None, baseline: dict[str, Any] | None) -> None:
    """SYNTHETIC: write a ``clocks`` dict into every record of the copied REAL logs."""
    for rel, clocks in (
        ("reports/agent_logs/perf_cutile_rs.full.txt", candidate),
        ("baseline_perf_cutile.txt", baseline),
    ):
        if clocks is None:
            continue
        path = root / rel
        text = path.read_text()
        assert (
            "{'forward': {'mean':" in text and '{"forward": {"capture":' in text
        )  # repr and record_json lines
        text = text.replace("{'forward': {'mean':", "{'forward': {'clocks': " + repr(clocks) + ", 'mean':")
        path.write_text(
            text.replace(
                '{"forward": {"capture":', '{"forward": {"clocks": ' + json.dumps(clocks) + ', "capture":'
            )
        )


def test_exposure_round_trip_and_bad_dicts_name_the_key():
    e = exposure_from_dict(CAPPED)
    assert (e.samples, e.sm_median_mhz, e.throttled, e.throttled_share) == (50, 1980.0, 3, 0.06)
    assert e.describe() == "1980 MHz (1965-1980), throttled 6% (sw_power_cap 3/50)"
    assert (
        exposure_from_dict({"source": "nvml", "unavailable": "NVML init failed (x)"}).describe()
        == "clocks unknown: NVML init failed (x)"
    )
    for bad, key in (
        ({"samples": 2, "sm_mhz": [1, 2]}, "clocks.sm_mhz"),
        ({"samples": 2, "throttled": 3, "sm_mhz": [1, 1, 1]}, "clocks.throttled"),
        ({"samples": -1}, "clocks.samples"),
        ([], "clocks must be a dict"),
        ({"samples": 2, "sm_mhz": [3, 2, 1]}, "clocks.sm_mhz"),
    ):
        with pytest.raises(ValueError, match=key.replace(".", r"\.")):
            exposure_from_dict(bad)


def test_power_cap_at_the_same_clocks_is_comparable_and_a_slower_side_is_not():
    """SYNTHETIC exposures (the issue's numbers: both sides at 1965-1980 MHz, one power-capped)."""
    same = compare_exposures(exposure_from_dict(CAPPED), exposure_from_dict(CLEAN))
    assert same.state == "comparable"
    assert same.text == (
        "SM clock 1980/1975 MHz (0.3% apart, bound 2%); throttled calls: candidate 6% "
        "(sw_power_cap 3/50), within the bound"
    )
    slow = compare_exposures(exposure_from_dict(CAPPED), exposure_from_dict(SLOW))
    assert slow.state == "not_comparable"
    assert slow.text == (
        "SM clock median candidate 1980 MHz vs baseline 1755 MHz: 11.4% apart (bound 2%); "
        "throttled share candidate 6% vs baseline 75% of the measured calls: 69 points apart "
        "(bound 10)"
    )
    unknown = compare_exposures(
        exposure_from_dict(CAPPED), ClockExposure(unavailable="pynvml not importable")
    )
    assert unknown.state == "unknown" and unknown.text == "clocks unknown: baseline: pynvml not importable"


def test_real_session_says_the_clocks_are_unknown_and_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """REAL recorded session: no clock readings in its records; table and performance.md say so."""
    assert main(["table", "matmul"]) == 0
    out = capsys.readouterr().out
    assert (
        "clocks: not known for any of the 6 row(s): both sides: not sampled (the record carries no clock "
        "readings: recorded before clock sampling, or by another harness)\n"
    ) in out
    assert (
        "config  " in out and "  clocks\n" not in out.split("\n", 3)[2]
    )  # no per-row column without readings
    copy_matmul(tmp_path)
    plan = plan_e_report(open_workspace("matmul", out_root=tmp_path), run_real_scripts=False)
    assert plan.ok, plan.validator_output
    md = next(f.content for f in plan.files if f.relpath.endswith("performance.md"))
    assert "### Clocks and throttling per row\n" in md
    assert "clocks: not known for any of the 6 row(s): both sides: not sampled" in md


def test_rows_with_clock_readings_in_table_header_and_performance_md(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """SYNTHETIC clock readings in a copy of the REAL session: a capped candidate at the same clocks
    stays comparable (mark '='); a baseline that ran 11 % slower is flagged with the numbers."""
    paths = copy_matmul(tmp_path)
    _inject(paths.root, CAPPED, CLEAN)
    assert main(["table", "matmul", "--out-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert (
        "clocks: 6 row(s) at the same clocks (SM clock medians within 2%, throttled shares within 10 points), "
        "0 not comparable, 0 unknown\n" in out
    )
    rows = [ln for ln in out.splitlines() if ln.startswith("True-")]
    assert len(rows) == 6 and all(ln.endswith("  =") for ln in rows)
    ws = stage_e.open_kernel("matmul", out_root=tmp_path, tilegym=None)
    assert ratio_comparability(ws, stage_e.ratio_table(ws)).clock_rows == ()
    plan = plan_e_report(open_workspace("matmul", out_root=tmp_path), run_real_scripts=False)
    assert plan.ok, plan.validator_output
    md = next(f.content for f in plan.files if f.relpath.endswith("performance.md"))
    assert (
        "| 1980 MHz (1965-1980), throttled 6% (sw_power_cap 3/50) | 1975 MHz (1965-1980), throttled 0% | same |"
        in md
    )

    paths = copy_matmul(tmp_path / "slow")
    _inject(paths.root, CAPPED, SLOW)
    ws = stage_e.open_kernel("matmul", out_root=tmp_path / "slow", tilegym=None)
    comp = ratio_comparability(ws, stage_e.ratio_table(ws))
    assert comp.state == "not_comparable" and len(comp.clock_rows) == 6
    assert comp.short.startswith("⚠ 6 row(s) measured at different clocks or throttle exposure (first ")
    assert "11.4% apart (bound 2%)" in comp.short
    assert main(["table", "matmul", "--out-root", str(tmp_path / "slow"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["clocks"]["state"] for r in doc["rows"]} == {"not_comparable"}


def test_malformed_clocks_are_a_named_error_strict_and_unknown_lenient(tmp_path: Path):
    """SYNTHETIC malformed dict in a copy of the REAL baseline log."""
    paths = copy_matmul(tmp_path)
    _inject(paths.root, None, {"source": "nvml", "samples": 3, "sm_mhz": "fast"})
    log = paths.root / "baseline_perf_cutile.txt"
    with pytest.raises(InputError) as err:
        parse_perf_log(log, strict=True)
    assert "clocks" in str(err.value) and "baseline_perf_cutile.txt" in str(err.value)
    lenient = parse_perf_log(log)
    fwd = lenient.records[0].phases["forward"]
    assert fwd.clocks is not None and not fwd.clocks.measured
    assert "malformed" in (fwd.clocks.unavailable or "")


class FakeNvml:
    """SYNTHETIC stand-in for pynvml: scripted SM clocks, reason masks and power-violation counters."""

    def __init__(self, script: list[tuple[int, int, int]], fail_init: bool = False) -> None:
        self.script, self.i, self.fail_init, self.shutdown = script, -1, fail_init, False

    def nvmlInit(self) -> None:
        if self.fail_init:
            raise RuntimeError("NVML_ERROR_DRIVER_NOT_LOADED")

    def nvmlShutdown(self) -> None:
        self.shutdown = True

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, i: int) -> str:
        return f"h{i}"

    def nvmlDeviceGetClockInfo(self, h: str, kind: int) -> int:
        self.i += 1  # the first query of a reading
        return self.script[self.i][0]

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: str) -> int:
        return self.script[self.i][1]

    def nvmlDeviceGetViolationStatus(self, h: str, policy: int) -> Any:
        class V:
            violationTime = self.script[self.i][2] if policy == 0 else 0

        return V()


def test_sampler_marks_throttled_calls_and_says_when_nvml_is_missing():
    """SYNTHETIC NVML readings: before the loop, then after each of 4 windows (cap bit 0x4 on window 1,
    the violation counter grows across window 3)."""
    nvml = FakeNvml([(1980, 0, 0), (1980, 0, 0), (1965, 0x4, 0), (1980, 0, 0), (1980, 0, 5_000_000)])
    sampler = open_sampler(env={}, nvml=nvml)
    for _ in range(5):
        sampler.read()
    sampler.close()
    assert nvml.shutdown and sampler.throttled_windows(range(4)) == [1, 3]
    assert sampler.summary([0, 1, 2, 3]) == {
        "source": "nvml",
        "samples": 4,
        "sm_mhz": [1965, 1980, 1980],
        "throttled": 2,
        "reasons": {"sw_power_cap": 1, "violation_counter": 1},
    }
    assert sampler.summary([0, 2], discarded=2)["discarded"] == 2
    assert open_sampler(env={"WORKBENCH_CLOCKS": "0"}).summary([0]) == {
        "source": "nvml",
        "unavailable": "clock sampling switched off (WORKBENCH_CLOCKS=0)",
    }
    dead = open_sampler(env={}, nvml=FakeNvml([], fail_init=True))
    assert dead.summary([0])["unavailable"] == "NVML init failed (RuntimeError: NVML_ERROR_DRIVER_NOT_LOADED)"
    assert isinstance(dead, ClockSampler) and dead.readings == []


def test_harness_reads_after_each_window_and_discards_throttled_calls(monkeypatch: pytest.MonkeyPatch):
    """SYNTHETIC: a stand-in session (no GPU here) and scripted NVML readings through the real
    ``sample_loop`` and the harness's discard-on-throttle."""
    import contextlib

    from cutile_workbench.errors import CaptureError
    from cutile_workbench.model import CallCapture
    from cutile_workbench.run.capture.harness import _discard_throttled, sample_loop

    class Session:  # what sample_loop needs of an events session: one context per measured window
        def __init__(self) -> None:
            self.windows = 0

        @contextlib.contextmanager
        def call(self):  # type: ignore[no-untyped-def]
            yield
            self.windows += 1

    script = [(1980, 0, 0), (1980, 0, 0), (1965, 0x4, 0), (1980, 0, 0), (1980, 0, 0)]
    nvml = FakeNvml(script)
    sampler = open_sampler(env={}, nvml=nvml)
    session = Session()
    sample_loop(None, session, [lambda: None], 4, None, sampler=sampler)
    assert session.windows == 4 and len(sampler.readings) == 5  # one before, one after each window
    calls = [
        CallCapture(index=i, backend="x", host_start_ns=i, host_end_ns=i + 1, launches=()) for i in range(4)
    ]
    samples = [1.0, 1.3, 1.0, 1.0]
    assert _discard_throttled(sampler, calls, samples, [0, 1, 2, 3])[3] == 0  # off unless asked
    monkeypatch.setenv("WORKBENCH_DISCARD_THROTTLED", "1")
    kept_calls, kept_samples, kept, discarded = _discard_throttled(sampler, calls, samples, [0, 1, 2, 3])
    assert (kept_samples, kept, discarded) == ([1.0, 1.0, 1.0], [0, 2, 3], 1)
    assert [c.index for c in kept_calls] == [0, 1, 2]
    assert sampler.summary(kept, discarded=discarded) == {
        "source": "nvml",
        "samples": 3,
        "sm_mhz": [1980, 1980, 1980],
        "throttled": 0,
        "reasons": {},
        "discarded": 1,
    }
    with pytest.raises(CaptureError, match="all 1 measured calls ran while the GPU was throttled"):
        _discard_throttled(sampler, calls[1:2], samples[1:2], [1])


def test_measured_row_clocks_outrank_the_runs_end_snapshots(tmp_path: Path):
    """SYNTHETIC provenance events (the baseline's end snapshot at 1755 MHz, power-capped) and SYNTHETIC
    per-call readings on a copy of the REAL session: with every row's measured clocks within the bound,
    the snapshot (taken after the last test, outside the measured calls) is a note, not a flag."""
    from history_helpers import provenance, utc

    at = utc("2026-12-01 09:20")
    paths = copy_matmul(tmp_path)
    ev = paths.root / "workbench" / "events.jsonl"
    with open(ev, "a", encoding="utf-8") as fh:
        for role, prov in (
            ("candidate", provenance(at)),
            ("baseline_cutile", provenance(at + 60, sm_end=1755, throttle=("sw_power_cap",))),
        ):
            for phase in ("start", "finish"):
                fh.write(
                    json.dumps(
                        {
                            "event": "provenance",
                            "ts": 1.0,
                            "phase": phase,
                            "role": role,
                            "provenance": prov.to_dict(),
                        }
                    )
                    + "\n"
                )
    ws = stage_e.open_kernel("matmul", out_root=tmp_path, tilegym=None)
    before = ratio_comparability(ws, stage_e.ratio_table(ws))
    assert (
        before.state == "not_comparable" and "SM clock" in before.short
    )  # no per-call readings: snapshots decide
    _inject(paths.root, CAPPED, CLEAN)
    ws = stage_e.open_kernel("matmul", out_root=tmp_path, tilegym=None)
    after = ratio_comparability(ws, stage_e.ratio_table(ws))
    assert after.state == "comparable", after.short
    assert any("every row's measured clocks are within the bound" in n for n in after.baselines[0].notes)


def test_f_report_names_rows_measured_at_other_clocks(tmp_path: Path):
    """SYNTHETIC readings (baseline 11 % slower clocks) in a copy of the REAL session: F says so."""
    from cutile_workbench.services import stage_f

    paths = copy_matmul(tmp_path)
    _inject(paths.root, CAPPED, SLOW)
    ws = stage_f.open_kernel("matmul", out_root=tmp_path, tilegym=None)
    report = stage_f.plan(ws, run_real_scripts=False).plan
    inv = next(f.content for f in report.files if f.relpath.startswith("reports/perf_investigation_"))
    assert (
        "- **Clocks differ** for `True-True-False-False-2048-2048-2048-0-0-torch.float16`: SM clock median "
        "candidate 1980 MHz vs baseline 1755 MHz: 11.4% apart (bound 2%)" in inv
    )


def test_nvml_unavailable_says_what_is_unknown_and_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """SYNTHETIC: what a child without pynvml writes (the sampler's own wording) in a copy of the REAL logs."""
    why = {
        "source": "nvml",
        "unavailable": "pynvml not importable (No module named 'pynvml'); install nvidia-ml-py",
    }
    paths = copy_matmul(tmp_path)
    _inject(paths.root, why, why)
    assert main(["table", "matmul", "--out-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert (
        "clocks: not known for any of the 6 row(s): both sides: pynvml not importable (No module named "
        "'pynvml'); install nvidia-ml-py\n"
    ) in out
    assert all(ln.endswith("  ?") for ln in out.splitlines() if ln.startswith("True-"))


def test_clock_lines_group_unknown_rows_by_reason():
    """SYNTHETIC verdicts: comparable, not comparable, and two unknown rows sharing one reason."""
    from cutile_workbench.clock_exposure import clock_lines

    capped, slow = exposure_from_dict(CAPPED), exposure_from_dict(SLOW)
    lines = clock_lines(
        [
            ("a", compare_exposures(capped, capped)),
            ("b", compare_exposures(capped, slow)),
            ("c", compare_exposures(capped, None)),
            ("d", compare_exposures(capped, None)),
        ]
    )
    assert lines[0] == (
        "clocks: 1 row(s) at the same clocks (SM clock medians within 2%, throttled shares within 10 "
        "points), 1 not comparable, 2 unknown"
    )
    assert lines[1].startswith("  not comparable b: SM clock median candidate 1980 MHz vs baseline 1755 MHz")
    assert lines[2:] == [
        "  unknown (2 row(s), first c): baseline: not sampled (the record carries no clock "
        "readings: recorded before clock sampling, or by another harness)"
    ]
