"""launches_io: round trip, strict typed rejection of malformed files, events → sets, Chrome trace.

Launch values here are SYNTHETIC edge cases; the real recorded H200 files are replayed in
tests/unit/test_profiles_sessions.py.
"""

from __future__ import annotations

import gzip
import json

import pytest

from cutile_workbench.artifacts import launches_io
from cutile_workbench.errors import InputError
from cutile_workbench.model import CallCapture, Launch, LaunchSet


def sample_sets() -> list[LaunchSet]:
    k = Launch(
        kind="kernel",
        name="_Z4fillv",
        start_ns=1_000,
        end_ns=4_000,
        correlation_id=7,
        demangled="fill()",
        grid=(132, 1, 1),
        block=(256, 1, 1),
        registers_per_thread=40,
        static_smem=1024,
        dynamic_smem=0,
        stream_id=7,
        api_name="cudaLaunchKernel_v7000",
    )
    m = Launch(
        kind="memcpy",
        name="Memcpy DtoD",
        start_ns=5_000,
        end_ns=5_500,
        correlation_id=8,
        bytes=4096,
        copy_kind="DtoD",
        stream_id=13,
    )
    calls = [CallCapture(index=0, backend="cutile", host_start_ns=0, host_end_ns=9_000, launches=(k, m))]
    return [
        LaunchSet(nodeid="p::T::test_perf[cutile-1-2]", backend="cutile", params="1-2", calls=calls),
        LaunchSet(
            nodeid="p::T::test_perf[triton-1-2]", backend="triton", params="1-2", calls=[], source="events"
        ),
    ]


def test_round_trip_gzip_and_plain(tmp_path):
    for name in ("l.json.gz", "l.json"):
        path = tmp_path / name
        launches_io.save_launch_sets(path, sample_sets())
        assert launches_io.load_launch_sets(path) == sample_sets()
    assert (tmp_path / "l.json.gz").read_bytes()[:2] == b"\x1f\x8b"


@pytest.mark.parametrize(
    "mutate,key",
    [
        (lambda d: d.update(version=2), "version"),
        (lambda d: d.pop("sets"), "sets"),
        (lambda d: d["sets"][0].pop("backend"), "sets[0].backend"),
        (lambda d: d["sets"][0].update(source="nsys"), "sets[0].source"),
        (
            lambda d: d["sets"][0]["calls"][0]["launches"][0].update(start_ns="1"),
            "sets[0].calls[0].launches[0].start_ns",
        ),
        (
            lambda d: d["sets"][0]["calls"][0]["launches"][0].update(end_ns=True),
            "sets[0].calls[0].launches[0].end_ns",
        ),
        (
            lambda d: d["sets"][0]["calls"][0]["launches"][0].update(end_ns=10),
            "sets[0].calls[0].launches[0].end_ns",
        ),
        (
            lambda d: d["sets"][0]["calls"][0]["launches"][0].update(kind="graph"),
            "sets[0].calls[0].launches[0].kind",
        ),
        (
            lambda d: d["sets"][0]["calls"][0]["launches"][0].update(grid=[1, 2]),
            "sets[0].calls[0].launches[0].grid",
        ),
        (lambda d: d["sets"][0]["calls"][0].update(launches={}), "sets[0].calls[0].launches"),
        (lambda d: d["sets"][0]["calls"].append(3), "sets[0].calls[1]"),
    ],
)
def test_malformed_documents_name_the_key(tmp_path, mutate, key):
    doc = {"version": 1, "sets": [launches_io.set_to_dict(s) for s in sample_sets()]}
    mutate(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as err:
        launches_io.load_launch_sets(path)
    assert err.value.key == key and str(path) in str(err.value)


@pytest.mark.parametrize(
    "payload,needle",
    [
        (b"\x1f\x8b\x08\x00garbage", "corrupt gzip"),
        (b"{not json", "invalid JSON"),
        (b"\xff\xfe", "UTF-8"),
        (b"[" * 100_000, "nested"),
        (b"[]", "expected an object"),
    ],
)
def test_garbage_files_raise_input_error(tmp_path, payload, needle):
    path = tmp_path / "g.json"
    path.write_bytes(payload)
    with pytest.raises(InputError, match=needle):
        launches_io.load_launch_sets(path)


def test_missing_file_is_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        launches_io.load_launch_sets(tmp_path / "nope.json.gz")


def test_sets_from_event_dicts_and_objects():
    from cutile_workbench.artifacts.events import Event

    s = sample_sets()[0]
    d = launches_io.set_to_dict(s)
    lines = [{"event": "record", "ts": 1.0}, {"event": "launches", "ts": 2.0, **d}]
    assert launches_io.launch_sets_from_events(lines) == [s]
    ev = Event(event="launches", ts=2.0, fields=d, line=5)
    assert launches_io.launch_sets_from_events([ev]) == [s]
    bad = Event(event="launches", ts=2.0, fields={**d, "calls": "x"}, line=9)
    with pytest.raises(InputError, match="line 9"):
        launches_io.launch_sets_from_events([bad])


def test_chrome_trace_has_process_per_backend_lane_per_stream_and_args():
    trace = launches_io.to_chrome_trace(sample_sets())
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert {e["args"]["name"] for e in meta if e["name"] == "process_name"} == {"cutile", "triton"}
    assert {e["args"]["name"] for e in meta if e["name"] == "thread_name"} == {"stream 7", "stream 13"}
    kernel = next(e for e in spans if e["cat"] == "kernel")
    assert kernel["name"] == "fill()" and kernel["ts"] == 0.0 and kernel["dur"] == 3.0
    assert kernel["args"]["grid"] == [132, 1, 1] and kernel["args"]["registers per thread"] == 40
    assert kernel["args"]["shared memory"] == 1024
    assert next(e for e in spans if e["cat"] == "memcpy")["args"]["bytes"] == 4096
    json.dumps(trace)  # serialisable as-is


def test_side_file_appends_per_process(tmp_path):
    for s in sample_sets():
        target = launches_io.append_side_file(tmp_path, s)
    assert [s.backend for s in launches_io.load_launch_sets(target)] == ["cutile", "triton"]
    assert gzip.decompress(target.read_bytes()).startswith(b'{"version":1')
