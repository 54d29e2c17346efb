"""sanitize(): real child-pytest logs of the fixture suite → validator log + investigation log."""

from __future__ import annotations

from pathlib import Path

import pytest
import tilegym_snapshot
from perflog_helpers import FIXTURES, load_suite_runner

from cutile_workbench.artifacts.perflog.parser import parse_perf_log
from cutile_workbench.artifacts.perflog.printer import MARKER, format_block
from cutile_workbench.artifacts.perflog.sanitizer import count_validator_lines, sanitize
from cutile_workbench.errors import WorkbenchError

R = load_suite_runner()
CANDIDATE_FAILING = ("-sv", "--print-record", "-k", "cutile")  # E's run: cutile-rs (+ cutile skips)


def _check_with_real_validator(tmp_path: Path, text: str, expect: str) -> None:
    path = tmp_path / "perf_cutile_rs.txt"
    path.write_text(text)
    result = R.validate_perf_log(path)
    if result is None:
        if tilegym_snapshot.snapshot_required():  # CI: a silent pass without the real validator would lie
            pytest.fail("TileGym snapshot required but the real validate_perf_log.sh is absent")
        return  # TileGym snapshot absent: the in-process counts below still apply
    rc, out = result
    assert rc == 0, out
    assert expect in out, out


def _assert_rules(text: str, records: int) -> None:
    c = count_validator_lines(text)
    assert (c.perf_sections, c.passed, c.failed) == (records, records, 0), c


def test_failing_candidate_run_keeps_every_passed_record(tmp_path: Path):
    run = R.run_suite(CANDIDATE_FAILING)
    assert run.rc == 1
    raw_log = parse_perf_log("raw", text=run.output)
    out = sanitize(run.output, pytest_rc=run.rc, source="perf_cutile_rs.full.txt")
    assert not out.verbatim and out.kept_records == 4
    _assert_rules(out.validator_log, 4)
    kept = parse_perf_log("val", text=out.validator_log, strict=True)
    assert [r.raw for r in kept.records] == [r.raw for r in raw_log.records]
    assert kept.outcomes == []  # nothing but passed tests with records is left
    assert "test session starts" in out.validator_log.splitlines()[0]
    # everything removed is in the investigation log, with why
    inv = out.investigation_log
    for needle in (
        "FAILURES",
        "failed to compile Tile IR program",
        "short test summary info",
        "FAILED test_rms_norm.py::Test_RMSNorm::test_perf[cutile_rs-static_persistent-8192-8192",
        "SKIPPED",
        "test failed",
        "test skipped",
        "rc=1",
        "1 failed, 4 passed, 5 skipped",
    ):
        assert needle in inv, needle
    assert len(out.dropped_nodeids) == 6
    assert any("[cutile_rs-static_persistent-8192-8192" in n for n in out.dropped_nodeids)
    _check_with_real_validator(
        tmp_path, out.validator_log, "PASS: perf_cutile_rs.txt: 4 perf records for 4 passed tests"
    )


def test_clean_rc0_run_is_copied_verbatim(tmp_path: Path):
    run = R.run_suite(("-sv", "--print-record", "-k", "cutile_rs and not 8192-8192"))
    assert run.rc == 0
    out = sanitize(run.output, pytest_rc=0)
    assert out.verbatim and out.validator_log == run.output and out.investigation_log == ""
    _check_with_real_validator(tmp_path, out.validator_log, "perf_sections=4 passed=4 failed=0 skipped=0")


def test_rc0_with_rA_summary_is_sanitized_to_exact_counts(tmp_path: Path):
    # -rA adds "PASSED nodeid" summary lines: the raw log would only WARN (perf != passed)
    run = R.run_suite(("-sv", "--print-record", "-rA", "-k", "cutile_rs and not 8192-8192"))
    assert run.rc == 0
    raw_counts = count_validator_lines(run.output)
    assert raw_counts.passed > raw_counts.perf_sections
    out = sanitize(run.output, pytest_rc=0)
    assert not out.verbatim and out.kept_records == 4
    _assert_rules(out.validator_log, 4)
    _check_with_real_validator(tmp_path, out.validator_log, "PASS")


