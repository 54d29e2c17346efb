"""JSON-lines event stream of a pytest session: schema, writer, reader and the in-process ``emit``.

Contract:
- One JSON object per line, UTF-8, ``\\n``-terminated. Every object has ``event`` (a kind) and
  ``ts`` (Unix seconds, float). Kinds and their required fields are :data:`EVENT_SCHEMA`; extra
  fields are allowed (forward compatible), unknown kinds are kept as-is by the reader.
- Writers append with one ``os.write`` per line on an ``O_APPEND`` descriptor, so lines from
  several processes (a resumed run, xdist workers, a harness) never interleave inside a line, and
  every line is on disk (in the page cache) as soon as it is written: a tailing reader sees it.
- :func:`read_events` raises :class:`~cutile_workbench.errors.InputError` naming file and line for a
  malformed line, except a final line without ``\\n`` when ``allow_truncated_tail`` is set (a
  child killed mid-write, or a file read while it is still being written).
- :func:`emit` lets in-process code (the capture harness) add events (``launches``, ``progress``)
  to the stream the pytest plugin opened; it is a no-op when no stream is active.

Kinds written by ``cutile_workbench.run.plugins.perflog``: ``session_start {pid, argv, rootdir}``,
``collected {nodeids}``, ``test_start {nodeid}``, ``record {nodeid, framework, params,
benchmark}``, ``test_failed {nodeid, when, longrepr}`` (at the failing phase), ``test_finish
{nodeid, outcome: passed|skipped|failed, duration_s}`` (once per test, after teardown),
``session_finish {exitstatus}``, and ``provenance {phase: start|finish, provenance}`` right after
``session_start`` and before ``session_finish`` (:mod:`cutile_workbench.history.provenance`). The harness adds ``launches {nodeid, backend, params, calls}``
and ``progress {...}``.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cutile_workbench.errors import InputError

#: required fields per kind (beyond ``event`` and ``ts``), with the JSON types they must have
EVENT_SCHEMA: dict[str, dict[str, tuple[type, ...]]] = {
    "session_start": {"pid": (int,), "argv": (list,), "rootdir": (str,)},
    "collected": {"nodeids": (list,)},
    "test_start": {"nodeid": (str,)},
    "record": {"nodeid": (str,), "framework": (str,), "params": (str,), "benchmark": (dict,)},
    "test_finish": {"nodeid": (str,), "outcome": (str,), "duration_s": (int, float)},
    "test_failed": {"nodeid": (str,), "when": (str,), "longrepr": (str,)},
    "launches": {"nodeid": (str,), "backend": (str,), "params": (str,), "calls": (list,)},
    "progress": {},
    "provenance": {"phase": (str,), "provenance": (dict,)},
    "session_finish": {"exitstatus": (int,)},
    # written by cutile_workbench.run.runner around faults and resumes (fields are the runner's)
    "runner_attempt_end": {},
    "runner_resume": {},
    "runner_finish": {},
}
EVENT_KINDS: tuple[str, ...] = tuple(EVENT_SCHEMA)

#: ``test_failed.longrepr`` is cut to this many characters (a CUDA traceback can be megabytes)
LONGREPR_LIMIT = 8000
#: a single line longer than this is refused by the reader (guards memory on garbage input); the
#: recorded sessions' longest line is 11 KB, a live run's ``launches`` line a few hundred KB
MAX_LINE_CHARS = 16 * 1024 * 1024
#: the events one :func:`read_events` keeps may take about this much memory (:func:`parsed_cost`):
#: a stream beyond it is refused at the line that crosses it, never parsed into a MemoryError. About
#: 55 MB of real event lines with per-launch records (a live run of ~200 configs that keeps its
#: ``launches`` events); the recorded sessions' streams take 0.1-0.5 MiB of it
PARSE_BUDGET_BYTES = 384 * 1024 * 1024


@dataclass(frozen=True)
class Event:
    """One event line. ``fields`` holds everything except ``event`` and ``ts``."""

    event: str
    ts: float
    fields: Mapping[str, Any] = field(default_factory=dict)
    line: int | None = None  # 1-based line in the source, when read from one

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.event, "ts": self.ts, **self.fields}


def json_default(obj: Any) -> Any:
    # Benchmark dicts may hold numpy scalars, tuples, Paths; anything else is stringified rather
    # than losing the whole event.
    for attr in ("item", "tolist"):
        fn = getattr(obj, attr, None)
        if callable(fn):
            try:
                return fn()
            except Exception:  # pragma: no cover - defensive
                break
    return str(obj)


def clip_longrepr(text: str, limit: int = LONGREPR_LIMIT) -> str:
    """At most ``limit`` characters: the head and, above all, the tail (where the error is)."""
    if len(text) <= limit:
        return text
    head = limit // 4
    note = f"\n[... {len(text) - limit} characters omitted by cutile-workbench ...]\n"
    tail = limit - head - len(note)
    return text[:head] + note + text[len(text) - tail :]


def encode_event(kind: str, ts: float | None = None, **fields: Any) -> str:
    """One JSON line (with ``\\n``) for an event. Non-finite floats become ``null`` (valid JSON)."""
    obj = {"event": kind, "ts": time.time() if ts is None else ts, **fields}
    if kind == "test_failed" and isinstance(obj.get("longrepr"), str):
        obj["longrepr"] = clip_longrepr(obj["longrepr"])
    clean = _finite(obj)
    try:
        text = json.dumps(clean, default=json_default, ensure_ascii=True, allow_nan=False)
    except ValueError:  # a NaN hidden in a numpy scalar: Python's json still reads ``NaN``
        text = json.dumps(clean, default=json_default, ensure_ascii=True)
    return text + "\n"


def _finite(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


class EventWriter:
    """Appends events to one file; thread-safe; one ``os.write`` per line (see module doc)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def emit(self, kind: str, **fields: Any) -> None:
        data = encode_event(kind, **fields).encode("utf-8")
        with self._lock:
            if self._fd is None:
                return
            view = memoryview(data)
            while view:  # os.write may write short on pipes; files take it whole
                n = os.write(self._fd, view)
                view = view[n:]

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    @property
    def closed(self) -> bool:
        return self._fd is None


