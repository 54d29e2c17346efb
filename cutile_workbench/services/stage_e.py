"""Stage E as a service: open the workspace, build the ratio table, plan the report set, write it.

Contract (both faces call exactly these, in this order):

- :func:`open_kernel` resolves ``<kernel>`` (``out_root`` → ``$CUTILE_KERNEL_OUT_ROOT`` → the
  recorded session; ``tilegym`` → ``$TILEGYM_PATH``) and refuses a kernel dir that does not exist
  (``InputError``: a typo in the kernel or the out root is a usage error, not BLOCKED).
- :func:`ratio_table` is E's table from the raw candidate log (the ``.full.txt`` tee when present)
  and the baselines (:func:`cutile_workbench.stages.e.e_table.load_e_table`: the one place it is assembled, cached
  on the hash of its inputs); ``Blocked`` without a candidate log, ``InputError`` for a malformed one.
- :func:`trust` is who ran each row (candidate identity) and which config the reference ran.
- :func:`plan` renders and validates the report set for an :class:`EReportRequest`; nothing is
  written (``Blocked`` when there is no usable data).
- :func:`write` writes a validated plan atomically; it refuses the read-only recorded session
  (:func:`read_only_reason`) and a plan that did not validate.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cutile_workbench.artifacts.candidate import resolve_candidate_backend
from cutile_workbench.artifacts.workspace import Workspace, open_workspace
from cutile_workbench.artifacts.writer import WriteResult, write_plan
from cutile_workbench.errors import InputError
from cutile_workbench.evidence.trust import KernelTrust

# the faces' noise-floor text (issue 18 §4), re-exported: faces read the history only through services
from cutile_workbench.history.noise import noise_lines as noise_lines
from cutile_workbench.history.noise import ratio_with_noise as ratio_with_noise
from cutile_workbench.model import PerfLog, RatioTable, ReportPlan
from cutile_workbench.stages.e.stats import RowSamples, baseline_records

if TYPE_CHECKING:
    from cutile_workbench.stages.e.e_table import ETable


@dataclass(frozen=True)
class EReportRequest:
    """What ``report e`` may override; ``None`` = recorded or inferred."""

    raw_log: Path | None = None  # a raw pytest log to sanitize instead of the workspace's own
    pytest_rc: int | None = None
    command: str | None = None  # the pytest command, for agent_e.md
    run_real_scripts: bool = True  # also run TileGym's validator scripts when a checkout is known


def open_kernel(
    kernel: str,
    *,
    out_root: Path | None,
    tilegym: Path | None,
    env: Mapping[str, str] = os.environ,
    strict: bool = True,
) -> Workspace:
    """The kernel's workspace; ``InputError`` when its dir does not exist (see module contract)."""
    ws = open_workspace(kernel, out_root=out_root, tilegym=tilegym, env=env, strict=strict)
    require_kernel_dir(ws)
    return ws


def require_kernel_dir(ws: Workspace) -> None:
    """A kernel dir that does not exist is a usage error (typo in kernel or out root), not BLOCKED."""
    if not ws.kernel_dir.is_dir():
        from cutile_workbench.artifacts.kernel_index import close_kernels

        close = close_kernels(ws.kernel, out_root=ws.kernel_dir.parent, tilegym=ws.tilegym, recorded=False)
        raise InputError(
            f"kernel dir does not exist (source: {ws.source}); check the kernel name and --out-root"
            + (f" (did you mean {' or '.join(close)}?)" if close else ""),
            path=str(ws.kernel_dir),
        )


def ratio_table(ws: Workspace, seed: int = 0, *, n_boot: int = 2000) -> RatioTable:
    """E's table from the raw candidate log (full tee if present) + baselines; InputError if malformed.

    Assembled by :func:`cutile_workbench.stages.e.e_table.load_e_table` (cached on its inputs); the noise floor per row
    (the run history) and the baseline labels (session.json) are added here, outside that cache, since
    their inputs are not the logs. ``n_boot=0`` skips the bootstrap (no CIs): the verdict and severity
    depend on the geomean only."""
    from cutile_workbench.stages.e.e_table import load_e_table

    return table_of(ws, load_e_table(ws, seed=seed, n_boot=n_boot))


def table_of(ws: Workspace, et: ETable) -> RatioTable:
    """:func:`ratio_table` of an E table the caller already loaded (its logs parsed once for every use)."""
    from cutile_workbench.history.noise import table_with_noise

    frameworks = set(et.candidate_frameworks)
    table = table_with_noise(et.table, ws.paths, frameworks)  # issue 18 §4
    return _with_baseline_labels(ws, table, frameworks)


def _with_baseline_labels(ws: Workspace, table: RatioTable, frameworks: set[str]) -> RatioTable:
    """Rows whose baseline key alone would mislead carry the label (a plain-Triton ``triton_tileir``)."""
    import dataclasses

    from cutile_workbench.artifacts.stand_ins import stand_ins_of
    from cutile_workbench.errors import WorkbenchError

    try:
        session = ws.session_meta()
    except WorkbenchError:
        session = None  # the loaders report a malformed session.json already
    labels = stand_ins_of(
        frameworks, session, {r.baseline_backend for r in table.matched if r.baseline_backend}
    )
    rows = [
        dataclasses.replace(r, baseline_label=label)
        if r.baseline_backend and (label := labels.baseline_label(r.baseline_backend)) != r.baseline_backend
        else r
        for r in table.rows
    ]
    return dataclasses.replace(table, rows=rows)


