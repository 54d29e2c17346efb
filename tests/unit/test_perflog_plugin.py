"""The pytest plugin, exercised through real pytest child processes on the fixture suite.

The suite (tests/fixtures/perflog/perf_suite_rms_norm.py) replays real H200 rms_norm numbers
(sources cited there) under a host conftest registered the TileGym way.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from perflog_helpers import load_suite_runner

from cutile_workbench.artifacts.events import read_events
from cutile_workbench.artifacts.perflog.parser import parse_perf_log
from cutile_workbench.artifacts.perflog.printer import MARKER

R = load_suite_runner()
PASSING_ONLY = ("-k", "not 8192-8192")  # every selected config passes or skips


def _lines_with(text: str, word: str) -> int:
    return sum(word in ln for ln in text.splitlines())


def test_host_print_record_prints_one_block_per_passed_test():
    run = R.run_suite(("-sv", "--print-record", "--run-full"), events=True)
    assert run.rc == 1, run.output  # one config fails on purpose
    out = run.output
    # 9 passed (4 cutile-rs + 5 triton), 1 failed, 5 skipped (cutile unavailable)
    assert "1 failed, 9 passed, 5 skipped" in out
    assert _lines_with(out, MARKER) == 9
    # blocks come after PASSED: every marker line directly follows a line containing PASSED
    lines = out.splitlines()
    for i, ln in enumerate(lines):
        if MARKER in ln:
            assert lines[i - 1].rstrip().endswith("PASSED"), lines[i - 2 : i + 1]
    # nothing printed for the failed or skipped tests
    assert "nodeid: test_rms_norm.py::Test_RMSNorm::test_perf[cutile-" not in out
    assert (
        "nodeid: test_rms_norm.py::Test_RMSNorm::test_perf[cutile_rs-static_persistent-8192-8192" not in out
    )


def test_block_grammar_matches_contract_3_6():
    run = R.run_suite(("-sv", "--print-record", "--run-full"), events=True)
    lines = run.output.splitlines()
    start = next(
        i
        for i, ln in enumerate(lines)
        if MARKER in ln and "triton-static_persistent-262144-1024" in lines[i + 1]
    )
    block = lines[start : start + 8]
    assert block[0] == "-------------------- Performance Test Results --------------------"
    assert (
        block[1]
        == "nodeid: test_rms_norm.py::Test_RMSNorm::test_perf[triton-static_persistent-262144-1024-torch.float16]"
    )
    assert block[2] == "framework: triton"
    assert block[3] == "params: static_persistent-262144-1024-torch.float16"
    assert block[4].startswith("Triton: {'forward': {'mean': 0.34924473333333333, ") and block[4].endswith(
        "}} ms"
    )
    assert block[5] == (
        "forward: median_ms=0.348959 mean_ms=0.349245 min_ms=0.344450 max_ms=0.357759 "
        "rel_std_pct=0.686 nrep=120 launches_per_iter=1 "
        "top_kernel='_rms_norm_kernel_static_persistent'"
    )
    payload = json.loads(block[6].removeprefix("record_json: "))
    assert list(payload) == ["benchmark", "framework", "nodeid", "params"]  # sort_keys
    assert payload["benchmark"]["triton"]["forward"]["median"] == 0.34895899999999985
    assert block[7] == "-" * len(block[0])
    for ln in block[1:]:
        assert not any(w in ln for w in ("PASSED", "FAILED", "SKIPPED", MARKER))


def test_cutile_rs_id_token_and_params():
    run = R.run_suite(("-sv", "--print-record", "--run-full"), events=True)
    assert (
        "nodeid: test_rms_norm.py::Test_RMSNorm::test_perf[cutile_rs-static_persistent-4096-1024-torch.bfloat16]"
        in run.output
    )
    assert (
        "framework: cutile-rs\nparams: static_persistent-4096-1024-torch.bfloat16\nCutile-rs: {" in run.output
    )
    # the harness key launches_per_call stands in when kernel_times is absent
    assert "nrep=50 launches_per_iter=1 top_kernel=NA" in run.output


def test_run_full_and_print_record_both_work_with_plugin_loaded():
    """Our plugin never registers --print-record, so the host's try-block registers all four."""
    probe = (
        "import os\n"
        "def test_host_options(request):\n"
        "    print('host-options', request.config.getoption('--run-full'),"
        " request.config.getoption('--print-record'), request.config.getoption('--quick-run'),"
        " os.environ.get('RUN_FULL_TEST'))\n"
    )
    run = R.run_suite(
        ("-s", "--run-full", "--print-record"),
        target="test_probe.py",
        extra_files=(("test_probe.py", probe),),
    )
    assert run.rc == 0, run.output
    assert "host-options True True False 1" in run.output
    # and the entry point is loaded in that child (it prints in the plugins line)
    assert "cutile-workbench" in run.output


