"""Per-launch capture files: gzip JSON ``{"version": 1, "sets": [...]}`` and Chrome-trace export.

Contract:
- :func:`save_launch_sets` / :func:`load_launch_sets` round-trip ``list[LaunchSet]`` exactly.
  Loading anything malformed raises :class:`~cutile_workbench.errors.InputError` naming the file and the
  key path (e.g. ``sets[2].calls[0].launches[1].start_ns``); never a bare traceback.
- :func:`launch_sets_from_events` rebuilds sets from ``"launches"`` event dicts (JSON-lines stream).
- :func:`to_chrome_trace` returns Chrome-trace JSON (Perfetto opens it): one process per backend,
  one thread lane per stream, categories ``kernel``/``memcpy``/``memset``, args grid/block/regs/smem.
- :func:`append_side_file` adds one set to ``<dir>/launches.<pid>.json.gz`` (``WORKBENCH_LAUNCHES_DIR``).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cutile_workbench.errors import InputError
from cutile_workbench.infra.atomicio import atomic_write_bytes
from cutile_workbench.infra.jsonutil import loads_located
from cutile_workbench.model import AttributedLaunch, CallCapture, Launch, LaunchSet, SourceFrame

VERSION = 1
#: a launches file decompresses to at most this (real ones: a few MiB); more is a gzip bomb, refused
MAX_DECOMPRESSED_BYTES = 256 << 20
_KINDS = ("kernel", "memcpy", "memset")
_SOURCES = ("cupti", "kineto", "events")


# --------------------------------------------------------------------------- to dicts


def launch_to_dict(launch: Launch) -> dict[str, Any]:
    d: dict[str, Any] = {
        "kind": launch.kind,
        "name": launch.name,
        "start_ns": launch.start_ns,
        "end_ns": launch.end_ns,
        "correlation_id": launch.correlation_id,
    }
    for key in (
        "demangled",
        "registers_per_thread",
        "static_smem",
        "dynamic_smem",
        "stream_id",
        "graph_id",
        "graph_node_id",
        "bytes",
        "copy_kind",
        "api_name",
    ):
        value = getattr(launch, key)
        if value is not None:
            d[key] = value
    if launch.grid is not None:
        d["grid"] = list(launch.grid)
    if launch.block is not None:
        d["block"] = list(launch.block)
    if launch.cluster is not None:
        d["cluster"] = list(launch.cluster)
    return d


def attributed_to_dict(a: AttributedLaunch) -> dict[str, Any]:
    """Compact: frames as ``[file, line, function, code, library]`` rows, innermost first."""
    d: dict[str, Any] = {
        "kind": a.kind,
        "name": a.name,
        "correlation_id": a.correlation_id,
        "frames": [[f.file, f.line, f.function, f.code, 1 if f.library else 0] for f in a.frames],
    }
    if a.api_name is not None:
        d["api_name"] = a.api_name
    for key in ("grid", "block", "cluster"):
        value = getattr(a, key)
        if value is not None:
            d[key] = list(value)
    return d


def call_to_dict(call: CallCapture) -> dict[str, Any]:
    return {
        "index": call.index,
        "backend": call.backend,
        "host_start_ns": call.host_start_ns,
        "host_end_ns": call.host_end_ns,
        "launches": [launch_to_dict(x) for x in call.launches],
    }


def set_to_dict(s: LaunchSet) -> dict[str, Any]:
    return {
        "nodeid": s.nodeid,
        "backend": s.backend,
        "params": s.params,
        "source": s.source,
        "calls": [call_to_dict(c) for c in s.calls],
        **({"attribution": [attributed_to_dict(a) for a in s.attribution]} if s.attribution else {}),
    }


# --------------------------------------------------------------------------- from dicts (strict)


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, key: str, msg: str) -> InputError:
        return InputError(msg, path=self.path, key=key)

    def obj(self, value: Any, key: str) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(key, f"expected an object, got {type(value).__name__}")
        return value

    def list_(self, value: Any, key: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list, got {type(value).__name__}")
        return value

    def get(
        self,
        d: Mapping[str, Any],
        name: str,
        key: str,
        typ: type | tuple[type, ...],
        *,
        optional: bool = False,
    ) -> Any:
        if name not in d or d[name] is None:
            if optional:
                return None
            raise self.fail(f"{key}.{name}", "missing")
        value = d[name]
        # bool is an int subclass: a JSON true must not pass as a timestamp
        if isinstance(value, bool) and bool not in (typ if isinstance(typ, tuple) else (typ,)):
            raise self.fail(f"{key}.{name}", f"expected {_tname(typ)}, got bool")
        if not isinstance(value, typ):
            raise self.fail(f"{key}.{name}", f"expected {_tname(typ)}, got {type(value).__name__}")
        return value

    def dims(self, d: Mapping[str, Any], name: str, key: str) -> tuple[int, int, int] | None:
        value = d.get(name)
        if value is None:
            return None
        if (
            not isinstance(value, list)
            or len(value) != 3
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
        ):
            raise self.fail(f"{key}.{name}", "expected [x, y, z] of non-negative ints")
        return (value[0], value[1], value[2])

    def launch(self, value: Any, key: str) -> Launch:
        d = self.obj(value, key)
        kind = self.get(d, "kind", key, str)
        if kind not in _KINDS:
            raise self.fail(f"{key}.kind", f"unknown kind {kind!r} (expected one of {', '.join(_KINDS)})")
        start = self.get(d, "start_ns", key, int)
        end = self.get(d, "end_ns", key, int)
        if end < start:
            raise self.fail(f"{key}.end_ns", f"end_ns {end} is before start_ns {start}")
        opt_int = {
            n: self.get(d, n, key, int, optional=True)
            for n in (
                "registers_per_thread",
                "static_smem",
                "dynamic_smem",
                "stream_id",
                "graph_id",
                "graph_node_id",
                "bytes",
            )
        }
        opt_str = {n: self.get(d, n, key, str, optional=True) for n in ("demangled", "copy_kind", "api_name")}
        return Launch(
            kind=kind,
            name=self.get(d, "name", key, str),
            start_ns=start,
            end_ns=end,
            correlation_id=self.get(d, "correlation_id", key, int),
            grid=self.dims(d, "grid", key),
            block=self.dims(d, "block", key),
            cluster=self.dims(d, "cluster", key),
            **opt_int,
            **opt_str,
        )

    def frame(self, value: Any, key: str) -> SourceFrame:
        row = self.list_(value, key)
        if (
            len(row) != 5
            or not isinstance(row[0], str)
            or not isinstance(row[1], int)
            or isinstance(row[1], bool)
            or row[1] < 0
            or not isinstance(row[2], str)
            or not isinstance(row[3], str)
            or row[4] not in (0, 1)
        ):
            raise self.fail(key, "expected [file, line, function, code, library 0|1]")
        return SourceFrame(row[0], row[1], row[2], row[3], bool(row[4]))

    def attributed(self, value: Any, key: str) -> AttributedLaunch:
        d = self.obj(value, key)
        kind = self.get(d, "kind", key, str)
        if kind not in _KINDS:
            raise self.fail(f"{key}.kind", f"unknown kind {kind!r} (expected one of {', '.join(_KINDS)})")
        frames = self.list_(d.get("frames"), f"{key}.frames")
        return AttributedLaunch(
            kind=kind,
            name=self.get(d, "name", key, str),
            correlation_id=self.get(d, "correlation_id", key, int),
            frames=tuple(self.frame(f, f"{key}.frames[{i}]") for i, f in enumerate(frames)),
            api_name=self.get(d, "api_name", key, str, optional=True),
            grid=self.dims(d, "grid", key),
            block=self.dims(d, "block", key),
            cluster=self.dims(d, "cluster", key),
        )

    def call(self, value: Any, key: str, backend: str) -> CallCapture:
        d = self.obj(value, key)
        launches = self.list_(d.get("launches", []), f"{key}.launches")
        return CallCapture(
            index=self.get(d, "index", key, int),
            backend=self.get(d, "backend", key, str, optional=True) or backend,
            host_start_ns=self.get(d, "host_start_ns", key, int),
            host_end_ns=self.get(d, "host_end_ns", key, int),
            launches=tuple(self.launch(x, f"{key}.launches[{i}]") for i, x in enumerate(launches)),
        )

    def launch_set(self, value: Any, key: str) -> LaunchSet:
        d = self.obj(value, key)
        backend = self.get(d, "backend", key, str)
        source = self.get(d, "source", key, str, optional=True) or "cupti"
        if source not in _SOURCES:
            raise self.fail(
                f"{key}.source", f"unknown source {source!r} (expected one of {', '.join(_SOURCES)})"
            )
        calls = self.list_(d.get("calls"), f"{key}.calls")
        attributed = self.list_(d.get("attribution") or [], f"{key}.attribution")
        return LaunchSet(
            nodeid=self.get(d, "nodeid", key, str),
            backend=backend,
            params=self.get(d, "params", key, str),
            calls=[self.call(c, f"{key}.calls[{i}]", backend) for i, c in enumerate(calls)],
            source=source,
            attribution=tuple(
                self.attributed(a, f"{key}.attribution[{i}]") for i, a in enumerate(attributed)
            ),
        )


def _tname(typ: type | tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in typ) if isinstance(typ, tuple) else typ.__name__


def sets_from_document(doc: Any, path: str = "<memory>") -> list[LaunchSet]:
    """Validate a decoded ``{"version": 1, "sets": [...]}`` document."""
    r = _Reader(path)
    d = r.obj(doc, "$")
    version = d.get("version")
    if version != VERSION:
        raise r.fail("version", f"unsupported version {version!r} (expected {VERSION})")
    sets = r.list_(d.get("sets"), "sets")
    return [r.launch_set(s, f"sets[{i}]") for i, s in enumerate(sets)]


# --------------------------------------------------------------------------- files


def save_launch_sets(path: Path, sets: list[LaunchSet]) -> None:
    """Write atomically (temp file + rename), gzip when the name ends in ``.gz``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(
        {"version": VERSION, "sets": [set_to_dict(s) for s in sets]}, separators=(",", ":")
    ).encode()
    atomic_write_bytes(path, gzip.compress(data, mtime=0) if path.name.endswith(".gz") else data, None)