def trust(ws: Workspace, table: RatioTable, candidate: PerfLog | None = None) -> KernelTrust:
    """Candidate identity per row and the reference's config per matched row, from the workspace's captures,
    wrapper sources and analysis.json (:mod:`cutile_workbench.evidence.trust`); InputError for malformed captures.
    Computed once per content of its inputs, per config on a miss (issue 31): the one cached path
    ``report e`` and ``report f`` take too."""
    from cutile_workbench.evidence.trust import cached_kernel_trust
    from cutile_workbench.stages.e.e_table import load_e_table
    from cutile_workbench.stages.e.report import candidate_framework, framework_of

    # the cached E table's frameworks (no parse on its hit) when no parsed candidate log is given
    framework = (
        candidate_framework(candidate)
        if candidate is not None
        else framework_of(load_e_table(ws).candidate_frameworks)
    )
    return cached_kernel_trust(ws, table, candidate_framework=framework)


def row_samples(
    ws: Workspace, table: RatioTable, candidate: PerfLog | None = None
) -> dict[tuple[str, str], RowSamples]:
    """The raw forward samples behind each ``OK`` row of ``table`` (the candidate's, and those of the
    baseline E chose for the row), from the same logs as :func:`ratio_table` (``candidate``: that
    log when the caller parsed it already); rows whose logs carry no samples (TileGym's own harness
    prints medians only) are absent."""
    from cutile_workbench.stages.e.e_table import load_e_table

    if candidate is None:
        candidate = load_e_table(ws).candidate
    cand_frameworks = {r.framework for r in candidate.records}
    cand = {r.row_key: r for r in candidate.records}
    logs = ws.baseline_logs()
    indexes = {name: baseline_records(name, log, cand_frameworks) for name, log in logs.items()}
    out: dict[tuple[str, str], RowSamples] = {}
    for row in table.rows:
        key = (row.func_key, row.params)
        c = cand.get(key)
        b = indexes.get(row.baseline_backend or "", {}).get(key)
        cs = c.forward.samples_ms if c is not None and c.forward is not None else None
        bs = b.forward.samples_ms if b is not None and b.forward is not None else None
        if row.status == "OK" and cs and bs:
            out[key] = RowSamples(tuple(cs), tuple(bs))
    return out


def candidate_backend(ws: Workspace) -> str | None:
    """The candidate backend of ``ws``, in the one order F uses too (:mod:`cutile_workbench.artifacts.candidate`),
    read from the log E's table is built from (raw tee preferred). ``Blocked`` without a candidate log."""
    from cutile_workbench.stages.e.e_table import load_e_table

    # the cached E table's candidate log (parsed once per content, issue 26), not a second parse
    return resolve_candidate_backend(ws.session_meta(), load_e_table(ws).candidate)


def plan(ws: Workspace, request: EReportRequest = EReportRequest()) -> ReportPlan:
    """Render + validate E's report set (``cutile_workbench.stages.e.report.plan_e_report``); nothing is written."""
    from cutile_workbench.stages.e.report import plan_e_report

    raw_text = None
    if request.raw_log is not None:
        from cutile_workbench.artifacts.confine import read_regular

        raw_text = read_regular(request.raw_log, kind="perf log").decode("utf-8", "surrogateescape")
    return plan_e_report(
        ws,
        raw_log_text=raw_text,
        pytest_rc=request.pytest_rc,
        command=request.command,
        run_real_scripts=request.run_real_scripts,
        raw_log_path=request.raw_log,
    )


def read_only_reason(ws: Workspace, *, preview: str = "--dry-run") -> str:
    """Why nothing may be written into ``ws`` ("" = it may): the recorded sessions ship inside the
    package — opened as the default, or named with ``--out-root`` — and are never modified in place.
    ``preview`` is the flag that shows the work without writing (``--dry-run``; ``probe``: ``--print-command``)."""
    if ws.source == "recorded" or inside_recorded_sessions(ws.kernel_dir):
        return (
            f"the recorded session is read-only; copy it (cp -r {ws.kernel_dir} <dir>/) and pass "
            f"--out-root <dir>, or use {preview}"
        )
    return ""


def inside_recorded_sessions(path: Path) -> bool:
    """``path`` lies inside the installed ``profiles`` package (its recorded sessions): the one rule,
    :func:`cutile_workbench.artifacts.confine.in_recorded_sessions`."""
    from cutile_workbench.artifacts.confine import in_recorded_sessions

    return in_recorded_sessions(path)


def write(ws: Workspace, report: ReportPlan) -> WriteResult:
    """Write a validated plan (all-or-nothing, backed up, locked); InputError for a read-only workspace."""
    why = read_only_reason(ws)
    if why:
        raise InputError(why, path=str(ws.kernel_dir))
    return write_plan(report)
