"""Import an artifact tree (recorded sessions, TileGym out roots) into the history store.

Contract of :func:`import_kernel_dir`:
- Logs read, one run each: the candidate (``reports/agent_logs/perf_cutile_rs.full.txt``, else
  ``perf_cutile_rs.txt``), each analysis variant's candidate log, ``baseline_perf_cutile.txt`` and
  ``baseline_perf_triton_tileir.txt``. A log whose bytes were imported before is skipped without
  parsing; a new file is parsed (lenient parser: a malformed block becomes a note) and stored under
  its content key (:func:`~cutile_workbench.history.entries.run_key_of`), so importing twice, or importing
  what the runner already appended, adds nothing. An unreadable log is reported in ``skipped``,
  never raised; only a broken store raises (``InputError`` naming it).
- Provenance of an imported log (:func:`provenance_for_log`), each fact from the best source,
  named in ``origin``: the run's ``provenance`` events in ``workbench/events.jsonl`` (role-tagged
  by the runner, or the pytest session whose records match the log), then
  ``workbench/session.json`` (the runner's ``runs[role]`` or the recorder's ``versions``), then
  the log header (Python, torch, device name, TileGym's effective ``Namespace(...)`` settings, the
  first TileGym logger time stamp). Everything no source has is in ``unknown``.
- Run time: the provenance start, the matching session's ``session_start``, session.json's
  ``started_at``/``recorded_at``, the TileGym logger stamp (zone unknown, read as UTC), else
  unknown (never a file's mtime: a checkout sets those).
"""

from __future__ import annotations

import calendar
import hashlib
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cutile_workbench.artifacts.confine import read_regular
from cutile_workbench.artifacts.events import Event, read_events
from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.errors import InputError
from cutile_workbench.history.entries import complete_harness, config_results, entry_from_log
from cutile_workbench.history.provenance import HarnessInfo, Provenance, provenance_from_events
from cutile_workbench.history.provenance.gpu import GpuIdentity
from cutile_workbench.history.store import HistoryStore
from cutile_workbench.model import PerfLog


@dataclass(frozen=True)
class LogSource:
    role: str
    path: Path
    variant: str | None = None


