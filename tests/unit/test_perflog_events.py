"""cutile_workbench.artifacts.events: JSON-lines schema, writer and reader (no pytest session needed)."""

from __future__ import annotations

import json
import multiprocessing
import threading
from pathlib import Path

import pytest

from cutile_workbench.artifacts import events
from cutile_workbench.artifacts.events import EVENT_KINDS, EventWriter, read_events, write_event
from cutile_workbench.errors import InputError

# Real record (contract §3.3 junit excerpt, triton rms_norm 262144x1024 fp16 on the H200).
TRITON_RECORD = {
    "triton": {
        "forward": {
            "median": 0.34895899999999985,
            "nrep": 120,
            "kernel_times": [
                {
                    "name": "_rms_norm_kernel_static_persistent",
                    "self_time_us": 353.568,
                    "total_time_us": 353.568,
                    "count": 1,
                }
            ],
        }
    }
}
NODEID = (
    "tests/ops/test_rms_norm.py::Test_RMSNorm::test_perf[triton-static_persistent-262144-1024-torch.float16]"
)


def test_round_trip_every_kind(tmp_path: Path):
    path = tmp_path / "ev.jsonl"
    w = EventWriter(path)
    w.emit("session_start", pid=1234, argv=["pytest"], rootdir="/x")
    w.emit("collected", nodeids=[NODEID])
    w.emit("test_start", nodeid=NODEID)
    w.emit(
        "record",
        nodeid=NODEID,
        framework="triton",
        params="static_persistent-262144-1024-torch.float16",
        benchmark=TRITON_RECORD,
    )
    w.emit("launches", nodeid=NODEID, backend="triton", params="p", calls=[])
    w.emit("progress", done=1, total=1)
    w.emit("test_failed", nodeid=NODEID, when="call", longrepr="x" * 20000 + "E RuntimeError: Return code 5")
    w.emit("test_finish", nodeid=NODEID, outcome="failed", duration_s=0.5)
    w.emit("session_finish", exitstatus=1)
    w.close()
    evs = read_events(path)
    assert [e.event for e in evs] == [
        "session_start",
        "collected",
        "test_start",
        "record",
        "launches",
        "progress",
        "test_failed",
        "test_finish",
        "session_finish",
    ]
    assert set(e.event for e in evs) <= set(EVENT_KINDS)
    assert evs[3]["benchmark"] == TRITON_RECORD
    assert len(evs[6]["longrepr"]) == events.LONGREPR_LIMIT
    assert evs[6]["longrepr"].endswith("E RuntimeError: Return code 5")  # the error line survives
    assert "characters omitted" in evs[6]["longrepr"]
    assert [e.line for e in evs] == list(range(1, 10))
    assert all(isinstance(e.ts, float) for e in evs)
    assert evs[0].to_dict()["event"] == "session_start"


def test_write_event_to_text_stream_and_read_lines(tmp_path: Path):
    path = tmp_path / "ev.jsonl"
    with path.open("w") as fh:
        write_event(fh, "test_start", nodeid="a::b")
        write_event(fh, "mystery_kind", anything=[1, 2])  # unknown kinds are kept (forward compatible)
    evs = read_events(path.read_text().splitlines(keepends=True))
    assert [e.event for e in evs] == ["test_start", "mystery_kind"]


def test_truncated_tail_tolerated_only_when_asked(tmp_path: Path):
    path = tmp_path / "ev.jsonl"
    path.write_text('{"event": "test_start", "ts": 1.0, "nodeid": "a"}\n{"event": "test_fin')
    with pytest.raises(InputError) as ei:
        read_events(path)
    assert ei.value.line == 2 and str(path) in str(ei.value)
    evs = read_events(path, allow_truncated_tail=True)
    assert [e.event for e in evs] == ["test_start"]


