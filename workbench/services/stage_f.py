"""Stage F as a service: collect the evidence, diagnose, plan the reports, write them.

Contract (both faces call exactly these):

- :func:`open_kernel` resolves the workspace like every command (``InputError`` when the kernel
  dir does not exist: nothing to investigate).
- :func:`collect` reads a workspace into :class:`~workbench.diagnosis.FInputs` (E table via
  ``stats.build_ratio_table``, ``workbench/launches.json.gz``, analysis.json, IR pairs audited with
  diff_ir.sh parity, optional wrapper audit); an absent or unreadable input becomes a ``missing``
  line (bad files are named with their error), never an exception.
- :func:`plan` = collect → :func:`workbench.diagnosis.diagnose` → render + validate
  (:func:`workbench.report_f.plan_f_reports`), returned together as an :class:`FReport`; nothing
  is written.
- :func:`write` writes a validated plan atomically; it refuses the read-only recorded session.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.diagnosis import FInputs, diagnose
from workbench.errors import InputError, WorkbenchError
from workbench.ir.audit import IRAudit, audit_texts
from workbench.ir.loader import discover_ir, load_pair
from workbench.model import Finding, Investigation, ReportPlan
from workbench.report_f import plan_f_reports
from workbench.services.stage_e import read_only_reason
from workbench.workspace import Workspace, open_workspace
from workbench.writer import WriteResult, write_plan


@dataclass(frozen=True)
class FReport:
    """One F planning pass: the evidence, the investigations found in it, the validated plan."""

    inputs: FInputs
    investigations: list[Investigation]
    plan: ReportPlan


def open_kernel(kernel: str, *, out_root: Path | None, tilegym: Path | None,
                env: Mapping[str, str] = os.environ) -> Workspace:
    """The kernel's workspace (a malformed analysis.json is a missing input, not an error)."""
    ws = open_workspace(kernel, out_root=out_root, tilegym=tilegym, env=env, strict=False)
    if not ws.paths.root.is_dir():
        raise InputError("kernel dir does not exist: nothing to investigate", path=ws.paths.root)
    return ws


def plan(ws: Workspace, *, command: str | None = None, run_real_scripts: bool = True,
         candidate_backend: str | None = None) -> FReport:
    """Collect, diagnose, render and validate (see module contract); nothing is written."""
    inputs = collect(ws, candidate_backend=candidate_backend)
    investigations = diagnose(inputs)
    report = plan_f_reports(ws, investigations, inputs=inputs, command=command, run_real_scripts=run_real_scripts)
    return FReport(inputs, investigations, report)


def write(ws: Workspace, report: ReportPlan) -> WriteResult:
    """Write a validated plan (all-or-nothing, backed up, locked); InputError for a read-only workspace."""
    why = read_only_reason(ws)
    if why:
        raise InputError(why, path=str(ws.kernel_dir))
    return write_plan(report)



def _rel(ws: Any, p: Path | str) -> str:
    try:
        return str(Path(p).resolve().relative_to(Path(ws.paths.root).resolve()))
    except (ValueError, OSError):
        return str(p)


