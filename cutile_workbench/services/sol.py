"""Speed of light per E row as a service (the Ratios screen's SOL column).

Contract: :func:`speed_of_light` maps each E row ``(func_key, params)`` to the
:class:`~cutile_workbench.evidence.sol.SolRow` of :func:`cutile_workbench.evidence.sol.row_sol`: the GPU of
session.json and its measured peaks, the shape from analysis.json or the test's parametrize names
(the TileGym checkout's test file, else those shipped with a recorded TileGym session), a side's
filed ncu probe where there is one. A row without a work model is absent — never a guess. Reads
session.json and the TileGym test file (``ast``) only; light to import (the TUI calls it at start-up).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cutile_workbench.artifacts.workspace import Workspace
from cutile_workbench.evidence.sol import SolRow
from cutile_workbench.model import RatioTable


def speed_of_light(
    ws: Workspace,
    table: RatioTable,
    *,
    candidate_backend: str = "cutile-rs",
    probes: Mapping[tuple[str, str], Any] | None = None,
) -> dict[tuple[str, str], SolRow]:
    """SOL per E row (see the module contract)."""
    from cutile_workbench.evidence.gpu import gpu_facts
    from cutile_workbench.evidence.sol import recorded_argnames, row_sol, test_argnames

    gpu = gpu_facts(ws.session_meta())
    argnames = {**recorded_argnames(ws.kernel), **test_argnames(ws.tilegym, {r.func_key for r in table.rows})}
    out: dict[tuple[str, str], SolRow] = {}
    for row in table.rows:
        sr = row_sol(
            row,
            ws.kernel,
            gpu,
            ws.analysis,
            argnames.get(row.func_key),
            probes=probes,
            candidate_backend=candidate_backend,
        )
        if sr is not None:
            out[(row.func_key, row.params)] = sr
    return out
