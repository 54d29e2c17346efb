"""``calibrate <kernel>``: how many rows would a candidate identical to the baseline have flagged? (issue 18 §4)

Contract of :func:`calibration`: opens the kernel's run history as ``history`` does (imports the
artifact tree; the recorded session in memory, nothing written), takes the **last two runs** that
hold forward results of the baseline backend (``backend``, else analysis.json's reference backend,
else the backend of the runs recorded in a baseline role) and runs the A/A test of
:func:`cutile_workbench.history.noise.calibrate`: the newer run as the "candidate", the older as the
baseline, per config; ``identity_note`` says when the two runs are not shown to be the same code
(TileGym commit not recorded, or different). Fewer than two such runs is an ``InputError`` (key ``runs``) that says how
many there are and how to get a second (``calibrate --run`` or ``run -b <backend>``). An unknown
``backend`` is an ``InputError`` naming the backends present.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from cutile_workbench.artifacts.workspace import Workspace
from cutile_workbench.errors import InputError
from cutile_workbench.history.noise import FLAG_RATIO, Calibration, calibrate, run_identity
from cutile_workbench.history.query import open_history
from cutile_workbench.profiles import get_profile

#: analysis.json reference backend → the record framework its baseline log holds
_FRAMEWORK = {"cutile": "cutile", "triton_tileir": "triton", "triton": "triton"}


@dataclass(frozen=True)
class CalibrationReport:
    kernel: str
    result: Calibration
    first_when: float
    second_when: float
    runs_of_backend: int
    gate: float = FLAG_RATIO
    #: "" when both runs are known to measure the same code; else why the test is not a clean A/A
    identity_note: str = ""


def _default_backend(ws: Workspace, backends_by_role: dict[str, set[str]], present: set[str]) -> str | None:
    ref = ws.analysis.reference_backend if ws.analysis is not None else None
    if ref is not None and _FRAMEWORK.get(ref, ref) in present:
        return _FRAMEWORK.get(ref, ref)
    baseline = sorted(
        set().union(*(b for role, b in backends_by_role.items() if role.startswith("baseline")))
    )
    return baseline[0] if len(baseline) == 1 else None


def calibration(ws: Workspace, backend: str | None = None) -> CalibrationReport:
    """The A/A test of the baseline over its last two runs (module contract)."""
    store, _report = open_history(ws.paths, source=ws.source, variants=ws.variant_names())
    try:
        runs = {r.run_id: r for r in store.runs()}
        by_run: dict[int, list[Any]] = {}
        present: set[str] = set()
        backends_by_role: dict[str, set[str]] = {}
        for run_id, c in store.configs(phase="forward"):
            present.add(c.backend)
            for role in runs[run_id].roles:
                backends_by_role.setdefault(role, set()).add(c.backend)
            by_run.setdefault(run_id, []).append(c)
    finally:
        store.close()
    chosen = backend or _default_backend(ws, backends_by_role, present)
    if chosen is None:
        raise InputError(
            f"which baseline? name one with --backend (present: {', '.join(sorted(present)) or 'none'})",
            path=str(ws.kernel_dir),
            key="--backend",
        )
    if chosen not in present:
        raise InputError(
            f"no run of backend {chosen!r} in the history (present: {', '.join(sorted(present)) or 'none'})",
            path=str(ws.kernel_dir),
            key="--backend",
        )
    holding = sorted(
        (runs[rid] for rid, cs in by_run.items() if any(c.backend == chosen for c in cs)),
        key=lambda r: (r.when, r.run_id),
    )
    if len(holding) < 2:
        raise InputError(
            f"the history holds {len(holding)} run of {chosen}: the A/A test needs two (measure it "
            f"again on a GPU node: `{measure_again_hint(ws, chosen)}`)",
            path=str(ws.kernel_dir),
            key="runs",
        )
    older, newer = holding[-2], holding[-1]
    result = calibrate(chosen, (older.run_key, by_run[older.run_id]), (newer.run_key, by_run[newer.run_id]))
    ids = [run_identity(r.provenance, r.roles) for r in (older, newer)]
    note = (
        ""
        if ids[0] is not None and ids[0] == ids[1]
        else "the two runs' code identity (TileGym commit) is not recorded: same code not shown"
        if None in ids
        else f"the two runs measured different code ({ids[0]} vs {ids[1]}): not a clean A/A test"
    )
    return CalibrationReport(ws.kernel, result, older.when, newer.when, len(holding), identity_note=note)


def measure_again_hint(ws: Workspace, backend: str) -> str:
    """The command that measures ``backend`` twice for this workspace, as it can be pasted (issue 36): its
    out root named (a recorded session is read-only: copied to ``OUT`` first), and ``--tilegym DIR`` for a
    TileGym kernel when no checkout is known (``OUT`` and ``DIR`` are the user's to fill in)."""
    from cutile_workbench.artifacts.workspace import command_line
    from cutile_workbench.services.stage_e import read_only_reason

    tilegym = (
        ("--tilegym", str(ws.tilegym))
        if ws.tilegym
        else (("--tilegym", "DIR") if get_profile(ws.kernel) is None else ())
    )
    words = ("calibrate", ws.kernel, "--run", "-b", backend)
    if read_only_reason(ws):
        line = command_line(*words, locator=("--out-root", "OUT", *tilegym))
        return f"cp -r {shlex.quote(str(ws.kernel_dir))} OUT/ && {line}"
    return command_line(*words, locator=("--out-root", str(ws.kernel_dir.parent), *tilegym))
