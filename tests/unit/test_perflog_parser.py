"""parse_perf_log on real child-pytest logs of the fixture suite, the real H200 excerpt, and
labelled synthetic edge cases; plus property tests (never anything but WorkbenchError)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from perflog_helpers import FIXTURES, load_suite_runner

from cutile_workbench.artifacts.events import read_events
from cutile_workbench.artifacts.perflog.parser import parse_perf_log
from cutile_workbench.artifacts.perflog.printer import MARKER, format_block
from cutile_workbench.errors import InputError, WorkbenchError

R = load_suite_runner()
FULL = ("-sv", "--print-record", "--run-full")
RS = "tests/ops/test_rms_norm.py::Test_RMSNorm::test_perf"
# Real H200 record (contract §3.3 junit excerpt), used to build synthetic blocks below.
TRITON_STATS = {
    "mean": 0.34924473333333333,
    "std": 0.0023958,
    "rel_std": 0.68599,
    "median": 0.34895899999999985,
    "min": 0.34445000000000003,
    "max": 0.35775899999999977,
    "nrep": 120,
    "peak_mem_mb": 1268,
    "kernel_name": "_rms_norm_kernel_static_persistent",
    "kernel_times": [
        {
            "name": "_rms_norm_kernel_static_persistent",
            "self_time_us": 353.568,
            "total_time_us": 353.568,
            "count": 1,
        }
    ],
}


def _block(nodeid: str, framework: str, stats: dict) -> str:
    return "\n".join(format_block(nodeid, {framework: {"forward": stats}})) + "\n"


def _suite_log():
    run = R.run_suite(FULL, events=True)
    return run, parse_perf_log(run.workdir / "raw.log")


# --------------------------------------------------------------------------- real logs


def test_round_trip_printed_blocks_parse_back_to_the_recorded_numbers():
    run, log = _suite_log()
    assert not log.notes and not log.truncated
    recorded = {e["nodeid"]: e for e in read_events(run.events) if e.event == "record"}
    assert len(log.records) == len(recorded) == 9
    for rec in log.records:
        ev = recorded[rec.nodeid]
        assert rec.framework == ev["framework"] and rec.params == ev["params"]
        assert rec.raw == ev["benchmark"][rec.framework]  # exact numbers, not reformatted ones
        fwd = ev["benchmark"][rec.framework]["forward"]
        assert rec.forward is not None and rec.forward.median_ms == fwd["median"]
        assert rec.func_key == "test_rms_norm.py::Test_RMSNorm::test_perf"
        assert rec.source is not None and rec.source.line > 0
    tri = next(
        r for r in log.records if r.framework == "triton" and r.params.endswith("262144-1024-torch.float16")
    )
    f = tri.forward
    assert f is not None
    assert (f.mean_ms, f.std_ms, f.rel_std_pct, f.min_ms, f.max_ms, f.nrep, f.peak_mem_mb) == (
        0.34924473333333333,
        0.0023958,
        0.68599,
        0.34445000000000003,
        0.35775899999999977,
        120,
        1268,
    )
    assert f.kernel_times[0].self_time_us == 353.568 and f.launches_per_iter == 1
    rs = next(r for r in log.records if r.framework == "cutile-rs" and "16384-2048" in r.params)
    assert rs.forward is not None and rs.forward.kernel_times == () and rs.forward.launches_per_iter == 1
    assert rs.forward.median_ms == 0.08278  # docs/gpu.md §4: cuTile 82.78 us at 16384x2048 bf16


def test_outcomes_from_a_real_sv_log():
    _run, log = _suite_log()
    by = {(o.outcome, o.backend_token, o.params) for o in log.outcomes}
    assert ("failed", "cutile_rs", "static_persistent-8192-8192-torch.bfloat16") in by
    assert sum(o.outcome == "skipped" for o in log.outcomes) == 5
    assert all(o.backend_token == "cutile" for o in log.outcomes if o.outcome == "skipped")
    assert len(log.outcomes) == 6  # passed tests with records are records, not outcomes


@pytest.mark.parametrize(
    "args",
    [
        ("-v", "--print-record"),
        ("-q", "--print-record"),
        ("-sv", "--print-record", "--color=yes"),
        ("--print-record",),
    ],
)
def test_every_output_mode_parses_to_the_same_rows(args):
    run = R.run_suite(args)
    log = parse_perf_log(run.workdir / "raw.log")
    _run, ref = _suite_log()
    assert {(r.framework, r.row_key, r.forward.median_ms) for r in log.records} == {
        (r.framework, r.row_key, r.forward.median_ms) for r in ref.records
    }
    if "--color=yes" in args:
        assert "\x1b[" in run.output  # the colours really were there


def test_crlf_and_ansi_are_tolerated():
    run, ref = _suite_log()
    text = run.output.replace("\n", "\r\n").replace(MARKER, f"\x1b[32m{MARKER}\x1b[0m")
    log = parse_perf_log("crlf.log", text=text)
    assert [r.raw for r in log.records] == [r.raw for r in ref.records]


def test_repr_line_fallback_without_record_json():
    run, ref = _suite_log()
    text = "\n".join(ln for ln in run.output.splitlines() if not ln.startswith("record_json: "))
    log = parse_perf_log("norecordjson.log", text=text)
    assert [(r.nodeid, r.framework, r.raw) for r in log.records] == [
        (r.nodeid, r.framework, r.raw) for r in ref.records
    ]


def test_real_h200_excerpt_without_printer():
    """Contract §3.1: public TileGym prints no blocks; outcomes are still read, lone PASSED too."""
    path = FIXTURES / "logs" / "h200_rms_norm_contract_3_1.txt"
    log = parse_perf_log(path, strict=True)  # test lines exist: not garbage, just no records
    assert log.records == []
    got = {(o.backend_token, o.outcome) for o in log.outcomes}
    assert got == {("cutile", "skipped"), ("triton", "passed_no_record"), ("pytorch", "passed_no_record")}
    assert all(o.params == "static_persistent-262144-1024-torch.float16" for o in log.outcomes)


# --------------------------------------------------------------------------- synthetic edge cases


def test_truncated_last_block_flagged_and_strict_refuses():
    # synthetic: a real log cut inside its last block (a child killed mid-print)
    run, ref = _suite_log()
    lines = run.output.splitlines()
    last = max(i for i, ln in enumerate(lines) if MARKER in ln)
    cut = "\n".join(lines[: last + 3])
    log = parse_perf_log("cut.log", text=cut)
    assert log.truncated
    assert any(n.startswith(f"cut.log:{last + 1}:") for n in log.notes)
    assert len(log.records) == len(ref.records) - 1
    with pytest.raises(InputError) as ei:
        parse_perf_log("cut.log", text=cut, strict=True)
    assert ei.value.line == last + 1 and "truncated" not in (ei.value.key or "")


def test_truncated_block_with_whole_record_json_keeps_the_record():
    # synthetic: the terminator line is missing, record_json arrived whole
    text = _block(f"{RS}[triton-static_persistent-262144-1024-torch.float16]", "triton", TRITON_STATS)
    text = "\n".join(text.splitlines()[:-1])
    log = parse_perf_log("t.log", text=text)
    assert log.truncated and len(log.records) == 1


def test_duplicate_config_strict_and_lenient():
    # synthetic: the same block twice (same framework, same params)
    blk = _block(f"{RS}[triton-static_persistent-262144-1024-torch.float16]", "triton", TRITON_STATS)
    text = blk + blk
    with pytest.raises(InputError) as ei:
        parse_perf_log("dup.log", text=text, strict=True)
    assert ei.value.line == 9 and "static_persistent-262144-1024-torch.float16" in (ei.value.key or "")
    log = parse_perf_log("dup.log", text=text)
    assert len(log.records) == 1 and "duplicate config" in log.notes[0]


def test_same_params_different_frameworks_are_not_duplicates():
    # a candidate and a baseline in one log: both kept (consumers select by framework)
    text = _block(
        f"{RS}[triton-static_persistent-262144-1024-torch.float16]", "triton", TRITON_STATS
    ) + _block(
        f"{RS}[cutile_rs-static_persistent-262144-1024-torch.float16]", "cutile-rs", {"median": 0.2781}
    )
    log = parse_perf_log("mixed.log", text=text, strict=True)
    assert {r.framework for r in log.records} == {"triton", "cutile-rs"}
    assert len({r.row_key for r in log.records}) == 1


@pytest.mark.parametrize("median", [float("nan"), float("inf"), -0.2781, 0.0, 0])
def test_bad_medians(median):
    # synthetic: a median no timer can produce
    nodeid = f"{RS}[cutile_rs-static_persistent-262144-1024-torch.float16]"
    text = _block(nodeid, "cutile-rs", {"median": median, "nrep": 50})
    with pytest.raises(InputError) as ei:
        parse_perf_log("bad.log", text=text, strict=True)
    assert ei.value.key and ei.value.key.endswith("forward.median") and ei.value.line == 7
    log = parse_perf_log("bad.log", text=text)
    assert log.records == []
    assert [o.outcome for o in log.outcomes] == ["passed_no_record"]
    assert "forward" in log.outcomes[0].reason
    # the repr fallback reads repr's bare nan/inf and refuses them the same way
    no_json = "\n".join(ln for ln in text.splitlines() if not ln.startswith("record_json"))
    with pytest.raises(InputError) as ei:
        parse_perf_log("bad.log", text=no_json, strict=True)
    assert ei.value.key and ei.value.key.endswith("forward.median")


@pytest.mark.parametrize(
    ("field", "value", "key"),
    [
        ("mean", "0.35", "forward.mean"),
        ("nrep", 12.5, "forward.nrep"),
        ("nrep", True, "forward.nrep"),
        ("kernel_times", "one", "forward.kernel_times"),
        (
            "kernel_times",
            [{"name": "k", "self_time_us": "1", "total_time_us": 1, "count": 1}],
            "forward.kernel_times[0]",
        ),
        ("kernel_name", 7, "forward.kernel_name"),
        ("samples", [0.1, "x"], "forward.samples"),
        ("median", "0.2781", "forward.median"),
    ],
)
def test_wrong_types_strict_name_the_key(field, value, key):
    # synthetic: one field of a real record given the wrong type
    stats = dict(TRITON_STATS, **{field: value})
    text = _block(f"{RS}[triton-static_persistent-262144-1024-torch.float16]", "triton", stats)
    with pytest.raises(InputError) as ei:
        parse_perf_log("types.log", text=text, strict=True)
    assert (ei.value.key or "").endswith(key), ei.value
    lenient = parse_perf_log("types.log", text=text)
    assert lenient.notes


def test_malformed_record_json_strict():
    text = _block(f"{RS}[triton-static_persistent-262144-1024-torch.float16]", "triton", TRITON_STATS)
    text = text.replace('record_json: {"benchmark"', 'record_json: {"benchmark" oops')
    with pytest.raises(InputError) as ei:
        parse_perf_log("j.log", text=text, strict=True)
    assert ei.value.key == "record_json" and ei.value.line == 7
    # lenient: the repr line still carries the numbers
    log = parse_perf_log("j.log", text=text)
    assert log.records[0].forward.median_ms == TRITON_STATS["median"]


def test_samples_and_launches_per_call_fill_phase_stats():
    # synthetic record in the workbench harness's shape (samples + launches_per_call), numbers
    # around the real 7.01 us cuTile median of docs/gpu.md §4
    stats = {"median": 0.00701, "samples": [0.00699, 0.00701, 0.00705], "launches_per_call": 1}
    text = _block(f"{RS}[cutile_rs-static_persistent-4096-1024-torch.bfloat16]", "cutile-rs", stats)
    (rec,) = parse_perf_log("s.log", text=text, strict=True).records
    assert rec.forward.samples_ms == (0.00699, 0.00701, 0.00705) and rec.forward.launches_per_call == 1


def test_empty_and_garbage_inputs(tmp_path: Path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(InputError) as ei:
        parse_perf_log(empty, strict=True)
    assert "empty" in ei.value.message and ei.value.path == str(empty)
    assert parse_perf_log(empty).notes
    garbage = tmp_path / "garbage.txt"
    garbage.write_bytes(b"\x00\x01\xff binary \x89PNG\r\n\x1a\n" * 50)
    with pytest.raises(InputError):
        parse_perf_log(garbage, strict=True)
    lenient = parse_perf_log(garbage)
    assert lenient.records == [] and lenient.notes
    with pytest.raises(InputError):
        parse_perf_log(tmp_path / "missing.txt")


def test_huge_line_is_skipped_with_a_note():
    # synthetic: a runaway output line (> 4 MiB) between two real blocks
    blk = _block(f"{RS}[triton-static_persistent-262144-1024-torch.float16]", "triton", TRITON_STATS)
    text = "x" * (5 * 1024 * 1024) + "\n" + blk
    log = parse_perf_log("huge.log", text=text)
    assert len(log.records) == 1 and "huge.log:1:" in log.notes[0]


def test_counted_words_in_nodeid_and_kernel_name_round_trip():
    # synthetic: a user named things after the words the validator counts
    nodeid = "t.py::T::test_perf[cutile_rs-PASSED-FAILED-SKIPPED-Performance Test Results]"
    stats = dict(TRITON_STATS, kernel_name="k_FAILED_PASSED", median=0.2781)
    lines = format_block(nodeid, {"cutile-rs": {"forward": stats}})
    assert sum(MARKER in ln for ln in lines) == 1
    assert not any(w in ln for ln in lines[1:] for w in ("PASSED", "FAILED", "SKIPPED", MARKER))
    (rec,) = parse_perf_log("w.log", text="\n".join(lines)).records
    assert rec.nodeid == nodeid and rec.params == "PASSED-FAILED-SKIPPED-Performance Test Results"
    assert rec.forward.kernel_name == "k_FAILED_PASSED"
    # and through the repr fallback
    no_json = "\n".join(ln for ln in lines if not ln.startswith("record_json"))
    (rec2,) = parse_perf_log("w.log", text=no_json).records
    assert rec2.nodeid == nodeid and rec2.forward.kernel_name == "k_FAILED_PASSED"


def test_internal_printer_latency_sample_after_passed():
    # The sibling skill's "--print-record latency sample" shape (contract §3.2), no block around it;
    # values from that sample (3.79/3.78 ms, nrep 13, 913 MB; elided digits filled in: synthetic).
    text = (
        f"{RS}[cutile-static_persistent-262144-1024-torch.float16] PASSED\n"
        "Cutile: {'forward': {'mean': 3.79, 'std': 0.01, 'rel_std': 0.3, 'median': 3.78, "
        "'min': 3.77, 'max': 3.81, 'nrep': 13, 'peak_mem_mb': 913}} ms\n"
    )
    (rec,) = parse_perf_log("l.log", text=text, strict=True).records
    assert rec.framework == "cutile" and rec.forward.median_ms == 3.78 and rec.forward.nrep == 13


def test_extra_tokens_for_profile_backends():
    nodeid = "profiles/rms_norm/test_rms_norm.py::test_perf[cutile_hotpath-16384-2048]"
    text = _block(
        nodeid, "cutile_hotpath", {"median": 0.1509, "launches_per_call": 3}
    )  # gpu.md §4 hot-path wrapper
    (rec,) = parse_perf_log("p.log", text=text).records
    assert rec.params == "16384-2048" and rec.forward.launches_per_iter == 3
    outcome_log = parse_perf_log("p.log", text=f"{nodeid} FAILED\n", extra_tokens=("cutile_hotpath",))
    (o,) = outcome_log.outcomes
    assert o.backend_token == "cutile_hotpath" and o.params == "16384-2048"


def test_xdist_and_summary_status_lines():
    text = (
        f"[gw0] [ 50%] PASSED {RS}[triton-a-1]\n"
        f"[gw1] [100%] FAILED {RS}[cutile_rs-a-1]\n"
        "=========================== short test summary info ============================\n"
        f"FAILED {RS}[cutile_rs-a-1] - RuntimeError: Return code 5\n"
        f"ERROR {RS}[cutile_rs-a-2] - fixture 'arch' not found\n"
    )
    log = parse_perf_log("x.log", text=text)
    got = {(o.params, o.outcome, o.reason) for o in log.outcomes}
    assert got == {
        ("a-1", "passed_no_record", "passed without a 'Performance Test Results' block"),
        ("a-1", "failed", "RuntimeError: Return code 5"),
        ("a-2", "error", "fixture 'arch' not found"),
    }


# --------------------------------------------------------------------------- properties

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


@hypothesis.given(st.text(max_size=400), st.booleans())
def test_arbitrary_text_only_raises_workbench_errors(text, strict):
    try:
        log = parse_perf_log("fuzz.log", text=text, strict=strict)
    except WorkbenchError:
        return
    for rec in log.records:
        assert rec.forward is None or (math.isfinite(rec.forward.median_ms) and rec.forward.median_ms > 0)


@hypothesis.given(st.data())
def test_mutated_real_logs_only_raise_workbench_errors(data):
    run = R.run_suite(FULL, events=True)
    lines = run.output.splitlines()
    n = len(lines)
    start = data.draw(st.integers(0, n - 1))
    stop = data.draw(st.integers(start, n))
    junk = data.draw(st.text(max_size=80))
    mutated = "\n".join([*lines[:start], junk, *lines[stop:]])
    for strict in (False, True):
        try:
            parse_perf_log("mut.log", text=mutated, strict=strict)
        except WorkbenchError:
            pass


def test_bad_backward_phase_keeps_the_forward_numbers():
    # synthetic: a valid forward phase (real triton numbers) with a NaN backward median
    nodeid = f"{RS}[triton-static_persistent-262144-1024-torch.float16]"
    text = (
        "\n".join(
            format_block(nodeid, {"triton": {"forward": TRITON_STATS, "backward": {"median": float("nan")}}})
        )
        + "\n"
    )
    (rec,) = parse_perf_log("bw.log", text=text).records
    assert rec.forward.median_ms == TRITON_STATS["median"] and "backward" not in rec.phases
    with pytest.raises(InputError) as ei:
        parse_perf_log("bw.log", text=text, strict=True)
    assert ei.value.key.endswith("backward.median")


def test_the_parse_memo_is_bounded_to_eight_logs_oldest_evicted_first():
    """The per-process parse memo keeps the eight most recent logs (a process looks at one kernel's
    candidate log, its variants and baselines): a ninth distinct log evicts the oldest, so memory
    stays bounded however many logs a long-lived process (the TUI) opens."""
    from cutile_workbench.artifacts.perflog import parser

    parser._MEMO.clear()
    texts = [_block(f"tests/ops/test_x.py::test_perf[c{i}]", "cutile", TRITON_STATS) for i in range(9)]
    for i, text in enumerate(texts):
        parse_perf_log(f"/virtual/log{i}.log", text=text)
    paths = [key[0] for key in parser._MEMO]
    assert len(paths) == 8
    assert paths == [f"/virtual/log{i}.log" for i in range(1, 9)]
    parser._MEMO.clear()
