"""Build :class:`~cutile_workbench.tui.data.AppData` from a real workspace (what ``run_app`` shows).

Contract: only :func:`cutile_workbench.artifacts.workspace.open_workspace` failing (unsafe kernel name, no out
root and no recorded session) raises — ``run_app`` turns that into exit 2. Every other input
is loaded on its own; a malformed one becomes an entry of ``AppData.problems`` (shown in the app
as an error notification naming file and line) and the rest still loads. Everything is loaded,
planned, written and run through the services the CLI calls (:mod:`cutile_workbench.services`): the
same table, the same report plans and guarded writes, the same checks, the same runner.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from cutile_workbench.errors import Blocked, InputError, WorkbenchError
from cutile_workbench.model import ReportPlan
from cutile_workbench.services.session import KernelSession, Workspace, ignored_inputs, open_session
from cutile_workbench.tui.data import AppData, IRPair, read_existing_files


def find_gpu(meta: Mapping[str, Any] | None, depth: int = 3) -> str | None:
    """The first non-empty ``gpu`` string in session.json (top level, or under ``runs.<role>``)."""
    if not meta or depth < 0:
        return None
    gpu = meta.get("gpu")
    if isinstance(gpu, str) and gpu:
        return gpu
    for v in meta.values():
        if isinstance(v, Mapping):
            found = find_gpu(v, depth - 1)
            if found:
                return found
    return None


def _plan_report(ws: Workspace, candidate_backend: str | None = None) -> Callable[[str], ReportPlan]:
    """Bind E/F planning to ``ws`` exactly as the CLI's ``report e|f`` does (nothing written)."""

    def plan(stage: str) -> ReportPlan:
        if stage == "E":
            from cutile_workbench.services import stage_e

            return stage_e.plan(ws)
        if stage == "F":
            from cutile_workbench.services import stage_f

            return stage_f.plan(ws, candidate_backend=candidate_backend).plan
        if stage == "F+demonstrate":  # the user confirmed: F's wrapper fix tried in a throwaway copy (GPU)
            from cutile_workbench.services import stage_f

            request = stage_f.DemonstrateRequest()
            return stage_f.plan(ws, candidate_backend=candidate_backend, demonstrate=request).plan
        raise InputError(f"unknown stage {stage!r} (expected E or F)", key="stage")

    return plan


def _write_report(ws: Workspace) -> Callable[[ReportPlan], Any]:
    """Bind the guarded write of a plan to ``ws`` exactly as ``report e|f --yes`` does."""

    def write(plan: ReportPlan) -> Any:
        from cutile_workbench.services import stage_e, stage_f

        return (stage_e if plan.stage == "E" else stage_f).write(ws, plan)

    return write


#: the Ratios columns the quick first screen leaves to the full load (:attr:`AppData.pending`)
QUICK_PENDING = frozenset({"ci", "id", "sol"})


def quick_app_data(
    kernel: str,
    *,
    out_root: Path | None,
    tilegym: Path | None,
    env: Mapping[str, str] = os.environ,
    gpus: str | None = None,
) -> AppData | None:
    """What the first screen paints (issue 31 item 3): every row's medians and ratio (the logs parsed
    and matched, no bootstrap, no capture read: ``ratio_table(n_boot=0)``), with ``pending`` naming the
    columns still to come and ``full_loader`` the rest of the session — :func:`load_app_data` on this
    same session object, so no input is read or parsed twice. None where the quick path does not
    apply and the caller loads everything at once: no ratio table can be built (no candidate log, a
    malformed one: the full load states why) or ``gpus`` is given (a bad ``--gpus`` must exit 2
    before the app opens). Raises as :func:`load_app_data` when the workspace cannot be opened."""
    if gpus is not None:
        return None
    session = open_session(
        kernel, out_root=out_root, tilegym=tilegym, env=env, strict=False, require_dir=False
    )
    from cutile_workbench.services.stage_e import candidate_backend, ratio_table

    try:
        table = ratio_table(session, n_boot=0)
        backend = candidate_backend(session)
    except WorkbenchError:
        return None
    data = _base_app_data(kernel, session)
    data.table = table
    data.candidate_backend = backend or data.candidate_backend
    data.pending = QUICK_PENDING
    data.full_loader = partial(
        load_app_data, kernel, out_root=out_root, tilegym=tilegym, env=env, gpus=gpus, session=session
    )
    return data