def collect(ws: Any, *, candidate_backend: str | None = None) -> FInputs:
    """Everything F reads for ``ws`` (see module docstring); missing pieces become notes."""
    paths = ws.paths
    missing: list[str] = []
    # evidence roles → kernel-dir-relative paths of inputs that exist (what "Inputs read" lists)
    evidence: dict[str, str] = {}
    logs = [p for p in (paths.perf_cutile_rs, paths.baseline_cutile, paths.baseline_triton_tileir) if p.is_file()]
    if logs:
        evidence["e_table"] = " + ".join(_rel(ws, p) for p in logs)
    if paths.perf_cutile_rs.is_file():
        evidence["perf_log"] = _rel(ws, paths.perf_cutile_rs)
    if paths.analysis_json.is_file():
        evidence["analysis"] = _rel(ws, paths.analysis_json)
    if paths.launches_json.is_file():
        evidence["launches"] = _rel(ws, paths.launches_json)
    table = None
    cand_name = candidate_backend
    try:
        cand_log = ws.candidate_log()
        bases = ws.baseline_logs()
        if cand_log is None and paths.perf_full_log.is_file():
            # E has not sanitized yet: read its raw tee (tolerant parse; failed tests become NA rows)
            from workbench.perflog.parser import parse_perf_log

            cand_log = parse_perf_log(paths.perf_full_log, strict=False)
            evidence["perf_log"] = _rel(ws, paths.perf_full_log)
            evidence["e_table"] = " + ".join([_rel(ws, paths.perf_full_log)] + [
                _rel(ws, p) for p in (paths.baseline_cutile, paths.baseline_triton_tileir) if p.is_file()])
            missing.append("perf_cutile_rs.txt: absent; used E's raw log reports/agent_logs/perf_cutile_rs.full.txt")
        if cand_log is None:
            missing.append("perf_cutile_rs.txt: absent (run E first)")
        elif not bases:
            missing.append("baseline_perf_cutile.txt / baseline_perf_triton_tileir.txt: absent")
        else:
            from workbench.stats import build_ratio_table

            table = build_ratio_table(ws.kernel, cand_log, bases, ws.analysis)
            if cand_name is None and cand_log.records:
                cand_name = cand_log.records[0].framework
    except WorkbenchError as exc:
        missing.append(f"perf logs: {exc}")
    if cand_name is None:
        meta = None
        try:
            meta = ws.session_meta()
        except WorkbenchError as exc:
            missing.append(f"session.json: {exc}")
        cand_name = str((meta or {}).get("candidate") or "cutile-rs")

    launch_sets = []
    if paths.launches_json.is_file():
        try:
            from workbench.launches_io import load_launch_sets

            launch_sets = load_launch_sets(paths.launches_json)
        except WorkbenchError as exc:
            missing.append(f"{evidence.pop('launches')}: unusable ({exc})")
    else:
        missing.append(f"{_rel(ws, paths.launches_json)}: absent (no per-launch CUPTI capture; "
                       "kernel_times counts from the perf logs are used instead)")

    if ws.analysis is None:
        missing.append("reference/analysis.json: absent or unusable (no config/cache-key audit)")

    audits: dict[str | None, IRAudit] = {}
    inv = discover_ir(paths)
    for pair in inv.pairs:
        try:
            lp = load_pair(pair)
        except InputError as exc:
            missing.append(f"IR pair {pair.label}: {exc}")
            continue
        audits[pair.variant] = audit_texts(lp.reference.text, lp.generated.text,
                                           ref_name=_rel(ws, pair.reference), gen_name=_rel(ws, pair.generated))
    for p in inv.unpaired_reference:
        missing.append(f"{_rel(ws, p)}: no generated IR for this variant")
    for p in inv.unpaired_generated:
        missing.append(f"{_rel(ws, p)}: no reference IR for this variant")
    if not inv.pairs and not inv.unpaired_reference and not inv.unpaired_generated:
        missing.append("reference/reference*.mlir and generated/generated*_canon.mlir: absent (no IR audit)")

    wrapper_findings: list[Finding] = []
    wrapper = ws.wrapper_source() if hasattr(ws, "wrapper_source") else None
    if wrapper is not None:
        evidence["wrapper"] = str(wrapper)
        try:
            from workbench.tilegym_checks.wrapper_audit import audit_wrapper  # optional (other engineer)

            wrapper_findings = list(audit_wrapper(wrapper, ws.analysis))
        except ImportError:
            pass
        except WorkbenchError as exc:
            missing.append(f"{wrapper}: wrapper audit failed ({exc})")
    else:
        missing.append(f"src/tilegym/ops/cutile_rs/{ws.kernel}.py: wrapper source not available")
    return FInputs(ws.kernel, table, launch_sets, ws.analysis, audits, wrapper_findings, cand_name,
                   evidence, missing)


