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
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cutile_workbench.artifacts.workspace import Workspace as Workspace
from cutile_workbench.artifacts.workspace import open_workspace
from cutile_workbench.artifacts.writer import WriteResult as WriteResult
from cutile_workbench.artifacts.writer import write_plan
from cutile_workbench.errors import InputError
from cutile_workbench.evidence.trust import KernelTrust as KernelTrust

# the faces' noise-floor text (issue 18 §4), re-exported: faces read the history only through services
from cutile_workbench.history.noise import noise_lines as noise_lines
from cutile_workbench.history.noise import ratio_with_noise as ratio_with_noise
from cutile_workbench.model import PerfLog, RatioRow, RatioTable, ReportPlan
from cutile_workbench.stages.e.stats import RowSamples as RowSamples
from cutile_workbench.stages.e.stats import round4 as round4
from cutile_workbench.stages.e.stats import subset_summary as subset_summary
from cutile_workbench.stages.session.kernel import KernelSession

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


def ratio_table(ws: Workspace | KernelSession, seed: int = 0, *, n_boot: int = 2000) -> RatioTable:
    """E's table from the raw candidate log (full tee if present) + baselines; InputError if malformed.

    The session's table as every face shows it (:meth:`KernelSession.table`: E's table from
    :func:`cutile_workbench.stages.e.e_table.load_e_table`, once per session, plus the noise floor per
    row and the baseline labels). ``n_boot=0`` skips the bootstrap (no CIs): the verdict and severity
    depend on the geomean only."""
    return KernelSession.of(ws).table(seed=seed, n_boot=n_boot)


def table_of(ws: Workspace | KernelSession, et: ETable) -> RatioTable:
    """:func:`ratio_table` of an E table the caller already loaded (its logs parsed once for every use)."""
    return KernelSession.of(ws).shown(et)


def trust(
    ws: Workspace | KernelSession, table: RatioTable | None = None, candidate: PerfLog | None = None
) -> KernelTrust:
    """Candidate identity per row and the reference's config per matched row (:meth:`KernelSession.trust`:
    once per session, and once per content of its inputs in the derived-facts cache); InputError for
    malformed captures. ``candidate`` is accepted for the old callers: the session's is the same log."""
    session = KernelSession.of(ws)
    return session.trust(None if table is None or session.is_shown(table) else table)


def row_samples(
    ws: Workspace | KernelSession, table: RatioTable, candidate: PerfLog | None = None
) -> dict[tuple[str, str], RowSamples]:
    """The raw forward samples behind each ``OK`` row of ``table`` (the candidate's, and those of the
    baseline E chose for the row), from the same logs as :func:`ratio_table`; rows whose logs carry no
    samples (TileGym's own harness prints medians only) are absent."""
    session = KernelSession.of(ws)
    return session.samples(None if session.is_shown(table) else table)


def output_block(transcript_text: str) -> str:
    """The return protocol's ``<VALIDATOR_OUTPUT>`` block (:func:`cutile_workbench.stages.e.validators.output_block`)."""
    from cutile_workbench.stages.e.validators import output_block as block

    return block(transcript_text)


def harness_summary(rows: list[RatioRow]) -> str:
    """Which harness measured the rows (the line every face prints: :func:`cutile_workbench.stages.e.report.harness_summary`)."""
    from cutile_workbench.stages.e.report import harness_summary as summary

    return summary(rows)


def candidate_frameworks(ws: Workspace | KernelSession) -> tuple[str, ...]:
    """The frameworks of the candidate's records (the session's E table: no parse on a cache hit)."""
    return KernelSession.of(ws).candidate_frameworks()


def candidate_backend(ws: Workspace | KernelSession) -> str | None:
    """The candidate backend of ``ws``, in the one order F uses too (:mod:`cutile_workbench.artifacts.candidate`),
    read from the log E's table is built from (raw tee preferred). ``Blocked`` without a candidate log."""
    return KernelSession.of(ws).candidate_backend()


def plan(ws: Workspace | KernelSession, request: EReportRequest = EReportRequest()) -> ReportPlan:
    """Render + validate E's report set (``cutile_workbench.stages.e.report.plan_e_report``); nothing is
    written. Without a ``raw_log`` override it is planned on the session's facts (E's table, trust)."""
    from cutile_workbench.stages.e.report import plan_e_report

    session = KernelSession.of(ws)
    ws = session.ws
    if request.raw_log is None:
        return plan_e_report(
            ws,
            etable=session.e_table(),
            trust=session.trust(),
            pytest_rc=request.pytest_rc,
            command=request.command,
            run_real_scripts=request.run_real_scripts,
        )
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


def read_only_reason(ws: Workspace | KernelSession, *, preview: str = "--dry-run") -> str:
    """Why nothing may be written into ``ws`` ("" = it may): the recorded sessions ship inside the
    package — opened as the default, or named with ``--out-root`` — and are never modified in place.
    ``preview`` is the flag that shows the work without writing (``--dry-run``; ``probe``: ``--print-command``)."""
    ws = KernelSession.of(ws).ws
    if ws.source == "recorded" or inside_recorded_sessions(ws.kernel_dir):
        return (
            f"the recorded session is read-only; copy it (cp -r {shlex.quote(str(ws.kernel_dir))} <dir>/) and pass "
            f"--out-root <dir>, or use {preview}"
        )
    return ""


def inside_recorded_sessions(path: Path) -> bool:
    """``path`` lies inside the installed ``profiles`` package (its recorded sessions): the one rule,
    :func:`cutile_workbench.artifacts.confine.in_recorded_sessions`."""
    from cutile_workbench.artifacts.confine import in_recorded_sessions

    return in_recorded_sessions(path)


def write(ws: Workspace | KernelSession, report: ReportPlan) -> WriteResult:
    """Write a validated plan (all-or-nothing, backed up, locked); InputError for a read-only workspace."""
    ws = KernelSession.of(ws).ws
    why = read_only_reason(ws)
    if why:
        raise InputError(why, path=str(ws.kernel_dir))
    return write_plan(report)
