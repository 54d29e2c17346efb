"""Build :class:`~workbench.tui.data.AppData` from a real workspace (what ``run_app`` shows).

Contract: only :func:`workbench.workspace.open_workspace` failing (unsafe kernel name, no out
root and no recorded session) raises — ``run_app`` turns that into exit 2. Every other input
is loaded on its own; a malformed one becomes an entry of ``AppData.problems`` (shown in the app
as an error notification naming file and line) and the rest still loads. Report planning and
writing are bound lazily (``workbench.report_e`` / ``report_f`` / ``writer``), so the screens
call exactly what the CLI calls.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from workbench.errors import Blocked, InputError, WorkbenchError
from workbench.layout import KernelPaths
from workbench.model import RatioRow, ReportPlan
from workbench.testids import id_token
from workbench.tui.data import AppData, IRPair, read_existing_files


def gpu_present() -> bool:
    """A GPU node: an NVIDIA device node or a working ``nvidia-smi`` on PATH."""
    return Path("/dev/nvidia0").exists() or shutil.which("nvidia-smi") is not None


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


def _plan_report(ws: Any, candidate_backend: str | None = None) -> Callable[[str], ReportPlan]:
    """Bind E/F planning to ``ws`` exactly as the CLI's ``report e|f`` does (nothing written)."""

    def plan(stage: str) -> ReportPlan:
        if stage == "E":
            from workbench.report_e import plan_e_report

            return plan_e_report(ws)
        if stage == "F":
            from workbench.diagnosis import diagnose
            from workbench.report_f import collect_inputs, plan_f_reports

            inputs = collect_inputs(ws, candidate_backend=candidate_backend)
            return plan_f_reports(ws, diagnose(inputs), inputs=inputs)
        raise InputError(f"unknown stage {stage!r} (expected E or F)", key="stage")

    return plan


def _write_report(plan: ReportPlan) -> Any:
    from workbench.writer import write_plan

    return write_plan(plan)


def _id_token_of(backend: str) -> str:
    """Test-id token of a backend name as E spells it (``triton_tileir`` log ≙ ``triton`` ids)."""
    token = id_token(backend)
    return token[: -len("_tileir")] if token.endswith("_tileir") else token


def _gpu_runner(kernel: str, candidate_backend: str, cwd: Path, out: KernelPaths) -> Callable[..., int]:
    """Live runner on a GPU node: re-run the chosen configs' node ids (candidate, then baseline)
    through ``workbench.runner.run`` (child pytest, CUPTI harness, JSON-lines events).

    ``cwd`` is where the node ids resolve (the TileGym checkout, or the dir holding the
    ``profiles`` package for a recorded session); ``out`` is where the runner keeps its logs.
    """

    def run(rows: Sequence[RatioRow], on_event: Callable[[Any], None], cancel: threading.Event) -> int:
        from workbench.runner import RunSpec
        from workbench.runner import run as run_suite

        rc = 0
        for row in rows:
            base = row.baseline_backend or "cutile"
            base_role = "baseline_triton_tileir" if _id_token_of(base) == "triton" else "baseline_cutile"
            for role, backend in (("candidate", candidate_backend), (base_role, base)):
                if cancel.is_set():
                    return 130
                token = _id_token_of(backend)
                env = {"CUPTI": "1"}
                if token == "cutile_rs":  # as `run --tilegym`: a silent fallback must fail, not be measured
                    env["DISABLE_FALLBACK"] = "1"
                spec = RunSpec(kernel=kernel, test_target=f"{row.func_key}[{token}-{row.params}]", cwd=cwd,
                               role=role, backend_token=token,  # type: ignore[arg-type]
                               env=env, workbench_harness=True)
                result = run_suite(spec, out, on_event=on_event, cancel=cancel)
                rc = rc or result.rc
        return rc

    run.events_source = str(out.workbench_dir / "runs")  # type: ignore[attr-defined]
    return run