@dataclass(frozen=True)
class ImportReport:
    """What one import did: new run keys, already known ones, skipped files (path, why), notes."""

    added: tuple[str, ...] = ()
    known: tuple[str, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()


def log_sources(paths: KernelPaths, variants: Sequence[str] = ()) -> list[LogSource]:
    """The logs of a kernel dir that hold runs (see module doc), those that exist."""
    out: list[LogSource] = []
    for cand in (paths.perf_full_log, paths.perf_cutile_rs):
        if cand.is_file():
            out.append(LogSource("candidate", cand))
            break
    for v in variants:
        for cand in (paths.perf_full_log_variant(v), paths.perf_cutile_rs_variant(v)):
            if cand.is_file():
                out.append(LogSource("candidate", cand, v))
                break
    for role, cand in (
        ("baseline_cutile", paths.baseline_cutile),
        ("baseline_triton_tileir", paths.baseline_triton_tileir),
    ):
        if cand.is_file():
            out.append(LogSource(role, cand))
    return out


# --------------------------------------------------------------------------- log header


_NAMESPACE_KEYS = {
    "warmup": "WARMUP",
    "rep": "REP",
    "min_rep": "MIN_REP",
    "initial_rep": "INITIAL_REP",
    "mode": "MODE",
    "cudagraph": "CUDAGRAPH",
    "cupti": "CUPTI",
}
_STAMP = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] \[tilegym")
_PLATFORM = re.compile(r"^platform \S+ -- Python (\S+), pytest-(\S+),")


@dataclass(frozen=True)
class HeaderFacts:
    """What a pytest log's header says (TileGym's prints its effective harness settings)."""

    python: str | None = None
    pytest: str | None = None
    rootdir: str | None = None
    torch: str | None = None
    device: str | None = None
    settings: Mapping[str, str] = field(default_factory=dict)
    first_stamp: float | None = None


def _norm_setting(value: str) -> str:
    value = value.strip().strip("'\"")
    return {"True": "1", "False": "0"}.get(value, value)


#: the lines of a log's head read for its header facts
_HEADER_LINES = 400


def _head_lines(text: str, n: int) -> list[str]:
    """``text.splitlines()[:n]`` without splitting the whole text (issue 31: a 1,000-config log is
    ~220,000 lines, split for its first 400): a prefix is split, grown until it holds more than ``n``
    lines (so its ``n``-th line ends inside it, whatever the line break)."""
    size = 64 * 1024
    while size < len(text):
        lines = text[:size].splitlines()
        if len(lines) > n:
            return lines[:n]
        size *= 4
    return text.splitlines()[:n]


def parse_log_header(text: str) -> HeaderFacts:
    """Header facts of a raw (or sanitized) pytest log; absent facts are None."""
    facts: dict[str, Any] = {}
    settings: dict[str, str] = {}
    stamp = None
    for line in _head_lines(text, _HEADER_LINES):
        if (m := _PLATFORM.match(line)) is not None:
            facts.setdefault("python", m.group(1))
            facts.setdefault("pytest", m.group(2))
        elif line.startswith("rootdir: "):
            facts.setdefault("rootdir", line[len("rootdir: ") :].strip())
        elif line.startswith("torch = "):
            facts.setdefault("torch", line[len("torch = ") :].strip())
        elif line.startswith("device = "):
            facts.setdefault("device", line[len("device = ") :].strip())
        if "Namespace(" in line and not settings:
            body = line[line.index("Namespace(") + len("Namespace(") :]
            for key, value in re.findall(r"(\w+)=('[^']*'|\[[^\]]*\]|[^,()]+)", body):
                if key in _NAMESPACE_KEYS:
                    settings[_NAMESPACE_KEYS[key]] = _norm_setting(value)
        if stamp is None and (m2 := _STAMP.search(line)) is not None:
            stamp = calendar.timegm(time.strptime(m2.group(1), "%Y-%m-%d %H:%M:%S"))
    if stamp is None:  # the first test may start after the header's 400 lines
        m3 = _STAMP.search(text)
        stamp = calendar.timegm(time.strptime(m3.group(1), "%Y-%m-%d %H:%M:%S")) if m3 else None
    return HeaderFacts(settings=settings, first_stamp=float(stamp) if stamp is not None else None, **facts)


# --------------------------------------------------------------------------- events.jsonl


@dataclass(frozen=True)
class _Segment:
    start: float | None
    finish: float | None
    nodeids: frozenset[str]
    events: tuple[Event, ...]


def _segments(evs: Sequence[Event]) -> list[_Segment]:
    """Split an event stream into pytest sessions (at each ``session_start``)."""
    out: list[_Segment] = []
    cur: list[Event] = []

    def close() -> None:
        if cur:
            start = next((e.ts for e in cur if e.event == "session_start"), None)
            finish = next((e.ts for e in reversed(cur) if e.event == "session_finish"), None)
            ids = frozenset(str(e.get("nodeid")) for e in cur if e.event == "record")
            out.append(_Segment(start, finish, ids, tuple(cur)))

    for ev in evs:
        if ev.event == "session_start" and any(e.event == "session_start" for e in cur):
            close()
            cur = []
        cur.append(ev)
    close()
    return out


def run_events(evs: Sequence[Event], role: str, log: PerfLog | None) -> tuple[list[Event], str] | None:
    """The events of the run behind one log: the runner's role-tagged ones, else the best-matching session."""
    tagged = [e for e in evs if e.get("role") == role]
    if tagged:
        return tagged, f"events.jsonl (role {role})"
    ids = {r.nodeid for r in log.records} if log is not None else set()
    untagged = [e for e in evs if e.get("role") is None]
    best = max(_segments(untagged), key=lambda s: len(s.nodeids & ids), default=None)
    if best is None or not ids or not best.nodeids & ids:
        return None
    return list(best.events), "events.jsonl (the pytest session whose records match the log)"


# --------------------------------------------------------------------------- session.json


def _parse_time(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    for fmt in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%d %H:%M:%S UTC", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"):
        try:
            return float(calendar.timegm(time.strptime(text.strip(), fmt)))
        except ValueError:
            continue
    return None


def _str(v: Any) -> str | None:
    return None if v in (None, "") else str(v)


@dataclass
class _Facts:
    """Facts gathered for one log, each with its origin."""

    values: dict[str, Any] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)

    def put(self, key: str, value: Any, origin: str) -> None:
        if value is not None and key not in self.values:
            self.values[key] = value
            self.origin[key] = origin