def write_event(target: EventWriter | Any, kind: str, **fields: Any) -> None:
    """Write one event to an :class:`EventWriter` or any text stream (``write`` + ``flush``)."""
    if isinstance(target, EventWriter):
        target.emit(kind, **fields)
        return
    target.write(encode_event(kind, **fields))
    target.flush()


# --------------------------------------------------------------------------- active stream

_active: EventWriter | None = None
_by_config: weakref.WeakKeyDictionary[Any, EventWriter] = weakref.WeakKeyDictionary()


def set_active(writer: EventWriter | None, config: Any = None) -> None:
    """Make ``writer`` the stream :func:`emit` uses (the plugin calls this at configure time)."""
    global _active
    _active = writer
    if config is not None:
        if writer is None:
            _by_config.pop(config, None)
        else:
            _by_config[config] = writer


def active_writer(config: Any = None) -> EventWriter | None:
    if config is not None:
        writer = _by_config.get(config)
        if writer is not None:
            return writer
    return _active


def emit(config_or_none: Any, kind: str, **fields: Any) -> bool:
    """Add an event to the active stream; returns False (and does nothing) when none is active."""
    writer = active_writer(config_or_none)
    if writer is None or writer.closed:
        return False
    writer.emit(kind, **fields)
    return True


# --------------------------------------------------------------------------- reader