def load_app_data(kernel: str, *, out_root: Path | None, tilegym: Path | None,
                  env: Mapping[str, str] = os.environ) -> AppData:
    from workbench.workspace import open_workspace

    ws = open_workspace(kernel, out_root=out_root, tilegym=tilegym, env=env, strict=False)
    problems: list[WorkbenchError] = []
    for gap in ws.gaps:
        if gap.severity == "error":
            problems.append(InputError(gap.what, path=gap.path))

    session: Mapping[str, Any] = {}
    try:
        session = ws.session_meta() or {}
    except WorkbenchError as e:
        problems.append(e)

    source = "recorded" if ws.source == "recorded" else ("tilegym" if ws.tilegym else "out_root")
    data = AppData(kernel=kernel, source=source, out_root=ws.paths.root.parent,
                   gpu=find_gpu(session) or "GPU unknown", session=session, problems=problems)

    # --- ratios: the same table as ``cutile-workbench table`` (raw log preferred, like E)
    try:
        from workbench.cli_e import _table_for

        data.table = _table_for(ws)
        cand_log = ws.candidate_log()
        cand_frameworks = {r.framework for r in cand_log.records} if cand_log is not None else set()
        if isinstance(session.get("candidate"), str) and session["candidate"]:
            data.candidate_backend = str(session["candidate"])  # recorded sessions name it
        elif len(cand_frameworks) == 1:
            data.candidate_backend = next(iter(cand_frameworks))
        if data.table is not None:
            used = sorted({h for r in data.table.rows for h in (r.candidate_harness, r.baseline_harness) if h})
            data.harness = "+".join(used)
    except Blocked:
        pass  # no candidate log yet: the Ratios screen says so; not a malformed input
    except WorkbenchError as e:
        problems.append(e)

    # --- launches
    if ws.paths.launches_json.is_file():
        try:
            from workbench.launches_io import load_launch_sets

            data.launch_sets = load_launch_sets(ws.paths.launches_json)
        except WorkbenchError as e:
            problems.append(e)

    # --- IR pairs: built in the background after the first paint (see AppData.ir_loader)
    def ir_loader() -> tuple[list[IRPair], list[WorkbenchError]]:
        ir_problems: list[WorkbenchError] = []
        return load_ir_pairs(ws, ir_problems), ir_problems

    data.ir_loader = ir_loader

    # --- reports and live
    data.plan_report = _plan_report(ws, data.candidate_backend)
    data.write_report = _write_report
    if ws.source == "recorded":
        data.read_only = ("this is the recorded session shipped in the package (read-only): copy "
                          f"{ws.paths.root} to a dir of yours and open it with --out-root")
    data.read_existing = read_existing_files
    if ws.tilegym is not None:  # the Checks screen (mode 5); it runs only when asked
        from workbench.tui.screens.checks import gather_checks

        tilegym_root, analysis, candidate = ws.tilegym, ws.analysis, data.candidate_backend
        data.tilegym = tilegym_root
        data.run_checks = lambda cancelled: gather_checks(
            kernel, tilegym_root, analysis, candidate=candidate, cancelled=cancelled)
    if gpu_present():
        if ws.source == "out_root" and ws.tilegym is not None:
            data.runner = _gpu_runner(kernel, data.candidate_backend, ws.tilegym, ws.paths)
        elif ws.source == "recorded":
            # the recorded session is read-only: a live re-run keeps its logs in a scratch out root.
            # A recorded TileGym session (real cutile-rs) re-runs TileGym's own test_perf, so it
            # needs the checkout (--tilegym / $TILEGYM_PATH); a profile session re-runs our suite.
            import tempfile

            import profiles

            cwd: Path | None = Path(profiles.__file__).resolve().parent.parent
            if profiles.get_recorded_tilegym(kernel) is not None:
                cwd = ws.tilegym
                if cwd is None:
                    data.live_unavailable = ("this is a recorded run of TileGym's own test_perf (real cutile-rs): "
                                             "a live re-run needs --tilegym DIR (a checkout with the cutile-rs "
                                             "library built)")
            if cwd is not None:
                scratch = Path(tempfile.mkdtemp(prefix="cutile-workbench-live-"))
                data.runner = _gpu_runner(kernel, data.candidate_backend, cwd, KernelPaths.under(scratch, kernel))
    return data


def load_ir_pairs(ws: Any, problems: list[WorkbenchError]) -> list[IRPair]:
    from dataclasses import replace

    from workbench.ir.filing import read_index
    from workbench.ir.loader import IRPairPaths, discover_ir, load_pair
    from workbench.tui.ir_rows import build_ir_pair

    pairs: list[IRPair] = []
    for pp in discover_ir(ws.paths).pairs:
        try:
            loaded = load_pair(pp)
            pairs.append(build_ir_pair(pp.label, loaded.reference.text, loaded.generated.text,
                                       ref_label=pp.reference.name, gen_label=pp.generated.name,
                                       ref_canon=loaded.reference.canon, gen_canon=loaded.generated.canon))
        except WorkbenchError as e:
            problems.append(e)
    # the IR each config ran (run --dump-ir): one pair per config, after the variant pairs
    try:
        index = read_index(ws.paths.root)["configs"]
    except WorkbenchError as e:
        problems.append(e)
        index = {}
    for params, sides in index.items():
        if not isinstance(sides, dict) or "reference" not in sides or "candidate" not in sides:
            continue
        try:
            pp = IRPairPaths(None, ws.paths.root / str(sides["reference"]["file"]),
                             ws.paths.root / str(sides["candidate"]["file"]))
            loaded = load_pair(pp)
            pair = build_ir_pair(f"config {params}", loaded.reference.text, loaded.generated.text,
                                 ref_label=f"reference: {sides['reference'].get('dialect', 'reference')}",
                                 gen_label=f"candidate: {sides['candidate'].get('dialect', 'generated')}",
                                 ref_canon=loaded.reference.canon, gen_canon=loaded.generated.canon)
            how = (f"reference: {sides['reference'].get('how', '')}; "
                   f"candidate: {sides['candidate'].get('how', '')}")
            pairs.append(replace(pair, config=params, how=how))
        except (WorkbenchError, KeyError, TypeError) as e:
            problems.append(e if isinstance(e, WorkbenchError) else InputError(
                f"malformed IR index entry for {params!r}: {e}", path=ws.paths.root / "workbench/ir/index.json"))
    return pairs
