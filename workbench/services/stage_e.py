"""Stage E as a service: open the workspace, build the ratio table, plan the report set, write it.

Contract (both faces call exactly these, in this order):

- :func:`open_kernel` resolves ``<kernel>`` (``out_root`` → ``$CUTILE_KERNEL_OUT_ROOT`` → the
  recorded session; ``tilegym`` → ``$TILEGYM_PATH``) and refuses a kernel dir that does not exist
  (``InputError``: a typo in the kernel or the out root is a usage error, not BLOCKED).
- :func:`ratio_table` is E's table from the raw candidate log (the ``.full.txt`` tee when present)
  and the baselines (:func:`workbench.e_table.load_e_table`: the one place it is assembled, cached
  on the hash of its inputs); ``Blocked`` without a candidate log, ``InputError`` for a malformed one.
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

from workbench.errors import InputError
from workbench.model import RatioTable, ReportPlan
from workbench.workspace import Workspace, open_workspace
from workbench.writer import WriteResult, write_plan


@dataclass(frozen=True)
class EReportRequest:
    """What ``report e`` may override; ``None`` = recorded or inferred."""

    raw_log: Path | None = None  # a raw pytest log to sanitize instead of the workspace's own
    pytest_rc: int | None = None
    command: str | None = None  # the pytest command, for agent_e.md
    run_real_scripts: bool = True  # also run TileGym's validator scripts when a checkout is known


def open_kernel(kernel: str, *, out_root: Path | None, tilegym: Path | None,
                env: Mapping[str, str] = os.environ, strict: bool = True) -> Workspace:
    """The kernel's workspace; ``InputError`` when its dir does not exist (see module contract)."""
    ws = open_workspace(kernel, out_root=out_root, tilegym=tilegym, env=env, strict=strict)
    require_kernel_dir(ws)
    return ws


def require_kernel_dir(ws: Workspace) -> None:
    """A kernel dir that does not exist is a usage error (typo in kernel or out root), not BLOCKED."""
    if not ws.kernel_dir.is_dir():
        raise InputError(f"kernel dir does not exist (source: {ws.source}); check the kernel name and --out-root",
                         path=str(ws.kernel_dir))


def ratio_table(ws: Workspace, seed: int = 0) -> RatioTable:
    """E's table from the raw candidate log (full tee if present) + baselines; InputError if malformed."""
    from workbench.e_table import load_e_table

    return load_e_table(ws, seed=seed).table


def plan(ws: Workspace, request: EReportRequest = EReportRequest()) -> ReportPlan:
    """Render + validate E's report set (``workbench.report_e.plan_e_report``); nothing is written."""
    from workbench.report_e import plan_e_report

    raw_text = None
    if request.raw_log is not None:
        try:
            raw_text = request.raw_log.read_bytes().decode("utf-8", "surrogateescape")
        except OSError as exc:
            raise InputError(f"cannot read raw log: {exc.strerror or exc}", path=str(request.raw_log)) from None
    return plan_e_report(ws, raw_log_text=raw_text, pytest_rc=request.pytest_rc, command=request.command,
                         run_real_scripts=request.run_real_scripts, raw_log_path=request.raw_log)


def read_only_reason(ws: Workspace, *, preview: str = "--dry-run") -> str:
    """Why nothing may be written into ``ws`` ("" = it may): the recorded sessions ship inside the
    package — opened as the default, or named with ``--out-root`` — and are never modified in place.
    ``preview`` is the flag that shows the work without writing (``--dry-run``; ``probe``: ``--print-command``)."""
    if ws.source == "recorded" or inside_recorded_sessions(ws.kernel_dir):
        return (f"the recorded session is read-only; copy it (cp -r {ws.kernel_dir} <dir>/) and pass "
                f"--out-root <dir>, or use {preview}")
    return ""


def inside_recorded_sessions(path: Path) -> bool:
    """``path`` lies inside the installed ``profiles`` package (its recorded sessions)."""
    try:
        import profiles
    except ImportError:
        return False
    base = Path(profiles.__file__).resolve().parent
    try:
        Path(path).resolve().relative_to(base)
    except ValueError:
        return False
    return True


def write(ws: Workspace, report: ReportPlan) -> WriteResult:
    """Write a validated plan (all-or-nothing, backed up, locked); InputError for a read-only workspace."""
    why = read_only_reason(ws)
    if why:
        raise InputError(why, path=str(ws.kernel_dir))
    return write_plan(report)
