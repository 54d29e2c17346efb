"""The overview of an out root as a service: what ``overview`` and the TUI's first screen read.

Contract:
- :func:`overview` lists every kernel dir of ``root`` (:func:`cutile_workbench.stages.e.overview.kernel_dirs`)
  and builds one :class:`~cutile_workbench.stages.e.overview.OverviewRow` each, in the order
  :func:`~cutile_workbench.stages.e.overview.sort_rows` gives for ``sort``. It never raises on a kernel dir's
  content: whatever goes wrong inside one dir is that row's ``problem``. An out root that does
  not exist or is not a directory is an ``InputError`` (key ``--out-root``).
- E's numbers come from the kernel's written ``reports/performance.md`` when it is current
  (newer than the perf logs it was computed from), else from the logs through the one E-table
  door (:func:`cutile_workbench.services.stage_e.ratio_table`, computed without the bootstrap: the
  verdict and severity depend on the geomean only); ``e_source`` says which.
- The regression column reads the kernel's ``workbench/history.sqlite`` when one exists (never
  creates or imports into it: the overview writes nothing); ``"no history"`` otherwise.
- Nothing is written into the out root; a kernel dir is only read. Each row is cached in the user's
  cache dir (``$CUTILE_WORKBENCH_CACHE``, else ``$XDG_CACHE_HOME``/``~/.cache`` +
  ``/cutile-workbench/overview/``), keyed on the kernel dir's resolved path and valid only while the
  *content* (sha256, plus size and mtime) of every file the row was computed from is unchanged (:func:`row_signature`;
  never size or mtime: an edit that keeps both is seen): a re-listing of an unchanged campaign
  parses no log. The row is stored in the plain, validated format of
  :mod:`cutile_workbench.artifacts.derive_cache` (an edited or foreign entry is a miss); at most
  :data:`KEEP_ROWS` rows are kept, least recently used pruned. ``cache=False`` bypasses it; a cache
  that cannot be read or written is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from cutile_workbench.artifacts.workspace import Workspace, open_workspace
from cutile_workbench.errors import InputError, WorkbenchError
from cutile_workbench.infra.atomicio import atomic_write_bytes
from cutile_workbench.model import RatioTable
from cutile_workbench.stages.e.overview import E_SOURCE_SHORT as E_SOURCE_SHORT
from cutile_workbench.stages.e.overview import (
    MAX_REPORT_BYTES,
    SCHEMA_VERSION,
    f_verdicts,
    kernel_dirs,
    performance_md_is_current,
    read_performance_md,
)
from cutile_workbench.stages.e.overview import SEVERITY_ORDER as SEVERITY_ORDER
from cutile_workbench.stages.e.overview import Overview as Overview
from cutile_workbench.stages.e.overview import OverviewRow as OverviewRow
from cutile_workbench.stages.e.overview import geomean_strip as geomean_strip
from cutile_workbench.stages.e.overview import sort_rows as sort_rows
from cutile_workbench.stages.e.stats import round4
from cutile_workbench.stages.session.kernel import KernelSession

SORT_KEYS = ("geomean", "kernel", "severity", "last_run")


def _read_report(path: Path, kernel_dir: Path) -> str | None:
    """A report of the kernel dir through the one confinement rule (regular file, inside the kernel
    dir, capped); None when it is absent or refused (the row then says so or recomputes)."""
    from cutile_workbench.artifacts.confine import read_regular

    try:
        return read_regular(path, kind="report", kernel_dir=kernel_dir, cap=MAX_REPORT_BYTES).decode(
            "utf-8", "replace"
        )
    except WorkbenchError:
        return None


def _first_line(path: Path, kernel_dir: Path) -> str | None:
    text = _read_report(path, kernel_dir)
    return None if text is None else text.split("\n", 1)[0].rstrip("\r")


def _last_run(ws: Workspace) -> str | None:
    try:
        meta = ws.session_meta()
    except WorkbenchError:
        return None
    runs = meta.get("runs") if isinstance(meta, dict) else None
    if not isinstance(runs, dict):
        return None
    starts = [
        str(r["started_at"])
        for r in runs.values()
        if isinstance(r, dict) and isinstance(r.get("started_at"), str)
    ]
    return max(starts) if starts else None


def _regression(ws: Workspace) -> str:
    from cutile_workbench.history.query import load_history
    from cutile_workbench.history.store import HistoryStore

    path = ws.paths.root / "workbench" / "history.sqlite"
    if not path.is_file() or path.is_symlink():
        return "no history"
    try:
        with HistoryStore.open(path, read_only=True) as store:  # the overview writes nothing
            hist = load_history(store, ws.kernel)
    except WorkbenchError as exc:
        return f"history unreadable: {exc.message}"
    if len(hist.runs) < 2:
        return "one run only"
    last = hist.runs[-1].run_key
    regressed = [
        s
        for s in hist.series
        if s.latest is not None and s.points[-1].run_key == last and s.latest.change == "regression"
    ]
    return f"{len(regressed)} config(s) regressed" if regressed else "none"


def _from_table(table: RatioTable) -> dict[str, object]:
    valid = [r for r in table.rows if r.ratio is not None]
    worst = max(valid, key=lambda r: r.ratio or 0.0) if valid else None
    return {
        "e_verdict": table.verdict,
        "geomean": round4(table.geomean) if table.geomean is not None else None,
        "severity": table.severity,
        "configs": len(table.rows),
        "matched": len(valid),
        "missing": len(table.rows) - len(valid),
        "worst_config": worst.params if worst else None,
        "worst_ratio": worst.ratio if worst else None,
    }


def kernel_row(
    root: Path, kdir: Path, *, table_of: Callable[[Workspace], RatioTable] | None = None
) -> OverviewRow:
    """One kernel dir as a row; any failure inside it becomes ``problem`` (module contract)."""
    from cutile_workbench.services import stage_e
    from cutile_workbench.services.history import ratio_comparability
    from cutile_workbench.stages.e.report import stand_in_frameworks

    kernel, path = kdir.name, str(kdir)
    try:
        ws = open_workspace(kernel, out_root=root, strict=False)
    except WorkbenchError as exc:
        return OverviewRow(kernel, path, problem=str(exc))
    notes: list[str] = [f"{g.what}: {g.path}" for g in ws.gaps if g.severity == "error"]
    fields: dict[str, object] = {
        "f_verdicts": f_verdicts(ws.paths.reports_dir, lambda p: _first_line(p, ws.paths.root)),
        "last_run": _last_run(ws),
    }
    try:
        # the kernel dir's session: one E table (cached on its inputs), its logs parsed once for every column
        session = KernelSession.of(ws)
        et = session.e_table(n_boot=0)
        candidate = et.candidate
        stand_in = stand_in_frameworks(candidate)
        fields["candidate"] = (
            ", ".join(stand_in) if stand_in else ("cutile-rs" if candidate.records else None)
        )
        fields["stand_in"] = bool(stand_in)
    except WorkbenchError as exc:
        return OverviewRow(kernel, path, problem=f"candidate log: {exc}", notes=tuple(notes), **fields)  # type: ignore[arg-type]
    report = ws.paths.reports_dir / "performance.md"
    # E reads the full tee when the runner left one (perf_cutile_rs.txt is then E's own sanitized
    # output, rewritten in the same write set as performance.md), else perf_cutile_rs.txt itself
    full = ws.paths.perf_full_log
    inputs = [
        full if full.exists() else ws.paths.perf_cutile_rs,
        ws.paths.baseline_cutile,
        ws.paths.baseline_triton_tileir,
    ]
    same_write = () if full.exists() else (ws.paths.perf_cutile_rs,)
    summary = read_performance_md(_read_report(report, ws.paths.root) or "") if report.is_file() else None
    table: RatioTable | None = None
    if summary is not None and performance_md_is_current(report, inputs, written_with=same_write):
        fields.update(
            e_source="performance.md",
            e_verdict=summary.verdict,
            geomean=summary.geomean,
            severity=summary.severity,
            configs=summary.rows,
            matched=summary.matched,
            missing=summary.missing,
            worst_config=summary.worst_config,
            worst_ratio=summary.worst_ratio,
            identity=summary.identity,
        )
        if summary.identity is None:  # a performance.md without the identity line: the captures say it
            fields["identity"] = _identity(session, session.shown(et))
    else:
        try:
            table = table_of(ws) if table_of is not None else stage_e.table_of(ws, et)
        except WorkbenchError as exc:
            return OverviewRow(kernel, path, problem=f"E table: {exc}", notes=tuple(notes), **fields)  # type: ignore[arg-type]
        fields.update(_from_table(table))
        fields["identity"] = _identity(session, table)
        fields["e_source"] = "logs (performance.md stale)" if summary is not None else "logs"
    try:
        comp = ratio_comparability(
            ws,
            table,
            used=None if table is not None else set(ws.baseline_logs()),
            logs=(candidate, et.baselines),
        )
        fields["comparability"], fields["comparability_text"] = comp.state, comp.short
    except WorkbenchError as exc:
        notes.append(f"comparability: {exc}")
    fields["regression"] = _regression(ws)
    return OverviewRow(kernel, path, notes=tuple(notes), **fields)  # type: ignore[arg-type]


def _identity(session: KernelSession, table: RatioTable) -> str:
    """Who the candidate's launches really are (issue 18's trust rules, from the captures): the session's
    trust summary, the same one ``table`` prints under its rows."""
    try:
        return session.trust(table).summary.removeprefix("WARNING: ").removeprefix("candidate identity: ")
    except WorkbenchError as exc:
        return f"unknown: {exc}"


#: what a row is computed from, relative to the kernel dir (globs): any change recomputes the row
SIGNATURE_GLOBS = (
    "perf_cutile_rs*.txt",
    "baseline_perf_*.txt",
    "reports/performance.md",
    "reports/perf_investigation_*.md",
    "reports/agent_logs/perf_cutile_rs*.full.txt",
    "workbench/session.json",
    "workbench/events.jsonl",
    "workbench/history.sqlite",
    "workbench/launches.json.gz",
    "reference/analysis.json",
    "reports/.workbench-journal*",
)


#: overview rows kept in the user cache (least recently used pruned)
KEEP_ROWS = 1024


def row_signature(kdir: Path) -> list[list[object]]:
    """``[relpath, size, mtime_ns, sha256]`` of every file a row reads (module contract), sorted; a
    file that is not a regular file (a link is not followed) is listed as such. The mtime stays in it
    because a row depends on it (a report older than its logs is stale), the digest because content
    is what a row is computed from."""
    from cutile_workbench.artifacts.launch_store import _file_sha256

    out: list[list[object]] = []
    for pattern in SIGNATURE_GLOBS:
        for p in kdir.glob(pattern):
            try:
                st = p.lstat()
            except OSError:
                continue
            digest = _file_sha256(p) or f"mode {st.st_mode:o}"
            out.append([p.relative_to(kdir).as_posix(), st.st_size, st.st_mtime_ns, digest])
    return sorted(out, key=lambda e: str(e[0]))


def cache_dir(env: Mapping[str, str] = os.environ) -> Path:
    if env.get("CUTILE_WORKBENCH_CACHE"):
        return Path(env["CUTILE_WORKBENCH_CACHE"]) / "overview"
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "cutile-workbench" / "overview"


def _cache_file(kdir: Path, env: Mapping[str, str]) -> Path:
    key = hashlib.sha256(str(kdir.resolve()).encode()).hexdigest()[:32]
    return cache_dir(env) / f"{key}.json"


def _cached_row(kdir: Path, signature: list[list[object]], env: Mapping[str, str]) -> OverviewRow | None:
    from cutile_workbench.artifacts.derive_cache import CacheMiss, decode

    path = _cache_file(kdir, env)
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > 1 << 20:
            return None
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("schema_version") != SCHEMA_VERSION or doc.get("signature") != signature:
            return None
        row = decode(doc["row"], OverviewRow)
        os.utime(path)  # least recently used is pruned first
        return row if isinstance(row, OverviewRow) else None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError, CacheMiss):
        return None  # a cache is a convenience: anything odd in it means "recompute"


def _store_row(kdir: Path, signature: list[list[object]], row: OverviewRow, env: Mapping[str, str]) -> None:
    from cutile_workbench.artifacts.derive_cache import encode

    path = _cache_file(kdir, env)
    try:
        body = encode(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {"schema_version": SCHEMA_VERSION, "signature": signature, "row": body}
        atomic_write_bytes(path, json.dumps(doc, allow_nan=False).encode("utf-8"), None, durable=False)
        rows = sorted(path.parent.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in rows[KEEP_ROWS:]:
            old.unlink(missing_ok=True)
    except (OSError, ValueError):  # not writable, or a value the plain format does not hold
        pass


def overview(
    root: Path, *, sort: str = "geomean", cache: bool = True, env: Mapping[str, str] = os.environ
) -> Overview:
    """Every kernel dir of ``root`` as a row (module contract)."""
    if sort not in SORT_KEYS:
        raise InputError(f"unknown sort key {sort!r} (one of: {', '.join(SORT_KEYS)})", key="--sort")
    if not root.is_dir():
        raise InputError("out root does not exist or is not a directory", path=str(root), key="--out-root")
    rows = []
    for kdir in kernel_dirs(root):
        signature = row_signature(kdir) if cache else []
        if cache:
            hit = _cached_row(kdir, signature, env)
            if hit is not None:
                rows.append(hit)
                continue
        try:
            row = kernel_row(root, kdir)
            rows.append(row)
            if cache and row_signature(kdir) == signature:  # not changed while we read it
                _store_row(kdir, signature, row, env)
        except (OSError, ValueError, json.JSONDecodeError) as exc:  # a dir changing under us: say so, go on
            rows.append(OverviewRow(kdir.name, str(kdir), problem=f"{type(exc).__name__}: {exc}"))
        except Exception as exc:  # a bug on one kernel's content must not hide the other kernels
            rows.append(
                OverviewRow(
                    kdir.name,
                    str(kdir),
                    problem=f"internal error (please report): {type(exc).__name__}: {exc}",
                )
            )
    return Overview(str(root), tuple(sort_rows(rows, sort)))