def test_quiet_run_gets_reconstructed_status_lines(tmp_path: Path):
    run = R.run_suite(("-q", "--print-record", "-k", "not 8192-8192"))
    assert count_validator_lines(run.output).passed == 0  # -q prints no PASSED words
    out = sanitize(run.output, pytest_rc=run.rc)
    _assert_rules(out.validator_log, 8)
    assert "reconstructed" in out.investigation_log
    assert (
        "test_rms_norm.py::Test_RMSNorm::test_perf[triton-static_persistent-65536-8192-torch.float16] PASSED"
        in out.validator_log
    )
    _check_with_real_validator(tmp_path, out.validator_log, "8 perf records for 8 passed tests")


def test_ansi_and_crlf_are_cleaned(tmp_path: Path):
    run = R.run_suite(("-sv", "--print-record", "--color=yes", "-k", "cutile"))
    text = run.output.replace("\n", "\r\n")
    out = sanitize(text, pytest_rc=run.rc)
    assert "\x1b" not in out.validator_log and "\r" not in out.validator_log
    _assert_rules(out.validator_log, 4)
    _check_with_real_validator(tmp_path, out.validator_log, "PASS")


def test_truncated_last_block_moves_to_investigation():
    # synthetic: the raw log of a child killed while printing its last block
    run = R.run_suite(("-sv", "--print-record", "-k", "cutile_rs and not 8192-8192"))
    lines = run.output.splitlines()
    last = max(i for i, ln in enumerate(lines) if MARKER in ln)
    cut = "\n".join(lines[: last + 4]) + "\n"
    out = sanitize(cut, pytest_rc=None)
    _assert_rules(out.validator_log, 3)
    assert "truncated record block" in out.investigation_log


def test_resumed_run_in_the_runners_format(tmp_path: Path):
    # The raw log of a run the runner resumed after a crash, in the format cutile_workbench/run/runner.py
    # documents: attempt 1 (cut while the crashed test was printing), the runner's FAILED line
    # and resume banner, attempt 2's own session, the runner's summary line. The two attempts
    # are real child runs; the crash point and the banners are synthetic.
    first = R.run_suite(("-sv", "--print-record", "-k", "cutile_rs and (262144 or 65536)"))
    second = R.run_suite(("-sv", "--print-record", "-k", "cutile_rs and (4096 or 8192-8192)"))
    lines = first.output.splitlines()
    crash = [i for i, ln in enumerate(lines) if MARKER in ln][1] + 3  # mid second block
    crashed = (
        "test_rms_norm.py::Test_RMSNorm::test_perf[cutile_rs-static_persistent-65536-8192-torch.float16]"
    )
    text = (
        "\n".join(
            [
                *lines[:crash],
                f"FAILED {crashed} - workbench: child died (SIGSEGV) while this test ran",
                "===== workbench resume: attempt 2, 2 of 4 node ids left (attempt 1 crashed: SIGSEGV) =====",
                *second.output.splitlines(),
                "===== workbench summary: 2 passed, 2 failed, 0 skipped, 0 not run in 2 attempt(s) (3.1 s) =====",
            ]
        )
        + "\n"
    )
    out = sanitize(text, pytest_rc=1)
    _assert_rules(out.validator_log, 2)
    kept = parse_perf_log("val", text=out.validator_log, strict=True)
    assert sorted(r.params for r in kept.records) == [
        "static_persistent-262144-1024-torch.float16",
        "static_persistent-4096-1024-torch.bfloat16",
    ]
    assert out.validator_log.count("test session starts") == 1
    for needle in (
        "later session header",
        "truncated record block",
        "child died (SIGSEGV)",
        "workbench resume: attempt 2",
        "workbench summary",
    ):
        assert needle in out.investigation_log, needle
    assert crashed in out.dropped_nodeids
    _check_with_real_validator(tmp_path, out.validator_log, "2 perf records for 2 passed tests")


def test_test_output_with_counted_words_is_moved():
    code = (
        "def test_perf_chatty(record_property):\n"
        "    print('self-check PASSED; previous attempt FAILED')\n"
        "    record_property('benchmark', {'triton': {'forward': {'median': 0.5481, 'nrep': 50}}})\n"
    )  # 0.5481 ms: triton 65536x8192 fp16 (docs/gpu.md §2)
    run = R.run_suite(
        ("-sv", "--workbench-print-record"), target="test_chatty.py", extra_files=(("test_chatty.py", code),)
    )
    assert run.rc == 0
    out = sanitize(run.output, pytest_rc=0)
    _assert_rules(out.validator_log, 1)
    assert "self-check PASSED" in out.investigation_log


