"""Stage F as a service: collect the evidence, diagnose, plan the reports, write them.

Contract (both faces call exactly these):

- :func:`open_kernel` resolves the workspace like every command (``InputError`` when the kernel
  dir does not exist: nothing to investigate).
- :func:`collect` reads a workspace into :class:`~cutile_workbench.stages.f.finputs.FInputs` with E's
  strictness (:func:`cutile_workbench.stages.f.inputs.collect_inputs`: E table, launches, analysis.json, IR pairs
  and the IR each config ran, wrapper audit and search space, probes): an absent input becomes a
  ``missing`` line, a present but malformed one raises ``InputError`` (file, line/key: exit 2).
- :func:`plan` = collect → :func:`cutile_workbench.stages.f.diagnosis.diagnose` → render + validate
  (:func:`cutile_workbench.stages.f.report.plan_f_reports`), returned together as an :class:`FReport`; nothing
  is written.
- :func:`write` writes a validated plan atomically; it refuses the read-only recorded session.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cutile_workbench.artifacts.workspace import Workspace, open_workspace
from cutile_workbench.artifacts.workspace import command_line as command_line
from cutile_workbench.artifacts.writer import WriteResult, write_plan
from cutile_workbench.errors import InputError
from cutile_workbench.model import Investigation, ReportPlan
from cutile_workbench.services.stage_e import read_only_reason
from cutile_workbench.stages.f.demonstrate import Demonstration
from cutile_workbench.stages.f.diagnosis import diagnose
from cutile_workbench.stages.f.finputs import FInputs
from cutile_workbench.stages.f.inputs import collect_inputs
from cutile_workbench.stages.f.report import plan_f_reports


@dataclass(frozen=True)
class FReport:
    """One F planning pass: the evidence, the investigations found in it, the validated plan."""

    inputs: FInputs
    investigations: list[Investigation]
    plan: ReportPlan
    demonstration: Demonstration | None = None


@dataclass(frozen=True)
class DemonstrateRequest:
    """``report f --demonstrate``: how long the re-run may take, whether the overlay stays."""

    timeout_s: float = 900.0
    keep_overlay: bool = False
    run_fn: Any = None  # tests: a stand-in for cutile_workbench.run.runner.run (labelled where used)


def open_kernel(
    kernel: str, *, out_root: Path | None, tilegym: Path | None, env: Mapping[str, str] = os.environ
) -> Workspace:
    """The kernel's workspace (a malformed analysis.json is a missing input, not an error)."""
    ws = open_workspace(kernel, out_root=out_root, tilegym=tilegym, env=env, strict=False)
    if not ws.paths.root.is_dir():
        raise InputError("kernel dir does not exist: nothing to investigate", path=ws.paths.root)
    return ws


def plan(
    ws: Workspace,
    *,
    command: str | None = None,
    run_real_scripts: bool = True,
    candidate_backend: str | None = None,
    demonstrate: DemonstrateRequest | None = None,
) -> FReport:
    """Collect, diagnose, render and validate (see module contract); nothing is written.

    ``demonstrate`` (the caller's explicit authorization, ``report f --demonstrate``) first tries F's
    wrapper-level fix in a throwaway copy (:mod:`cutile_workbench.services.demonstrate`: GPU time, a child
    pytest run) and adds what it measured to the reports."""
    inputs = collect(ws, candidate_backend=candidate_backend)
    investigations = diagnose(inputs)
    demo = None
    if demonstrate is not None:
        from cutile_workbench.services.demonstrate import demonstrate as run_demonstration

        demo = run_demonstration(
            ws,
            inputs,
            timeout_s=demonstrate.timeout_s,
            keep_overlay=demonstrate.keep_overlay,
            run_fn=demonstrate.run_fn,
        )
    report = plan_f_reports(
        ws,
        investigations,
        inputs=inputs,
        command=command,
        run_real_scripts=run_real_scripts,
        demonstration=demo,
    )
    return FReport(inputs, investigations, report, demo)


def write(ws: Workspace, report: ReportPlan) -> WriteResult:
    """Write a validated plan (all-or-nothing, backed up, locked); InputError for a read-only workspace."""
    why = read_only_reason(ws)
    if why:
        raise InputError(why, path=str(ws.kernel_dir))
    return write_plan(report)


def collect(ws: Workspace, *, candidate_backend: str | None = None) -> FInputs:
    """Everything F reads for ``ws``, with E's strictness (:func:`cutile_workbench.stages.f.inputs.collect_inputs`)."""
    return collect_inputs(ws, candidate_backend=candidate_backend)