def _base_app_data(kernel: str, session: KernelSession) -> AppData:
    """The facts read before any table: the workspace's gaps, session.json, the source, the locator,
    the inputs left out, and whether writing is allowed here."""
    ws = session.ws
    problems: list[WorkbenchError] = []
    for gap in ws.gaps:
        if gap.severity == "error":
            problems.append(InputError(gap.what, path=gap.path))

    narrowed: list[tuple[str, str, WorkbenchError]] = []
    meta: Mapping[str, Any] = {}
    try:
        meta = session.session_meta() or {}
    except WorkbenchError as e:
        problems.append(e)
        narrowed.append(("header", "GPU not known", e))

    source = "recorded" if ws.source == "recorded" else ("tilegym" if ws.tilegym else "out_root")
    data = AppData(
        kernel=kernel,
        source=source,
        out_root=ws.paths.root.parent,
        gpu=find_gpu(meta) or "GPU unknown",
        session=meta,
        problems=problems,
        narrowed=narrowed,
        ignored=ignored_inputs(ws),
        locator=ws.locator,
    )
    from cutile_workbench.services.stage_e import inside_recorded_sessions

    if ws.source == "recorded" or inside_recorded_sessions(ws.paths.root):  # the CLI's read_only_reason
        data.read_only = (
            "this is the recorded session shipped in the package (read-only): copy "
            f"{ws.paths.root} to a dir of yours and open it with --out-root"
        )
    return data