def test_nodeid_with_failure_word_is_dropped():
    # synthetic: pytest's own status line carries the word; the section cannot be kept
    nodeid = "t.py::test_perf[triton-FAILED_mode-1024]"
    block = format_block(nodeid, {"triton": {"forward": {"median": 0.01014}}})
    text = "\n".join(["=" * 30 + " test session starts " + "=" * 30, f"{nodeid} PASSED", *block]) + "\n"
    out = sanitize(text, pytest_rc=0)
    assert out.kept_records == 0 and nodeid in out.dropped_nodeids
    assert count_validator_lines(out.validator_log).failed == 0


def test_h200_excerpt_without_blocks():
    text = (FIXTURES / "logs" / "h200_rms_norm_contract_3_1.txt").read_text()
    out = sanitize(text, pytest_rc=0)
    assert out.kept_records == 0  # no printer there: nothing to keep (E reports BLOCKED)
    assert "passed without a record block" in out.investigation_log


hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


@hypothesis.given(st.data())
def test_mutated_logs_always_satisfy_the_validator_rules(data):
    run = R.run_suite(("-sv", "--print-record", "--run-full"), events=True)
    lines = run.output.splitlines()
    n = len(lines)
    start = data.draw(st.integers(0, n - 1))
    stop = data.draw(st.integers(start, min(n, start + 12)))
    junk = data.draw(
        st.lists(
            st.sampled_from(
                [
                    "PASSED",
                    "FAILED",
                    "SKIPPED",
                    MARKER,
                    "-" * 66,
                    "",
                    "x PASSED",
                    "=" * 80,
                    "test_rms_norm.py::Test_RMSNorm::test_perf[triton-a-1] PASSED",
                ]
            )
            | st.text(max_size=40).map(lambda s: [s]),
            max_size=3,
        )
    )
    flat = [j for item in junk for j in (item if isinstance(item, list) else [item])]
    mutated = "\n".join([*lines[:start], *flat, *lines[stop:]]) + "\n"
    try:
        out = sanitize(mutated, pytest_rc=data.draw(st.sampled_from([0, 1, None])))
    except WorkbenchError as exc:  # pragma: no cover - would be a sanitizer bug
        pytest.fail(f"sanitizer postcondition: {exc}")
    c = count_validator_lines(out.validator_log)
    if out.verbatim or out.investigation_log == "":
        assert c.passes
    else:
        assert c.failed == 0 and c.perf_sections == c.passed == out.kept_records


@hypothesis.given(st.text(max_size=300), st.sampled_from([0, 1, None]))
def test_arbitrary_text_never_breaks_the_rules(text, rc):
    out = sanitize(text, pytest_rc=rc)
    c = count_validator_lines(out.validator_log)
    assert c.failed == 0 and c.perf_sections == c.passed


def test_collection_error_moves_to_investigation(tmp_path: Path):
    broken = (
        "import module_that_does_not_exist_here  # a collection error, as a missing cutile-rs build gives\n"
    )
    run = R.run_suite(
        ("-sv", "--print-record", "--continue-on-collection-errors", "-k", "cutile_rs", "test_broken.py"),
        target="test_rms_norm.py",
        extra_files=(("test_broken.py", broken),),
    )
    assert run.rc == 1 and "ERROR collecting test_broken.py" in run.output
    out = sanitize(run.output, pytest_rc=run.rc)
    _assert_rules(out.validator_log, 4)
    assert "module_that_does_not_exist_here" not in out.validator_log
    assert "module_that_does_not_exist_here" in out.investigation_log
    _check_with_real_validator(tmp_path, out.validator_log, "4 perf records for 4 passed tests")


def test_banner_printed_by_a_test_is_not_a_pytest_section():
    code = (
        "def test_perf_banner(record_property):\n"
        "    print('=' * 30 + ' my own benchmark banner ' + '=' * 30)\n"
        "    record_property('benchmark', {'triton': {'forward': {'median': 0.07624, 'nrep': 50}}})\n"
    )  # 0.07624 ms: triton 8192x8192 bf16 (docs/gpu.md §4)
    run = R.run_suite(
        ("-sv", "--workbench-print-record", "-rA"),
        target="test_banner.py",
        extra_files=(("test_banner.py", code),),
    )
    out = sanitize(run.output, pytest_rc=run.rc)
    assert out.kept_records == 1 and "my own benchmark banner" in out.validator_log
    _assert_rules(out.validator_log, 1)