def _session_facts(meta: Mapping[str, Any], role: str, facts: _Facts) -> None:
    runs = meta.get("runs")
    run = runs.get(role) if isinstance(runs, dict) else None
    if isinstance(run, dict):  # written by cutile_workbench.run.results.write_results
        where = f"session.json runs.{role}"
        gpu = _str(run.get("gpu"))
        if gpu:
            name, _, driver = gpu.partition(",")
            facts.put("gpu_name", name.strip() or None, where)
            facts.put("driver", driver.strip() or None, where)
        facts.put("host", _str(run.get("host")), where)
        facts.put("started_at", _parse_time(run.get("started_at")), where)
        env = run.get("env_overrides")
        if isinstance(env, dict):
            facts.put("settings", {str(k): str(v) for k, v in env.items()}, where)
        if run.get("workbench_harness") is True:
            facts.put("harness_name", "workbench", where + " (workbench_harness)")
    versions = meta.get("versions")
    if isinstance(versions, dict):  # written by scripts.record_profiles (the recorded sessions)
        where = "session.json versions"
        facts.put("gpu_name", _str(versions.get("gpu")), where)
        facts.put("driver", _str(versions.get("driver")), where)
        facts.put("python", _str(versions.get("python")), where)
        facts.put("torch", _str(versions.get("torch")), where)
        facts.put("torch_cuda", _str(versions.get("torch_cuda")), where)
        facts.put("host", _str(versions.get("host")), where)
    facts.put("started_at", _parse_time(meta.get("recorded_at")), "session.json recorded_at")
    env = meta.get("harness_env")
    if isinstance(env, dict):
        facts.put("settings", {str(k): str(v) for k, v in env.items()}, "session.json harness_env")
    facts.put("harness_detail", _str(meta.get("harness")), "session.json harness")


def provenance_for_log(
    role: str,
    log_text: str,
    log: PerfLog | None,
    *,
    session: Mapping[str, Any] | None,
    events: Sequence[Event] | None,
    source: str = "<log>",
) -> tuple[Provenance, float | None, str]:
    """(provenance, recorded_at, where recorded_at came from) of one imported log (see module doc)."""
    live: Provenance | None = None
    facts = _Facts()
    matched = run_events(events, role, log) if events else None
    if matched is not None:
        evs, where = matched
        live = provenance_from_events(evs, source=source)
        seg = _segments(evs)
        if seg and seg[0].start is not None:
            facts.put("started_at", seg[0].start, f"{where}: session_start")
        if seg and seg[-1].finish is not None:
            facts.put("finished_at", seg[-1].finish, f"{where}: session_finish")
    if session:
        _session_facts(session, role, facts)
    header = parse_log_header(log_text)
    facts.put("python", header.python, "log header (platform line)")
    facts.put("torch", header.torch, "log header (torch = ...)")
    facts.put("gpu_name", header.device, "log header (device = ...)")
    if header.settings:
        facts.put("settings", dict(header.settings), "log header (TileGym's effective Namespace settings)")
    facts.put(
        "started_at", header.first_stamp, "log header (first TileGym logger stamp; zone unknown, read as UTC)"
    )
    prov = _fill(live, facts, header) if live is not None else _imported(facts)
    if log is not None:
        prov = complete_harness(prov, config_results(log)[0])
    if live is not None and prov.started_at is not None:
        return prov, prov.started_at, "provenance event"
    at = facts.values.get("started_at")
    return prov, at, facts.origin.get("started_at", "unknown: no source records the run's time")


def _imported(facts: _Facts) -> Provenance:
    """A provenance from session.json and log-header facts only (no provenance event)."""
    v, o = facts.values, facts.origin
    unknown: dict[str, str] = {}
    gpu = None
    if v.get("gpu_name") or v.get("driver"):
        gpu = GpuIdentity(
            name=v.get("gpu_name"),
            uuid=None,
            pci_bus_id=None,
            driver_version=v.get("driver"),
            cuda_driver_version=None,
            mig_mode=None,
            mig_pending=None,
            selected_by=f"imported ({o.get('gpu_name') or o.get('driver')})",
        )
    else:
        unknown["gpu"] = "not recorded (no provenance event, session.json or device line)"
    for key in ("before", "after"):
        unknown[key] = "not recorded: no clock snapshot before provenance capture existed"
    settings = v.get("settings") or {}
    harness = HarnessInfo(
        name=v.get("harness_name", "unknown"), settings=settings, detail=v.get("harness_detail") or ""
    )
    prov = Provenance(
        source="imported",
        gpu=gpu,
        harness=harness,
        python=v.get("python"),
        torch=v.get("torch"),
        torch_cuda=v.get("torch_cuda"),
        host=v.get("host"),
        started_at=v.get("started_at"),
        finished_at=v.get("finished_at"),
        origin=dict(o),
    )
    for name in (
        "tilegym_commit",
        "cutile_rs_lib_sha256",
        "workbench_version",
        "workbench_commit",
        "host",
        "python",
        "torch",
        "torch_cuda",
        "tilegym_dir",
        "tilegym_version",
    ):
        if getattr(prov, name) is None:
            unknown[name] = "not recorded in this artifact tree"
    return replace(prov, unknown=unknown)