def load_launch_sets(path: Path, *, kernel_dir: Path | None = None) -> list[LaunchSet]:
    """Read a launches file (gzip or plain JSON). Bad input → InputError naming file and key; with
    ``kernel_dir``, a file resolving outside it is refused (``UnsafePath``)."""
    from cutile_workbench.artifacts.confine import read_regular

    path = Path(path)
    raw = read_regular(path, kind="launches", kernel_dir=kernel_dir)  # a FIFO or device is refused unread
    if raw[:2] == b"\x1f\x8b":
        cap = MAX_DECOMPRESSED_BYTES
        chunks: list[bytes] = []
        total = 0
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as fh:
                while chunk := fh.read(1 << 20):  # in chunks: nothing preallocated for the cap
                    chunks.append(chunk)
                    total += len(chunk)
                    if total > cap:  # a gzip bomb stops at the cap
                        raise InputError(
                            f"launches file decompresses to over {cap:,} bytes: refused", path=str(path)
                        )
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"corrupt gzip data: {exc}", path=str(path)) from None
        raw = b"".join(chunks)
        del chunks
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text at byte {exc.start}", path=str(path)) from None
    doc = loads_located(text, str(path))
    return sets_from_document(doc, str(path))


def append_side_file(directory: Path, launch_set: LaunchSet) -> Path:
    """Add one set to ``<directory>/launches.<pid>.json.gz`` (one file per measuring process)."""
    target = Path(directory) / f"launches.{os.getpid()}.json.gz"
    existing = load_launch_sets(target) if target.exists() else []
    save_launch_sets(target, [*existing, launch_set])
    return target


