"""Which numbers come from stand-ins, for every face (issue 18 §5): ``cutile_workbench.artifacts.stand_ins`` over a workspace.

Contract of :func:`workspace_stand_ins`: the candidate's frameworks from the candidate log E reads
(``report_e.load_candidate``), ``workbench/session.json``, and the baseline keys in use (the table's
matched rows when a table is given, else the baseline logs present). It never raises on file
content: an unreadable candidate log or session.json leaves that source out (the other still
decides; with neither, the candidate is "unknown", never called cutile-rs by default).
"""

from __future__ import annotations

from pathlib import Path

from cutile_workbench.artifacts.stand_ins import StandIns, stand_ins_of
from cutile_workbench.artifacts.workspace import Workspace
from cutile_workbench.errors import WorkbenchError
from cutile_workbench.model import RatioTable


def workspace_stand_ins(ws: Workspace, table: RatioTable | None = None) -> StandIns:
    """Stand-ins of ``ws`` (module contract)."""
    from cutile_workbench.stages.e.report import load_candidate

    frameworks: set[str] | None = None
    try:
        frameworks = {r.framework for r in load_candidate(ws)[0].records}
    except WorkbenchError:
        frameworks = None  # no or a malformed candidate log: the faces that need it say so themselves
    try:
        session = ws.session_meta()
    except WorkbenchError:
        session = None
    if table is not None:
        keys = {r.baseline_backend for r in table.matched if r.baseline_backend}
    else:
        keys = {"triton_tileir"} if Path(ws.paths.baseline_triton_tileir).is_file() else set()
    return stand_ins_of(frameworks, session, keys)
