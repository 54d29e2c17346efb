"""Hostile *content* in a real kernel dir (issue 33 item 6): each case is a copy of the REAL recorded
matmul H200 session (``cutile_workbench/profiles/tilegym/session/matmul``) with one SYNTHETIC mutation,
then a CLI command. The rule: never an internal error; a located error (file, line or key; exit 2) or a
bounded, labelled skip (exit 0 with a note naming the file and line).

Each case reproduces a crash of the old code: events.jsonl lines whose parsed form outgrows memory
(MemoryError under ``prlimit --as=1G``), a 300-character variant name in analysis.json ("File name too
long"), a lone UTF-16 surrogate escaped inside a perf log's ``record_json`` (UnicodeEncodeError when the
history stores it or E's validators re-encode it) and a depth-500 value in a ``record_json``
(RecursionError in the history's run key).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PRISTINE = REPO / "cutile_workbench/profiles/tilegym/session/matmul"
KERNEL = "matmul"


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "root"
    shutil.copytree(PRISTINE, root / KERNEL)
    return root, root / KERNEL


def _cli(args: list[str], root: Path) -> tuple[int, str]:
    from cutile_workbench.cli import main

    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        rc = main([*args, "--out-root", str(root)])
    return rc, err.getvalue()


def _no_internal_error(rc: int, stderr: str) -> None:
    assert "internal error" not in stderr, stderr[-800:]
    assert rc in (0, 1, 2), (rc, stderr[-800:])


# ------------------------------------------------------------------ events.jsonl: lines too big to hold

_LIMIT = 1 << 30  # the fuzz runs' address-space limit (issue 33 item 4)


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_LIMIT, _LIMIT))


def test_event_lines_too_big_to_hold_are_located_not_a_memory_error(tmp_path: Path) -> None:
    """SYNTHETIC: ten 4 MiB ``progress`` lines of empty lists appended to the real events.jsonl (40 MiB,
    under the 256 MiB cap); parsed whole they take about 0.9 GiB. In a child under a 1 GiB address-space
    limit, F's reader (``report f --dry-run``) must refuse with the file and line, and ``history`` must
    skip the stream with a note; neither may die of MemoryError."""
    root, kdir = _copy(tmp_path)
    line = b'{"event": "progress", "ts": 1.0, "x": [' + b",".join([b"[]"] * ((4 << 20) // 3)) + b"]}\n"
    with (kdir / "workbench/events.jsonl").open("ab") as fh:
        for _ in range(10):
            fh.write(line)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for name in ("CUTILE_KERNEL_OUT_ROOT", "TILEGYM_PATH", "CUTILE_WORKBENCH_DEBUG"):
        env.pop(name, None)
    for args, want_rc in ((["report", "f", KERNEL, "--dry-run"], 2), (["history", KERNEL], 0)):
        done = subprocess.run(
            [sys.executable, "-m", "cutile_workbench", *args, "--out-root", str(root)],
            capture_output=True,
            text=True,
            env=env,
            preexec_fn=_limit_memory,
            timeout=300,
        )
        assert "MemoryError" not in done.stderr and "internal error" not in done.stderr, done.stderr[-800:]
        assert done.returncode == want_rc, (args, done.returncode, done.stderr[-800:])
        if want_rc == 2:
            assert "events.jsonl" in done.stderr and "line " in done.stderr, done.stderr[-800:]


def test_event_reader_refuses_a_stream_over_its_memory_budget(tmp_path: Path) -> None:
    """The bound itself (SYNTHETIC lines): the line that takes the estimate over the budget is named."""
    from cutile_workbench.artifacts import events
    from cutile_workbench.errors import InputError

    p = tmp_path / "events.jsonl"
    small = '{"event": "progress", "ts": 1.0, "x": [' + ",".join(["[]"] * 1000) + "]}\n"
    p.write_text(small * 3)
    assert len(events.read_events(p)) == 3
    cost = events.parsed_cost(small.rstrip("\n"))
    with pytest.raises(InputError) as ei:
        events.read_events(p, budget=2 * cost + 1)
    assert ei.value.line == 3 and str(p) in str(ei.value)


def test_event_reader_refuses_a_line_over_the_line_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cutile_workbench.artifacts import events
    from cutile_workbench.errors import InputError

    monkeypatch.setattr(events, "MAX_LINE_CHARS", 100)
    p = tmp_path / "events.jsonl"
    p.write_text(
        '{"event": "progress", "ts": 1.0}\n{"event": "progress", "ts": 2.0, "x": "' + "a" * 200 + '"}\n'
    )
    with pytest.raises(InputError) as ei:
        events.read_events(p)
    assert ei.value.line == 2


def test_event_reader_streams_the_real_files_as_before(tmp_path: Path) -> None:
    """REAL: every recorded events.jsonl reads the same as splitting the whole text (the old reader),
    CRLF-free; a cut last line is dropped with ``allow_truncated_tail`` and refused without it."""
    from cutile_workbench.artifacts.events import read_events
    from cutile_workbench.errors import InputError

    files = sorted((REPO / "cutile_workbench/profiles").glob("*/session/*/workbench/events.jsonl"))
    assert files
    for f in files:
        text = f.read_text(encoding="utf-8")
        got = read_events(f)
        want = [json.loads(ln) for ln in text.split("\n") if ln.strip()]
        assert [e.to_dict() for e in got] == want
        assert [e.line for e in got] == [i for i, ln in enumerate(text.split("\n"), 1) if ln.strip()]
    cut = tmp_path / "cut.jsonl"
    data = files[0].read_bytes()
    cut.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 20])
    assert len(read_events(cut, allow_truncated_tail=True)) == data.count(b"\n") - 1
    with pytest.raises(InputError):
        read_events(cut)


# ------------------------------------------------------------------ analysis.json: a 300-char variant name


def test_variant_name_that_cannot_be_a_file_name_is_a_located_error(tmp_path: Path) -> None:
    root, kdir = _copy(tmp_path)
    p = kdir / "reference/analysis.json"
    p.write_text(
        p.read_text().replace('"variant_name": "non_persistent"', '"variant_name": "' + "n" * 300 + '"')
    )
    for args in (
        ["table", KERNEL],
        ["report", "e", KERNEL, "--dry-run"],
        ["history", KERNEL],
        ["diff", KERNEL],
    ):
        rc, err = _cli(args, root)
        _no_internal_error(rc, err)
        if args[0] in ("history", "diff"):  # they read no variant log without a valid analysis: exit 0
            assert rc == 0, err[-600:]
            continue
        assert rc == 2 and "analysis.json" in err and "variant_name" in err, (args, err[-600:])


@pytest.mark.parametrize("name", ["../../outside", "a/b", ".."])
def test_variant_name_with_a_path_is_refused(tmp_path: Path, name: str) -> None:
    from cutile_workbench.artifacts.analysis import load_analysis
    from cutile_workbench.errors import InputError

    _, kdir = _copy(tmp_path)
    p = kdir / "reference/analysis.json"
    p.write_text(
        p.read_text().replace('"variant_name": "non_persistent"', json.dumps({"variant_name": name})[1:-1])
    )
    with pytest.raises(InputError) as ei:
        load_analysis(p)
    assert ei.value.key is not None and "variant_name" in ei.value.key


# ------------------------------------------------------------------ perf log: a lone surrogate in record_json


def _mutate_record(kdir: Path, insert: str, *, at: str = '"kernel_name": "') -> Path:
    p = kdir / "baseline_perf_cutile.txt"
    text = p.read_text()
    i = text.index("record_json: ")
    j = text.index(at, i) + len(at)
    p.write_text(text[:j] + insert + text[j:])
    return p


def test_lone_surrogate_in_record_json_is_located(tmp_path: Path) -> None:
    """SYNTHETIC ``\\ud800`` (valid JSON, not valid Unicode) inside a real record's kernel name."""
    root, kdir = _copy(tmp_path)
    _mutate_record(kdir, "\\ud800")
    for args in (
        ["history", KERNEL],
        ["calibrate", KERNEL],
        ["report", "e", KERNEL, "--dry-run"],
        ["table", KERNEL],
    ):
        rc, err = _cli(args, root)
        _no_internal_error(rc, err)
        assert ":memory:" not in err, (args, err[-600:])
        if rc == 2 and "UTF-16 surrogate" in err:
            assert "baseline_perf_cutile.txt" in err, (args, err[-600:])