def test_registering_print_record_in_a_plugin_would_break_run_full():
    """Why the rule exists: a plugin that adds --print-record first makes the host's try-block stop
    before --run-full, which pytest then rejects as unrecognized. (Synthetic rogue plugin.)"""
    rogue = "def pytest_addoption(parser):\n    parser.addoption('--print-record', action='store_true')\n"
    run = R.run_suite(("-q", "-p", "rogue_plugin", "--run-full"), extra_files=(("rogue_plugin.py", rogue),))
    assert run.rc == 4
    assert "unrecognized arguments: --run-full" in run.output


def test_without_a_flag_the_plugin_is_inert():
    run = R.run_suite(("-sv", "--run-full"))
    assert run.rc == 1
    assert MARKER not in run.output
    assert not list(run.workdir.glob("*.jsonl"))


def test_own_flag_works_without_host_conftest():
    """No host conftest: no --print-record exists, ids keep the raw 'cutile-rs' spelling."""
    run = R.run_suite(
        ("-v", "--workbench-print-record"),
        host_conftest=False,
        extra_files=(("conftest.py", "import pytest\n@pytest.fixture\ndef arch():\n    return 'sm90'\n"),),
    )
    assert _lines_with(run.output, MARKER) == 9
    log = parse_perf_log(run.workdir / "raw.log", text=run.output)
    rs = [r for r in log.records if r.framework == "cutile-rs"]
    assert {r.params for r in rs} == {
        "static_persistent-262144-1024-torch.float16",
        "static_persistent-65536-8192-torch.float16",
        "static_persistent-4096-1024-torch.bfloat16",
        "static_persistent-16384-2048-torch.bfloat16",
    }
    assert all("[cutile-rs-" in r.nodeid for r in rs)


def test_print_record_without_host_option_is_a_usage_error():
    run = R.run_suite(("--print-record",), host_conftest=False)
    assert run.rc == 4  # pytest: unrecognized arguments; we never registered --print-record
    assert "--print-record" in run.output


@pytest.mark.parametrize("mode", ["-v", "-sv"])
def test_real_validator_passes_on_clean_runs(mode):
    run = R.run_suite((mode, "--print-record", *PASSING_ONLY))
    assert run.rc == 0, run.output
    result = R.validate_perf_log(run.workdir / "raw.log")
    if result is None:
        pytest.skip("TileGym snapshot absent: real validate_perf_log.sh not available")
    rc, out = result
    assert rc == 0, out
    assert "perf_sections=8 passed=8 failed=0 skipped=4" in out
    assert "PASS: raw.log: 8 perf records for 8 passed tests" in out


def test_real_validator_on_a_failing_run_reports_failed():
    run = R.run_suite(("-sv", "--print-record", "--run-full"), events=True)
    result = R.validate_perf_log(run.workdir / "raw.log")
    if result is None:
        pytest.skip("TileGym snapshot absent")
    rc, out = result
    # the block adds no counted line: 9 blocks, 9 PASSED lines; the 2 FAILED lines are pytest's
    assert "perf_sections=9 passed=9 failed=2 skipped=5" in out
    assert rc == 1


def test_quiet_mode_blocks_stay_on_their_own_lines():
    run = R.run_suite(("-q", "--print-record", *PASSING_ONLY))
    for ln in run.output.splitlines():
        if MARKER in ln:
            assert ln.startswith("-" * 20), ln  # never glued to progress letters ("ss.")
    assert _lines_with(run.output, MARKER) == 8
    log = parse_perf_log("q.log", text=run.output)
    assert len(log.records) == 8 and not log.notes


def test_event_stream_contents():
    run = R.run_suite(("-sv", "--print-record", "--run-full"), events=True)
    evs = read_events(run.events)
    kinds = [e.event for e in evs]
    assert kinds[0] == "session_start" and kinds[2] == "collected" and kinds[-1] == "session_finish"
    assert kinds[1] == kinds[-2] == "provenance"  # issue #15: run conditions at start and finish
    assert evs[0]["pid"] > 0 and evs[0]["rootdir"] == str(run.workdir)
    assert len(evs[2]["nodeids"]) == 15
    assert kinds.count("test_start") == 15 and kinds.count("test_finish") == 15
    outcomes = [e["outcome"] for e in evs if e.event == "test_finish"]
    assert outcomes.count("passed") == 9 and outcomes.count("skipped") == 5 and outcomes.count("failed") == 1
    records = [e for e in evs if e.event == "record"]
    assert len(records) == 9
    tri = next(
        e for e in records if e["nodeid"].endswith("[triton-static_persistent-262144-1024-torch.float16]")
    )
    assert tri["framework"] == "triton" and tri["params"] == "static_persistent-262144-1024-torch.float16"
    assert tri["benchmark"]["triton"]["forward"]["kernel_times"][0]["self_time_us"] == 353.568
    failed = [e for e in evs if e.event == "test_failed"]
    assert len(failed) == 1 and failed[0]["when"] == "call"
    assert "failed to compile Tile IR program" in failed[0]["longrepr"]
    assert evs[-1]["exitstatus"] == 1
    # order per test: start < (record|failed) < finish; timestamps never go backwards
    assert all(a.ts <= b.ts for a, b in itertools.pairwise(evs))
    for e in records:
        idx = evs.index(e)
        starts = [i for i, x in enumerate(evs) if x.event == "test_start" and x["nodeid"] == e["nodeid"]]
        finishes = [i for i, x in enumerate(evs) if x.event == "test_finish" and x["nodeid"] == e["nodeid"]]
        assert starts[0] < idx < finishes[0]