def load_app_data(
    kernel: str,
    *,
    out_root: Path | None,
    tilegym: Path | None,
    env: Mapping[str, str] = os.environ,
    gpus: str | None = None,
    session: KernelSession | None = None,
) -> AppData:
    """``gpus``: the app's ``--gpus`` (a bad selection raises InputError, as the CLI's does);
    ``session``: the one :func:`quick_app_data` opened (its facts so far are reused)."""
    # one session for everything the app shows: each input read once, each fact computed once
    if session is None:
        session = open_session(
            kernel, out_root=out_root, tilegym=tilegym, env=env, strict=False, require_dir=False
        )
    ws = session.ws
    data = _base_app_data(kernel, session)
    problems = data.problems
    narrowed = data.narrowed

    # --- ratios: the same table as ``cutile-workbench table`` (raw log preferred, like E)
    try:
        from cutile_workbench.services.stage_e import candidate_backend, ratio_table

        data.table = ratio_table(session)
        session.forget_table(n_boot=0)  # the quick first screen's, if any: the whole table replaces it
        # the order F uses too (artifacts.candidate); unknown keeps the data's default
        data.candidate_backend = candidate_backend(session) or data.candidate_backend
        if data.table is not None:
            from cutile_workbench.services.stage_e import row_samples

            data.samples = row_samples(session, data.table)  # the session's candidate log, not parsed again
            used = sorted(
                {h for r in data.table.rows for h in (r.candidate_harness, r.baseline_harness) if h}
            )
            data.harness = "+".join(used)
    except Blocked:
        pass  # no candidate log yet: the Ratios screen says so; not a malformed input
    except WorkbenchError as e:
        problems.append(e)

    # --- run history (issue #15): comparability of the ratios (Ratios header) and the History screen
    from cutile_workbench.services import history as history_service

    data.conditions = history_service.ratio_comparability(ws, data.table)
    data.history_loader = partial(history_service.kernel_history, ws)

    # --- launches
    try:
        store = session.launches()  # index only: sets decoded per config shown
        if store is not None:
            data.launch_sets = store
    except WorkbenchError as e:
        problems.append(e)

    # --- ncu probes and speed of light (the Timeline's probe panel, the Ratios SOL column)
    try:
        from cutile_workbench.services.probe import load as load_probes

        data.probes = load_probes(session)
    except WorkbenchError as e:
        problems.append(e)
    if data.table is not None:
        try:
            from cutile_workbench.services.sol import speed_of_light

            data.sol = speed_of_light(
                ws, data.table, candidate_backend=data.candidate_backend, probes=data.probes
            )
        except WorkbenchError as e:
            problems.append(e)
            narrowed.append(("ratios", "SOL column not shown", e))

    # --- issue 18: candidate identity per row and the config the reference ran (same answer as `table`)
    if data.table is not None:
        try:
            from cutile_workbench.services.stage_e import trust

            data.trust = trust(session, data.table)
        except WorkbenchError as e:
            problems.append(e)
            # the id column is absent without identities: say so where it would be (issue #34)
            narrowed.append(("ratios", "id column not shown", e))

    # --- IR pairs: built in the background after the first paint (see AppData.ir_loader)
    def ir_loader() -> tuple[list[IRPair], list[WorkbenchError]]:
        ir_problems: list[WorkbenchError] = []
        return load_ir_pairs(ws, ir_problems), ir_problems

    data.ir_loader = ir_loader

    # --- reports and live
    data.plan_report = _plan_report(ws, data.candidate_backend)
    data.write_report = _write_report(ws)
    data.read_existing = read_existing_files
    if ws.tilegym is not None:  # the Checks screen (mode 5); it runs only when asked
        from cutile_workbench.services.checks import gather_checks

        tilegym_root, analysis, candidate = ws.tilegym, ws.analysis, data.candidate_backend
        data.tilegym = tilegym_root
        # the twins name the kernel dir's out root (an out root's; the recorded session is the default)
        where = ws.paths.root.parent.absolute() if ws.source == "out_root" else None
        data.run_checks = lambda cancelled: gather_checks(
            kernel, tilegym_root, analysis, candidate=candidate, cancelled=cancelled, out_root=where
        )
    from cutile_workbench.services.runs import live_rerunner

    data.runner, data.live_unavailable = live_rerunner(ws, data.candidate_backend)
    from cutile_workbench.services.sharded import sharded_rerunner

    data.sharded, data.sharded_unavailable = sharded_rerunner(ws, data.candidate_backend, gpus, environ=env)
    problems[:] = distinct_problems(problems)
    return data


def distinct_problems(problems: list[WorkbenchError]) -> list[WorkbenchError]:
    """Each problem once, first seen first: every reader of a bad file (session.json is read for
    the GPU, the identities, the harness…) raises the same error, and ``i`` listed each copy."""
    seen: set[str] = set()
    out: list[WorkbenchError] = []
    for problem in problems:
        if str(problem) not in seen:
            seen.add(str(problem))
            out.append(problem)
    return out


def load_ir_pairs(ws: Workspace, problems: list[WorkbenchError]) -> list[IRPair]:
    """Every IR pair through the IR service, as the screen's rows (bad pairs become problems): the
    variant pairs, then the IR each config ran (``run --dump-ir``), labelled by config."""
    from dataclasses import replace

    from cutile_workbench.services.ir_diff import diff_all, diff_configs
    from cutile_workbench.tui.ir_rows import from_ir_diff

    diffs, found = diff_all(ws, name=lambda p: p.name)
    problems.extend(found)
    pairs = [from_ir_diff(d) for d in diffs]
    configs, found = diff_configs(ws, name=lambda p: p.name)
    problems.extend(found)
    for c in configs:
        pair = from_ir_diff(c.diff)
        pairs.append(
            replace(
                pair,
                ref_label=f"reference: {c.ref_dialect}",
                gen_label=f"candidate: {c.gen_dialect}",
                config=c.params,
                how=c.how,
            )
        )
    return pairs