def test_malformed_middle_line_is_an_error_even_with_tail_tolerance(tmp_path: Path):
    path = tmp_path / "ev.jsonl"
    path.write_text(
        '{"event": "test_start", "ts": 1.0, "nodeid": "a"}\nnot json\n'
        '{"event": "session_finish", "ts": 2.0, "exitstatus": 0}\n'
    )
    with pytest.raises(InputError) as ei:
        read_events(path, allow_truncated_tail=True)
    assert ei.value.line == 2


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ('{"event": "test_start", "ts": 1.0}', "nodeid"),
        (
            '{"event": "test_finish", "ts": 1.0, "nodeid": "a", "outcome": "passed", "duration_s": true}',
            "duration_s",
        ),
        ('{"event": "session_finish", "ts": 1.0, "exitstatus": "0"}', "exitstatus"),
        (
            '{"event": "record", "ts": 1.0, "nodeid": "a", "framework": "t", "params": "p", "benchmark": []}',
            "benchmark",
        ),
        ('{"ts": 1.0}', "event"),
        ('{"event": "test_start", "ts": "now", "nodeid": "a"}', "ts"),
        ('{"event": "test_start", "ts": NaN, "nodeid": "a"}', "ts"),
    ],
)
def test_schema_violations_name_line_and_key(line: str, key: str):
    with pytest.raises(InputError) as ei:
        read_events(["\n", line + "\n"], source="ev.jsonl")
    assert ei.value.line == 2 and ei.value.key == key
    assert str(ei.value).startswith("ev.jsonl:2")


def test_non_object_and_missing_file(tmp_path: Path):
    with pytest.raises(InputError):
        read_events(["[1, 2]\n"])
    with pytest.raises(InputError) as ei:
        read_events(tmp_path / "absent.jsonl")
    assert "absent.jsonl" in str(ei.value)


def test_non_finite_numbers_and_odd_objects_still_encode():
    line = events.encode_event("progress", value=float("nan"), where=Path("/x"), pair=(1, 2))
    obj = json.loads(line)
    assert obj["value"] is None and obj["where"] == "/x" and obj["pair"] == [1, 2]


def test_unicode_line_separators_do_not_split_a_line(tmp_path: Path):
    path = tmp_path / "ev.jsonl"
    w = EventWriter(path)
    w.emit("test_failed", nodeid="a", when="call", longrepr="x\u2028y\u0085z\r\nq")
    w.close()
    (ev,) = read_events(path)
    assert ev["longrepr"] == "x\u2028y\u0085z\r\nq"


def _writer_process(path: str, tag: int) -> None:
    w = EventWriter(path)
    for i in range(200):
        w.emit("progress", tag=tag, i=i, pad="p" * 500)
    w.close()


def test_concurrent_writers_never_interleave_inside_a_line(tmp_path: Path):
    path = tmp_path / "ev.jsonl"
    w = EventWriter(path)
    threads = [
        threading.Thread(
            target=lambda t=t: [w.emit("progress", tag=t, i=i, pad="q" * 700) for i in range(200)]
        )
        for t in range(4)
    ]
    procs = [
        multiprocessing.get_context("spawn").Process(target=_writer_process, args=(str(path), 10 + k))
        for k in range(2)
    ]
    for p in procs:
        p.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in procs:
        p.join(30)
    w.close()
    evs = read_events(path)
    assert len(evs) == 4 * 200 + 2 * 200
    for tag in (0, 1, 2, 3, 10, 11):
        assert [e["i"] for e in evs if e["tag"] == tag] == list(range(200))


def test_emit_routes_to_the_active_writer(tmp_path: Path):
    path = tmp_path / "ev.jsonl"
    w = EventWriter(path)

    class Cfg:  # stands in for a pytest Config (weak-referenceable object)
        pass

    cfg = Cfg()
    try:
        events.set_active(w, cfg)
        assert events.emit(cfg, "progress", done=1)
        assert events.emit(None, "progress", done=2)
    finally:
        events.set_active(None, cfg)
        w.close()
    assert events.emit(None, "progress", done=3) is False
    assert [e["done"] for e in read_events(path)] == [1, 2]