def launch_sets_from_events(events: Iterable[Any], path: str = "<events>") -> list[LaunchSet]:
    """Rebuild sets from ``launches`` events; other kinds are ignored.

    Accepts :class:`cutile_workbench.artifacts.events.Event` objects (``.event`` + ``.fields``) or plain dicts as
    read from the JSON-lines stream (``{"event": "launches", ...}``).
    """
    r = _Reader(path)
    sets: list[LaunchSet] = []
    for n, ev in enumerate(events):
        if isinstance(ev, Mapping):
            kind, fields = ev.get("event", ev.get("kind")), dict(ev)
            key = f"events[{n}]"
        elif hasattr(ev, "event") and hasattr(ev, "fields"):
            kind, fields = ev.event, dict(ev.fields)
            line = getattr(ev, "line", None)
            key = f"line {line}" if line is not None else f"events[{n}]"
        else:
            continue
        if kind != "launches":
            continue
        sets.append(r.launch_set(fields, key))
    return sets


# --------------------------------------------------------------------------- Chrome trace


def to_chrome_trace(sets: list[LaunchSet]) -> dict[str, Any]:
    """Chrome-trace JSON (``traceEvents``, µs timestamps) relative to the earliest launch."""
    events: list[dict[str, Any]] = []
    starts = [x.start_ns for s in sets for c in s.calls for x in c.launches]
    origin = min(starts) if starts else 0
    pids: dict[str, int] = {}
    lanes: set[tuple[int, int]] = set()
    for s in sets:
        pid = pids.setdefault(s.backend, len(pids) + 1)
        for call in s.calls:
            for x in call.launches:
                tid = x.stream_id if x.stream_id is not None else 0
                lanes.add((pid, tid))
                args: dict[str, Any] = {
                    "call": call.index,
                    "params": s.params,
                    "nodeid": s.nodeid,
                    "correlation_id": x.correlation_id,
                }
                if x.grid is not None:
                    args["grid"] = list(x.grid)
                if x.block is not None:
                    args["block"] = list(x.block)
                if x.registers_per_thread is not None:
                    args["registers per thread"] = x.registers_per_thread
                if x.static_smem is not None or x.dynamic_smem is not None:
                    args["shared memory"] = (x.static_smem or 0) + (x.dynamic_smem or 0)
                    args["static smem"] = x.static_smem
                    args["dynamic smem"] = x.dynamic_smem
                if x.bytes is not None:
                    args["bytes"] = x.bytes
                if x.api_name:
                    args["launched by"] = x.api_name
                events.append(
                    {
                        "name": x.display_name,
                        "cat": x.kind,
                        "ph": "X",
                        "pid": pid,
                        "tid": tid,
                        "ts": (x.start_ns - origin) / 1000.0,
                        "dur": x.duration_ns / 1000.0,
                        "args": args,
                    }
                )
    meta: list[dict[str, Any]] = []
    for backend, pid in pids.items():
        meta.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": backend}})
    for pid, tid in sorted(lanes):
        meta.append(
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": f"stream {tid}"}}
        )
    return {"traceEvents": meta + events, "displayTimeUnit": "ns"}
