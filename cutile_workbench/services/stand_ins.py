"""Which numbers come from stand-ins, for every face (issue 18 §5): ``cutile_workbench.artifacts.stand_ins`` over a workspace.

Contract of :func:`workspace_stand_ins`: the candidate's frameworks from the candidate log E reads
(the session's: :meth:`cutile_workbench.stages.session.kernel.KernelSession.stand_ins`), ``workbench/session.json``,
and the baseline keys in use (the table's matched rows when a table is given, else the baseline logs
present). It never raises on file content: an unreadable candidate log or session.json leaves that
source out (the other still decides; with neither, the candidate is "unknown", never called cutile-rs
by default).
"""

from __future__ import annotations

from cutile_workbench.artifacts.stand_ins import StandIns as StandIns
from cutile_workbench.artifacts.workspace import Workspace
from cutile_workbench.model import RatioTable
from cutile_workbench.stages.session.kernel import KernelSession


def workspace_stand_ins(ws: Workspace | KernelSession, table: RatioTable | None = None) -> StandIns:
    """Stand-ins of ``ws`` (module contract)."""
    return KernelSession.of(ws).stand_ins(table)
