"""printer: block lines for records the fixture suite does not cover (pure functions)."""

from __future__ import annotations

import json

from cutile_workbench.artifacts.perflog.printer import (
    MARKER,
    format_block,
    launches_per_iter,
    record_params,
    select_framework,
)

# The flawed hot-path wrapper of docs/gpu.md §4: 3 launches per call (fill, add, rms_norm) and
# 150.9 us at 16384x2048. Kernel names and the split of the 150.9 us are synthetic.
HOTPATH = {
    "median": 0.1509,
    "kernel_times": [
        {"name": "rms_norm_kernel", "self_time_us": 82.8, "total_time_us": 82.8, "count": 1},
        {"name": "add_kernel", "self_time_us": 40.0, "total_time_us": 40.0, "count": 1},
        {"name": "fill_kernel", "self_time_us": 28.1, "total_time_us": 28.1, "count": 1},
    ],
    "launches_per_call": 99,  # ignored: kernel_times wins (TileGym's definition)
}


def test_launches_per_iter_sums_kernel_time_counts():
    assert launches_per_iter(HOTPATH) == 3
    assert launches_per_iter({"median": 1.0, "launches_per_call": 2}) == 2
    assert launches_per_iter({"median": 1.0}) is None
    assert launches_per_iter({"kernel_times": [{"count": "x"}], "launches_per_call": 4}) == 4


def test_forward_and_backward_phase_lines():
    bench = {"cutile_hotpath": {"forward": HOTPATH, "backward": {"median": 0.3, "nrep": 10}}}
    lines = format_block("p/test_rms_norm.py::test_perf[cutile_hotpath-16384-2048]", bench)
    assert lines[3] == "params: 16384-2048"
    assert lines[5].startswith("forward: median_ms=0.150900 mean_ms=NA") and "launches_per_iter=3" in lines[5]
    assert "top_kernel=NA" in lines[5]
    assert lines[6] == (
        "backward: median_ms=0.300000 mean_ms=NA min_ms=NA max_ms=NA rel_std_pct=NA "
        "nrep=10 launches_per_iter=NA top_kernel=NA"
    )
    assert json.loads(lines[7].removeprefix("record_json: "))["benchmark"] == bench


def test_framework_selection_and_params():
    bench = {"triton": {"forward": {"median": 1.0}}, "cutile-rs": {"forward": {"median": 2.0}}}
    assert select_framework("t.py::test_perf[cutile_rs-1-2]", bench) == "cutile-rs"
    assert select_framework("t.py::test_perf[1-2]", bench) == "triton"
    assert record_params("t.py::test_perf[cutile-rs-1-2]", "cutile-rs") == "1-2"
    assert record_params("t.py::test_perf[cutile-1-2]", "cutile-rs") == "1-2"  # known token cutile
    assert record_params("t.py::test_perf", "triton") == ""


def test_line_breaks_and_markers_cannot_split_or_add_blocks():
    nodeid = "t.py::test_perf[triton-a\nb]"
    lines = format_block(nodeid, {"triton": {"forward": {"median": 1.0, "kernel_name": f"x\n{MARKER}"}}})
    assert all("\n" not in ln for ln in lines)
    assert sum(MARKER in ln for ln in lines) == 1
    assert json.loads(lines[6].removeprefix("record_json: "))["nodeid"] == nodeid