def _check_fields(kind: str, obj: Mapping[str, Any], src: str, lineno: int) -> None:
    for key, types in EVENT_SCHEMA.get(kind, {}).items():
        if key not in obj:
            raise InputError(f"event '{kind}' lacks field '{key}'", path=src, line=lineno, key=key)
        value = obj[key]
        # bool is an int subclass; a JSON true is never a valid pid/duration/exitstatus
        if isinstance(value, bool) or not isinstance(value, types):
            want = "/".join(t.__name__ for t in types)
            raise InputError(
                f"event '{kind}' field '{key}' must be {want}, got {type(value).__name__}",
                path=src,
                line=lineno,
                key=key,
            )


def parsed_cost(line: str) -> int:
    """An upper estimate of the bytes CPython's ``json.loads`` result of ``line`` holds.

    The line's own size, 40 per ``,`` (a value's slot and a float/int), 32 per ``"`` (a string or key
    object, two quotes each) and 150 per ``{``/``[`` (a container): measured with tracemalloc against
    the shapes that cost most per character (empty and one-key containers, short and unique strings,
    floats, non-BMP text), the actual size is 0.2-0.9x this; the recorded sessions' events and launch
    records are 0.5x (CPU box, Python 3.11)."""
    containers = line.count("{") + line.count("[")
    return sys.getsizeof(line) + 40 * line.count(",") + 32 * line.count('"') + 150 * containers


def read_events(
    path_or_lines: Path | str | Iterable[str],
    *,
    allow_truncated_tail: bool = False,
    source: str | None = None,
    budget: int | None = None,
) -> list[Event]:
    """Parse a JSON-lines event stream (a path, or an iterable of lines as read from one).

    A ``str`` argument is a path; the file is streamed (one line in memory at a time, plus the
    events kept). Blank lines are skipped. Raises ``InputError(path, line)`` for a malformed line, a
    line over :data:`MAX_LINE_CHARS`, or the line at which the events kept would take more than
    ``budget`` bytes (:data:`PARSE_BUDGET_BYTES`; :func:`parsed_cost`); with ``allow_truncated_tail``
    an unparsable final line that lacks its ``\\n`` is dropped instead (it is still being written,
    or the writer died mid-line).

    A path is parsed once per process while its file is unchanged (same device, inode, size, mtime and
    ctime; regular files only): a repeat call returns a new list of the same (frozen) events.
    """
    limit = PARSE_BUDGET_BYTES if budget is None else budget
    if isinstance(path_or_lines, (str, Path)):
        # one parse per process of an unchanged file (issue 31: a fresh `table` read it twice, for the
        # autotune winners and the run's context); keyed on the file's identity and stat, so a file
        # rewritten or appended to is parsed again; only regular files (a link is read as before)
        key = _memo_key(path_or_lines, allow_truncated_tail, source, limit)
        with _READ_MEMO_LOCK:
            hit = _READ_MEMO.get(key) if key is not None else None
        if hit is not None:
            return list(hit)
        events = _read_events_uncached(path_or_lines, allow_truncated_tail, source, limit)
        if key is not None:
            with _READ_MEMO_LOCK:  # the TUI's workers read beside each other
                while len(_READ_MEMO) >= _READ_MEMO_MAX:
                    _READ_MEMO.pop(next(iter(_READ_MEMO)))
                _READ_MEMO[key] = tuple(events)
        return events
    return _read_events_uncached(path_or_lines, allow_truncated_tail, source, limit)


_READ_MEMO: dict[tuple[object, ...], tuple[Event, ...]] = {}
_READ_MEMO_MAX = 8
_READ_MEMO_LOCK = threading.Lock()


def forget() -> None:
    """Drop the process's parsed event files (tests: what a new process starts with)."""
    with _READ_MEMO_LOCK:
        _READ_MEMO.clear()


def _memo_key(
    path: Path | str, allow_truncated_tail: bool, source: str | None, limit: int
) -> tuple[object, ...] | None:
    try:
        st = os.lstat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (
        os.path.abspath(os.fspath(path)),
        st.st_dev,
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        allow_truncated_tail,
        source,
        limit,
    )