def _fill(live: Provenance, facts: _Facts, header: HeaderFacts) -> Provenance:
    """A live provenance completed with header facts it lacks (TileGym's effective settings)."""
    harness = live.harness
    origin = dict(live.origin)
    if harness is not None and header.settings:
        added = {k: val for k, val in header.settings.items() if k not in harness.settings}
        if added:
            harness = replace(harness, settings={**harness.settings, **added})
            origin["harness.settings"] = "events + log header (TileGym's effective Namespace settings)"
    started = live.started_at if live.started_at is not None else facts.values.get("started_at")
    return replace(live, harness=harness, origin=origin, started_at=started)


# --------------------------------------------------------------------------- import


def read_context(paths: KernelPaths, notes: list[str]) -> tuple[dict[str, Any] | None, list[Event] | None]:
    """session.json and events.jsonl of a kernel dir, each None when absent or unusable (noted)."""
    return _read_session(paths, notes), _read_events(paths, notes)


def _read_session(paths: KernelPaths, notes: list[str]) -> dict[str, Any] | None:
    from cutile_workbench.artifacts.confine import read_regular_text
    from cutile_workbench.infra.jsonutil import loads_located

    p = paths.session_json
    if not (p.exists() or p.is_symlink()):
        return None
    try:  # linked out of the kernel dir: UnsafePath (exit 2); a FIFO, device or bad JSON: noted, not used
        data = loads_located(read_regular_text(p, kind="session.json", kernel_dir=paths.root), str(p))
    except InputError as exc:
        notes.append(f"{p}: unreadable, its facts are not used ({exc.message})")
        return None
    return data if isinstance(data, dict) else None


def _read_events(paths: KernelPaths, notes: list[str]) -> list[Event] | None:
    from cutile_workbench.artifacts.confine import confine_read

    p = paths.events_jsonl
    if not (p.exists() or p.is_symlink()):
        return None
    confine_read(paths.root, p)  # linked out of the kernel dir: UnsafePath (exit 2)
    try:
        return read_events(p, allow_truncated_tail=True)
    except InputError as exc:
        notes.append(f"events not used: {exc}")
        return None


def import_kernel_dir(
    store: HistoryStore,
    paths: KernelPaths,
    *,
    variants: Sequence[str] = (),
    parsed: Mapping[str, PerfLog] | None = None,
) -> ImportReport:
    """Import every run log of ``paths`` into ``store`` (see module doc). ``parsed``: logs already
    parsed by the caller, by path string, to avoid parsing them twice."""
    from cutile_workbench.artifacts.perflog.parser import parse_perf_log

    added: list[str] = []
    known: list[str] = []
    skipped: list[tuple[str, str]] = []
    notes: list[str] = []
    session: dict[str, Any] | None = None
    evs: list[Event] | None = None
    loaded_context = False
    for src in log_sources(paths, variants):
        try:  # a log linked out of the kernel dir raises UnsafePath (exit 2); a FIFO/device is skipped unread
            data = read_regular(src.path, kind="perf log", kernel_dir=paths.root)
        except InputError as exc:
            skipped.append((str(src.path), f"unreadable: {exc.message}"))
            continue
        digest = hashlib.sha256(data).hexdigest()
        rel = str(src.path.relative_to(paths.root)) if src.path.is_relative_to(paths.root) else str(src.path)
        key = store.run_for_file(digest)
        if key is not None:
            store.note_source(key, src.role, rel, digest)
            known.append(key)
            continue
        if not loaded_context:
            (session, evs), loaded_context = read_context(paths, notes), True
        text = data.decode("utf-8", errors="replace")
        log = (parsed or {}).get(str(src.path))
        if log is None:
            try:
                log = parse_perf_log(src.path, text=text, strict=False)
            except InputError as exc:
                skipped.append((str(src.path), str(exc)))
                continue
            # what the lenient parse dropped (a bad value names file:line and key) is said, never silent
            notes.extend(f"not imported: {n}" for n in log.notes)
        prov, at, at_origin = provenance_for_log(src.role, text, log, session=session, events=evs, source=rel)
        entry = entry_from_log(
            paths.kernel,
            src.role,
            log,
            prov,
            source="import",
            log_sha256=digest,
            recorded_at=at,
            recorded_at_origin=at_origin,
            notes=(f"variant {src.variant}",) if src.variant else (),
        )
        if entry is None:
            skipped.append((str(src.path), "no record with a finite positive median"))
            continue
        (added if store.add(entry, source_path=rel) else known).append(entry.run_key)
    return ImportReport(tuple(added), tuple(known), tuple(skipped), tuple(notes))
