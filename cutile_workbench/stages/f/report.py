"""Agent F's reports: collect evidence, render, validate in-process, plan one guarded write.

Contract:
- The evidence arrives as a :class:`~cutile_workbench.stages.f.finputs.FInputs`: :func:`collect_inputs`
  (:mod:`cutile_workbench.stages.f.inputs`, called by :func:`cutile_workbench.services.stage_f.collect`) reads it with
  E's strictness: an absent input becomes a ``missing`` line, a present but malformed one raises
  ``InputError`` (file, line/key; exit 2, nothing written).
- :func:`plan_f_reports` renders (:mod:`cutile_workbench.stages.f.render`) ``reports/perf_investigation_<scope>.md``
  per investigation (first line ``VERDICT: FIXABLE|ALIGNED|BLOCKED``), ``reports/agent_f.md`` and
  ``reports/agent_logs/agent_f.md`` (verbatim validator output with ``exit=N``), validates the overlay with the in-process
  twin of ``validate_agent_f.sh`` and, when a TileGym checkout is known and ``run_real_scripts``,
  with the real script too. Every target is under ``reports/``; ``VERDICT: DONE`` is never written
  (both asserted here, and the writer enforces paths again). Nothing is written here:
  ``cutile_workbench.artifacts.writer.write_plan`` does that.
- :func:`closing_block` is F's return protocol (§1.5.9): ``<VALIDATOR_OUTPUT>`` … ``</VALIDATOR_OUTPUT>``
  then the final ``VERDICT:`` line, nothing after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cutile_workbench.artifacts.workspace import Workspace, command_line
from cutile_workbench.errors import InputError, UnsafePath, ValidationRefused
from cutile_workbench.model import Investigation, PlannedFile, ReportPlan
from cutile_workbench.stages.f.demonstrate import Demonstration, render_demonstration
from cutile_workbench.stages.f.finputs import FInputs
from cutile_workbench.stages.f.inputs import collect_inputs
from cutile_workbench.stages.f.render import (
    render_agent_f,
    render_agent_log,
    render_investigation,
    scope_token,
)

F_VERDICTS = ("FIXABLE", "ALIGNED", "BLOCKED")


def primary_verdict(invs: Sequence[Investigation]) -> str:
    """FIXABLE if any report is; else ALIGNED if any; else BLOCKED."""
    verdicts = [i.verdict for i in invs]
    for v in ("FIXABLE", "ALIGNED", "BLOCKED"):
        if v in verdicts:
            return v
    return "BLOCKED"


def _check_targets(files: Sequence[PlannedFile]) -> None:
    for f in files:
        rel = f.relpath
        if (
            not rel.startswith("reports/")
            or ".." in Path(rel).parts
            or rel.endswith((".rs", ".toml"))
            or Path(rel).is_absolute()
        ):
            raise UnsafePath("F writes only under reports/", path=rel)
        first = f.content.split("\n", 1)[0]
        if first.startswith("VERDICT:") and first[len("VERDICT: ") :] not in F_VERDICTS:
            raise ValidationRefused(
                f"refusing to write {first!r}: F verdicts are FIXABLE|ALIGNED|BLOCKED", path=rel
            )


def plan_f_reports(
    ws: Workspace,
    investigations: Sequence[Investigation],
    *,
    run_real_scripts: bool = True,
    inputs: FInputs | None = None,
    command: str | None = None,
    demonstration: Demonstration | None = None,
) -> ReportPlan:
    """Render, validate (twin + real script when available) and return the F write plan.

    ``demonstration`` (``report f --demonstrate``) adds its section to each investigation (its own
    config's rows; every row for the all-shapes scope) and to agent_f.md; the verdict is unchanged."""
    from cutile_workbench.stages.e.validators import run_real_validator, transcript, validate_agent_f

    if not investigations:
        raise InputError("no investigations to report (diagnose() returns at least one)")
    inputs = inputs if inputs is not None else collect_inputs(ws)
    verdict = primary_verdict(investigations)
    command = command or command_line("report", "f", ws.kernel, locator=ws.locator)
    files: dict[str, str] = {}
    for inv in investigations:
        text = render_investigation(inv, inputs)
        if demonstration is not None:
            scope = None if inv.scope == "all_shapes" else [inv.scope]
            text = text.rstrip("\n") + "\n\n" + render_demonstration(demonstration, scope)
        files[f"reports/perf_investigation_{scope_token(inv.scope)}.md"] = text
    files["reports/agent_f.md"] = render_agent_f(investigations, inputs, verdict)
    if demonstration is not None:
        files["reports/agent_f.md"] = (
            files["reports/agent_f.md"].rstrip("\n") + "\n\n" + render_demonstration(demonstration)
        )
    # pass 1: the log must exist (non-empty) for the validator; pass 2 embeds that validator output
    files["reports/agent_logs/agent_f.md"] = render_agent_log(investigations, inputs, command, "(pending)")
    kernel_dir = Path(ws.paths.root)
    results = [validate_agent_f(kernel_dir, files)]
    tilegym = getattr(ws, "tilegym", None)
    if run_real_scripts and tilegym is not None:
        # resolved: the runner cds into the checkout, so a relative path would not find the script
        real = run_real_validator(
            Path(tilegym).resolve(), "validate_agent_f.sh", [ws.kernel], kernel_dir, files
        )
        if real is not None:
            results.append(real)
    text = transcript(results)
    files["reports/agent_logs/agent_f.md"] = render_agent_log(investigations, inputs, command, text)
    planned = [PlannedFile(k, v) for k, v in files.items()]
    _check_targets(planned)
    return ReportPlan(
        stage="F",
        kernel=ws.kernel,
        kernel_dir=kernel_dir,
        files=planned,
        verdict=verdict,
        validator_output=text,
        ok=all(r.exit_code == 0 for r in results),
    )


def closing_block(plan: ReportPlan) -> str:
    """F's return block: validator transcript inside ``<VALIDATOR_OUTPUT>``, then the verdict line last."""
    from cutile_workbench.stages.e.validators import output_block

    return f"{output_block(plan.validator_output)}VERDICT: {plan.verdict}\n"
