"""The sanitizer keeps a record block only under its own test (issue 35, item 2: a record paired with
another test's line survived). REAL rms_norm H200 candidate log; one test's block re-labelled with the
next test's nodeid (SYNTHETIC edit of its ``nodeid:`` line and record_json alike)."""

from __future__ import annotations

from pathlib import Path

from cutile_workbench.artifacts.perflog.sanitizer import count_validator_lines, sanitize

LOG = (
    Path(__file__).resolve().parents[2]
    / "cutile_workbench/profiles/rms_norm/session/rms_norm/reports/agent_logs/perf_cutile_rs.full.txt"
)


def _relabelled() -> tuple[str, str, str]:
    text = LOG.read_text()
    ids = [ln.split(": ", 1)[1] for ln in text.splitlines() if ln.startswith("nodeid: ")]
    a, b = ids[0], ids[1]
    start = text.index(f"nodeid: {a}\n")
    end = text.index("\n", text.index("record_json: ", start))
    return text[:start] + text[start:end].replace(a, b) + text[end:], a, b


def test_a_block_under_another_tests_line_is_moved_not_kept() -> None:
    text, a, b = _relabelled()
    out = sanitize(text, pytest_rc=1)
    assert out.kept_records == 6 and a in out.dropped_nodeids
    assert f"record block belongs to {b}, not to this test" in out.investigation_log
    counts = count_validator_lines(out.validator_log)
    assert counts.passes and counts.perf_sections == 6


def test_the_unedited_log_keeps_every_block() -> None:
    out = sanitize(LOG.read_text(), pytest_rc=1)
    assert out.kept_records == 7 and not out.dropped_nodeids