def _read_events_uncached(
    path_or_lines: Path | str | Iterable[str],
    allow_truncated_tail: bool,
    source: str | None,
    limit: int,
) -> list[Event]:
    if isinstance(path_or_lines, (str, Path)):
        src = source or str(path_or_lines)
        lines: Iterable[tuple[str, bool, bool]] = _file_lines(path_or_lines)
    else:
        src = source or "<events>"
        given = list(path_or_lines)
        lines = ((ln, i == len(given) - 1, False) for i, ln in enumerate(given))

    events: list[Event] = []
    spent = 0
    for lineno, (line, is_last, cut) in enumerate(lines, start=1):
        is_open_tail = is_last and not cut and not line.endswith("\n")
        try:
            if cut or len(line) > MAX_LINE_CHARS:
                raise InputError(
                    f"event line longer than {MAX_LINE_CHARS:,} characters", path=src, line=lineno
                )
            stripped = line.strip()
            if not stripped:
                continue
            spent += parsed_cost(stripped)
            if spent > limit:
                raise InputError(
                    f"event stream too large to hold: by this line its events would take about "
                    f"{spent >> 20:,} MiB in memory (limit {limit >> 20:,} MiB)",
                    path=src,
                    line=lineno,
                )
            events.append(_parse_line(stripped, src, lineno))
        except InputError:
            if allow_truncated_tail and is_open_tail:
                break
            raise
    return events


def _file_lines(path: Path | str) -> Iterator[tuple[str, bool, bool]]:
    """``(line with its \\n, is_last, cut)`` of a file, decoded line by line (U+FFFD for invalid
    UTF-8); split on ``\\n`` only (str.splitlines would also split inside a line at U+2028 & co). A
    line longer than :data:`MAX_LINE_CHARS` bytes is yielded cut to that length with ``cut`` set (the
    caller refuses it), so no more than one such line is ever held."""
    from cutile_workbench.artifacts.confine import iter_regular

    pending = bytearray()
    cut = False  # the current line passed the limit: its rest is skipped up to its \n
    prev: tuple[str, bool] | None = None
    for chunk in iter_regular(path, kind="event stream"):  # a FIFO/device refused unread, size capped
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            end = len(chunk) if nl < 0 else nl + 1
            if not cut:
                pending += chunk[start:end]
                if len(pending) > MAX_LINE_CHARS:
                    del pending[MAX_LINE_CHARS:]
                    cut = True
            if nl < 0:
                break
            if prev is not None:
                yield prev[0], False, prev[1]
            prev = (pending.decode("utf-8", errors="replace"), cut)
            pending.clear()
            cut = False
            start = end
    if pending or cut:
        if prev is not None:
            yield prev[0], False, prev[1]
        yield pending.decode("utf-8", errors="replace"), True, cut
    elif prev is not None:
        yield prev[0], True, prev[1]


def _parse_line(text: str, src: str, lineno: int) -> Event:
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as exc:  # ValueError: JSONDecodeError or a > 4300-digit int
        msg = getattr(exc, "msg", None) or (
            "nesting too deep" if isinstance(exc, RecursionError) else str(exc)
        )
        raise InputError(f"malformed event line (not JSON: {msg})", path=src, line=lineno) from None
    if not isinstance(obj, dict):
        raise InputError("malformed event line (not a JSON object)", path=src, line=lineno)
    kind = obj.get("event")
    if not isinstance(kind, str) or not kind:
        raise InputError("event line lacks a string 'event'", path=src, line=lineno, key="event")
    ts = obj.get("ts")
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
        raise InputError("event line lacks a numeric 'ts'", path=src, line=lineno, key="ts")
    _check_fields(kind, obj, src, lineno)
    from cutile_workbench.infra.jsonutil import surrogate_escape_check

    surrogate_escape_check(text, obj, src, "malformed event line", first_line=lineno)
    fields = {k: v for k, v in obj.items() if k not in ("event", "ts")}
    return Event(event=kind, ts=float(ts), fields=fields, line=lineno)