def test_parser_notes_a_lone_surrogate_with_file_and_line(tmp_path: Path) -> None:
    from cutile_workbench.artifacts.perflog.parser import parse_perf_log
    from cutile_workbench.errors import InputError

    _, kdir = _copy(tmp_path)
    p = _mutate_record(kdir, "\\udc80")
    line = 1 + p.read_text()[: p.read_text().index("\\udc80")].count("\n")
    log = parse_perf_log(p)
    assert any(f"{p}:{line}" in n and "surrogate" in n for n in log.notes), log.notes
    for r in log.records:  # nothing with the surrogate got through
        json.dumps(r.raw, ensure_ascii=False, default=str).encode("utf-8")
    with pytest.raises(InputError) as ei:
        parse_perf_log(p, strict=True)
    assert ei.value.line == line
    # a surrogate PAIR is one valid character: accepted
    _, kdir2 = _copy(tmp_path / "pair")
    ok = parse_perf_log(_mutate_record(kdir2, "\\ud83d\\ude00"), strict=True)
    assert any("\U0001f600" in str(r.raw) for r in ok.records)


# ------------------------------------------------------------------ perf log: a depth-500 value


@pytest.mark.parametrize("shape", ["list", "dict"])
def test_depth_500_value_in_record_json_is_located(tmp_path: Path, shape: str) -> None:
    root, kdir = _copy(tmp_path)
    deep = "[" * 500 + "]" * 500 if shape == "list" else '{"a": ' * 500 + "1" + "}" * 500
    _mutate_record(kdir, "", at='"forward": {')  # keep the record readable otherwise
    p = kdir / "baseline_perf_cutile.txt"
    p.write_text(
        p.read_text().replace('"capture_source": ', '"zz_deep": ' + deep + ', "capture_source": ', 1)
    )
    for args in (
        ["history", KERNEL],
        ["calibrate", KERNEL],
        ["table", KERNEL],
        ["report", "e", KERNEL, "--dry-run"],
    ):
        rc, err = _cli(args, root)
        _no_internal_error(rc, err)