def test_emit_from_test_code_lands_in_the_same_stream():
    code = (
        "from cutile_workbench.artifacts.events import emit\n"
        "def test_emits(request):\n"
        "    assert emit(None, 'progress', nodeid=request.node.nodeid, done=1, total=2)\n"
        "    assert emit(request.config, 'launches', nodeid=request.node.nodeid, backend='triton',"
        " params='4096-1024', calls=[{'index': 0, 'launches': 1}])\n"
    )
    run = R.run_suite(("-q",), events=True, target="test_emit.py", extra_files=(("test_emit.py", code),))
    assert run.rc == 0, run.output
    evs = read_events(run.events)
    kinds = [e.event for e in evs]
    assert (
        kinds.index("test_start")
        < kinds.index("progress")
        < kinds.index("launches")
        < kinds.index("test_finish")
    )
    assert next(e for e in evs if e.event == "launches")["calls"] == [{"index": 0, "launches": 1}]


def test_emit_is_a_noop_without_stream():
    from cutile_workbench.artifacts.events import emit

    assert emit(None, "progress", done=1) is False


def test_double_registration_entry_point_and_dash_p():
    """`-p cutile_workbench.run.plugins.perflog` (the runner's way) plus the installed entry point."""
    run = R.run_suite(("-v", "-p", "cutile_workbench.run.plugins.perflog", "--print-record", *PASSING_ONLY))
    assert run.rc == 0, run.output
    assert _lines_with(run.output, MARKER) == 8


def test_pytest_plugins_in_conftest_after_entry_point():
    conftest = (
        Path(R.HERE) / "host_conftest.py"
    ).read_text() + '\npytest_plugins = ["cutile_workbench.run.plugins.perflog"]\n'
    run = R.run_suite(
        ("-v", "--print-record", *PASSING_ONLY), host_conftest=False, extra_files=(("conftest.py", conftest),)
    )
    assert run.rc == 0, run.output
    assert _lines_with(run.output, MARKER) == 8


def test_harness_flag_without_swap_module_is_a_usage_error():
    # Synthetic: hide the GPU engineer's module so its import fails the way a missing one would.
    blocker = "import sys\nsys.modules['cutile_workbench.run.capture.tilegym_swap'] = None\n"
    conftest = (Path(R.HERE) / "host_conftest.py").read_text() + "\n" + blocker
    run = R.run_suite(
        ("-q", "--workbench-harness"), host_conftest=False, extra_files=(("conftest.py", conftest),)
    )
    assert run.rc == 4, run.output
    assert "--workbench-harness needs cutile_workbench.run.capture.tilegym_swap" in run.output


def test_non_record_benchmark_property_gets_a_note_not_a_block():
    code = (
        "def test_perf_odd(record_property):\n"
        "    record_property('benchmark', 'not a dict')\n"
        "def test_perf_plain():\n"
        "    pass\n"
    )
    run = R.run_suite(
        ("-v", "--workbench-print-record"), target="test_odd.py", extra_files=(("test_odd.py", code),)
    )
    assert run.rc == 0
    assert MARKER not in run.output
    assert "workbench: the 'benchmark' property of test_odd.py::test_perf_odd is not" in run.output


def test_teardown_output_with_s_does_not_break_the_block():
    code = (
        "import pytest\n"
        "@pytest.fixture\n"
        "def noisy():\n"
        "    yield\n"
        "    print('teardown: released 256 MB L2 flush buffer', end='')\n"
        "def test_perf_td(noisy, record_property):\n"
        "    record_property('benchmark', {'triton': {'forward': {'median': 0.04416, 'nrep': 50}}})\n"
    )  # 0.04416 ms: triton 16384x2048 bf16 (docs/gpu.md §4)
    run = R.run_suite(
        ("-sv", "--workbench-print-record"), target="test_td.py", extra_files=(("test_td.py", code),)
    )
    assert run.rc == 0, run.output
    log = parse_perf_log("td.log", text=run.output, strict=True)
    assert [r.forward.median_ms for r in log.records] == [0.04416]
    assert "-" * 66 + "\n" in run.output  # the terminator stands on its own line
