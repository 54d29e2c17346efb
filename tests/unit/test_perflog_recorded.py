"""The perf-log stack on the real H200 sessions under ``cutile_workbench/profiles/*/session/`` (recorded with this
plugin by the GPU session: real pytest -sv logs, real CUPTI numbers). Skipped where absent."""

from __future__ import annotations

from pathlib import Path

import pytest
from perflog_helpers import load_suite_runner

from cutile_workbench.artifacts.events import read_events
from cutile_workbench.artifacts.perflog.parser import parse_perf_log
from cutile_workbench.artifacts.perflog.sanitizer import count_validator_lines, sanitize

REPO = Path(__file__).resolve().parents[2]
LOGS = sorted(REPO.glob("cutile_workbench/profiles/*/session/*/baseline_perf_*.txt")) + sorted(
    REPO.glob("cutile_workbench/profiles/*/session/*/reports/agent_logs/perf_cutile_rs.full.txt")
)
EVENTS = sorted(REPO.glob("cutile_workbench/profiles/*/session/*/workbench/events.jsonl"))


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(REPO)) for p in paths]


@pytest.mark.skipif(not LOGS, reason="no recorded H200 sessions in cutile_workbench/profiles/")
@pytest.mark.parametrize("log_path", LOGS, ids=_ids(LOGS))
def test_recorded_log_parses_strictly_and_passes_the_validator(log_path: Path):
    text = log_path.read_text()
    log = parse_perf_log(log_path, strict=True)
    assert log.records and not log.notes and not log.truncated
    for rec in log.records:
        f = rec.forward
        assert f is not None and f.nrep and f.samples_ms and len(f.samples_ms) == f.nrep
        assert f.min_ms <= f.median_ms <= f.max_ms
        assert f.launches_per_iter == f.launches_per_call  # kernel_times count == harness count
    counts = count_validator_lines(text)
    assert counts.passes and counts.perf_sections == len(log.records)
    out = sanitize(text, pytest_rc=0)
    assert out.verbatim and out.investigation_log == ""
    result = load_suite_runner().validate_perf_log(log_path)
    if result is not None:
        rc, output = result
        assert rc == 0 and "PASS:" in output, output


@pytest.mark.skipif(not LOGS, reason="no recorded H200 sessions in cutile_workbench/profiles/")
def test_recorded_hotpath_wrapper_shows_three_launches_per_call():
    """gpu.md §4's FIXABLE pattern, seen through the parsed records: same configs as the baseline,
    3 launches per call instead of 1."""
    kdir = REPO / "cutile_workbench/profiles/rms_norm/session/rms_norm_hotpath"
    if not kdir.is_dir():
        pytest.skip("rms_norm_hotpath session not recorded")
    cand = parse_perf_log(kdir / "reports/agent_logs/perf_cutile_rs.full.txt", strict=True)
    base = parse_perf_log(kdir / "baseline_perf_cutile.txt", strict=True)
    assert {r.row_key for r in cand.records} == {r.row_key for r in base.records}
    assert {r.forward.launches_per_iter for r in cand.records} == {3}
    assert {r.forward.launches_per_iter for r in base.records} == {1}
    by_key = {r.row_key: r.forward.median_ms for r in base.records}
    assert all(r.forward.median_ms > by_key[r.row_key] for r in cand.records)


@pytest.mark.skipif(not EVENTS, reason="no recorded event streams in cutile_workbench/profiles/")
@pytest.mark.parametrize("events_path", EVENTS, ids=_ids(EVENTS))
def test_recorded_event_streams_read_back(events_path: Path):
    evs = read_events(events_path)
    kinds = [e.event for e in evs]
    assert kinds.count("test_start") == kinds.count("test_finish") == kinds.count("record") > 0
    assert kinds.count("session_start") == kinds.count("session_finish")