def test_lone_surrogate_in_session_json_is_located(tmp_path: Path) -> None:
    """SYNTHETIC ``\\ud800`` in the real session.json's GPU name: table and report e crashed
    (UnicodeEncodeError), history named only ':memory:'."""
    root, kdir = _copy(tmp_path)
    p = kdir / "workbench/session.json"
    p.write_text(p.read_text().replace("NVIDIA H200", "NVIDIA \\ud800H200"))
    for args in (["history", KERNEL], ["table", KERNEL], ["report", "e", KERNEL, "--dry-run"]):
        rc, err = _cli(args, root)
        _no_internal_error(rc, err)
        assert ":memory:" not in err, (args, err[-600:])


def test_lone_surrogate_in_an_event_line_names_its_line(tmp_path: Path) -> None:
    from cutile_workbench.artifacts.events import read_events
    from cutile_workbench.errors import InputError

    p = tmp_path / "events.jsonl"
    p.write_text('{"event": "progress", "ts": 1.0}\n{"event": "progress", "ts": 2.0, "x": "a\\udc00"}\n')
    with pytest.raises(InputError) as ei:
        read_events(p)
    assert ei.value.line == 2 and "surrogate" in ei.value.message
    p.write_text('{"event": "progress", "ts": 2.0, "x": "\\ud83d\\ude00"}\n')  # a pair: one valid character
    assert read_events(p)[0]["x"] == "\U0001f600"


@pytest.mark.parametrize("size", [1, 7, 4096])
def test_event_reader_splits_lines_across_chunk_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """REAL matmul events.jsonl read in chunks of ``size`` bytes (the reader streams 1 MiB chunks; a
    line split across chunks must come out whole), also with a cut tail and a line over the limit."""
    from cutile_workbench.artifacts import confine, events
    from cutile_workbench.errors import InputError

    real = PRISTINE / "workbench/events.jsonl"
    want = [e.to_dict() for e in events.read_events(real)]
    whole = confine.iter_regular

    def small(path: Path | str, **kw: object):  # type: ignore[no-untyped-def]
        data = b"".join(whole(path, **kw))  # type: ignore[arg-type]
        for i in range(0, len(data), size):
            yield data[i : i + size]

    monkeypatch.setattr(confine, "iter_regular", small)
    assert [e.to_dict() for e in events.read_events(real)] == want
    cut = tmp_path / "cut.jsonl"
    data = real.read_bytes()
    cut.write_bytes(data + b'{"event": "progress", "ts": 1')
    assert [e.to_dict() for e in events.read_events(cut, allow_truncated_tail=True)] == want
    monkeypatch.setattr(events, "MAX_LINE_CHARS", 2000)
    long = tmp_path / "long.jsonl"
    long.write_bytes(b'{"event": "progress", "ts": 1.0}\n' + b"x" * 5000 + b"\n" + data)
    with pytest.raises(InputError) as ei:
        events.read_events(long)
    assert ei.value.line == 2
