"""Agent F's reports: collect evidence, render, validate in-process, plan one guarded write.

Contract:
- :func:`collect_inputs` (:mod:`workbench.f_inputs`) reads a workspace into
  :class:`~workbench.diagnosis.FInputs` with E's strictness: an absent input becomes a ``missing``
  line, a present but malformed one raises ``InputError`` (file, line/key; exit 2, nothing written).
- :func:`plan_f_reports` renders (:mod:`workbench.f_render`) ``reports/perf_investigation_<scope>.md``
  per investigation (first line ``VERDICT: FIXABLE|ALIGNED|BLOCKED``), ``reports/agent_f.md`` and
  ``reports/agent_logs/agent_f.md`` (verbatim validator output with ``exit=N``), validates the overlay with the in-process
  twin of ``validate_agent_f.sh`` and, when a TileGym checkout is known and ``run_real_scripts``,
  with the real script too. Every target is under ``reports/``; ``VERDICT: DONE`` is never written
  (both asserted here, and the writer enforces paths again). Nothing is written here:
  ``workbench.writer.write_plan`` does that.
- :func:`closing_block` is F's return protocol (§1.5.9): ``<VALIDATOR_OUTPUT>`` … ``</VALIDATOR_OUTPUT>``
  then the final ``VERDICT:`` line, nothing after it.
- :func:`register` adds ``report f <kernel> [--dry-run] [--yes]`` to the CLI registry.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.cli_confirm import confirm_write
from workbench.diagnosis import FInputs, diagnose
from workbench.errors import InputError, UnsafePath, ValidationRefused, WorkbenchError
from workbench.f_inputs import collect_inputs
from workbench.f_render import render_agent_f, render_agent_log, render_investigation, scope_token
from workbench.model import Investigation, PlannedFile, ReportPlan

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
        if (not rel.startswith("reports/") or ".." in Path(rel).parts or rel.endswith((".rs", ".toml"))
                or Path(rel).is_absolute()):
            raise UnsafePath("F writes only under reports/", path=rel)
        first = f.content.split("\n", 1)[0]
        if first.startswith("VERDICT:") and first[len("VERDICT: "):] not in F_VERDICTS:
            raise ValidationRefused(f"refusing to write {first!r}: F verdicts are FIXABLE|ALIGNED|BLOCKED", path=rel)


def plan_f_reports(ws: Any, investigations: Sequence[Investigation], *, run_real_scripts: bool = True,
                   inputs: FInputs | None = None, command: str | None = None) -> ReportPlan:
    """Render, validate (twin + real script when available) and return the F write plan."""
    from workbench.validators import run_real_validator, transcript, validate_agent_f

    if not investigations:
        raise InputError("no investigations to report (diagnose() returns at least one)")
    inputs = inputs if inputs is not None else collect_inputs(ws)
    verdict = primary_verdict(investigations)
    command = command or f"cutile-workbench report f {ws.kernel}"
    files: dict[str, str] = {}
    for inv in investigations:
        files[f"reports/perf_investigation_{scope_token(inv.scope)}.md"] = render_investigation(inv, inputs)
    files["reports/agent_f.md"] = render_agent_f(investigations, inputs, verdict)
    # pass 1: the log must exist (non-empty) for the validator; pass 2 embeds that validator output
    files["reports/agent_logs/agent_f.md"] = render_agent_log(investigations, inputs, command, "(pending)")
    kernel_dir = Path(ws.paths.root)
    results = [validate_agent_f(kernel_dir, files)]
    tilegym = getattr(ws, "tilegym", None)
    if run_real_scripts and tilegym is not None:
        # resolved: the runner cds into the checkout, so a relative path would not find the script
        real = run_real_validator(Path(tilegym).resolve(), "validate_agent_f.sh", [ws.kernel], kernel_dir, files)
        if real is not None:
            results.append(real)
    text = transcript(results)
    files["reports/agent_logs/agent_f.md"] = render_agent_log(investigations, inputs, command, text)
    planned = [PlannedFile(k, v) for k, v in files.items()]
    _check_targets(planned)
    return ReportPlan(stage="F", kernel=ws.kernel, kernel_dir=kernel_dir, files=planned, verdict=verdict,
                      validator_output=text, ok=all(r.exit_code == 0 for r in results))


def closing_block(plan: ReportPlan) -> str:
    """F's return block: validator transcript inside ``<VALIDATOR_OUTPUT>``, then the verdict line last."""
    body = plan.validator_output if plan.validator_output.endswith("\n") else plan.validator_output + "\n"
    return f"<VALIDATOR_OUTPUT>\n{body}</VALIDATOR_OUTPUT>\nVERDICT: {plan.verdict}\n"


# --------------------------------------------------------------------------- CLI


def run_report_f(args: argparse.Namespace) -> int:
    """``report f``: exit 0 written (FIXABLE/ALIGNED), 1 written with VERDICT: BLOCKED, 2 bad input or
    no confirmation, 3 validation refused (closing block printed, no VERDICT line, nothing written).
    ``--dry-run`` prints what would be written and the closing block, then a ``DRY RUN:`` line."""
    from workbench.workspace import open_workspace
    from workbench.writer import write_plan

    out_root = getattr(args, "out_root", None)
    tilegym = getattr(args, "tilegym", None)
    out = sys.stdout
    try:
        ws = open_workspace(args.kernel, out_root=Path(out_root) if out_root else None,
                            tilegym=Path(tilegym) if tilegym else None, strict=False)
        if not ws.paths.root.is_dir():
            raise InputError("kernel dir does not exist: nothing to investigate", path=ws.paths.root)
        inputs = collect_inputs(ws)
        invs = diagnose(inputs)
        argv = " ".join(["cutile-workbench", "report", "f", args.kernel] +
                        (["--dry-run"] if args.dry_run else []) + (["--yes"] if args.yes else []))
        plan = plan_f_reports(ws, invs, inputs=inputs, command=argv,
                              run_real_scripts=not getattr(args, "no_real_scripts", False))
        for inv in invs:
            print(f"{inv.scope}: {inv.verdict} ({inv.pattern})", file=sys.stderr)
        if not plan.ok:
            out.write(f"<VALIDATOR_OUTPUT>\n{plan.validator_output}</VALIDATOR_OUTPUT>\n")
            print("error: validation refused: a validator exited non-zero; nothing was written", file=sys.stderr)
            return ValidationRefused("").exit_code
        if args.dry_run:
            out.write(f"DRY RUN: would write {len(plan.files)} file(s) under {plan.kernel_dir}:\n")
            for f in plan.files:
                state = "replace" if (plan.kernel_dir / f.relpath).exists() else "create"
                out.write(f"  {state:7s} {f.relpath} ({len(f.content.encode('utf-8', 'surrogateescape'))} bytes)\n")
            out.write(f"<VALIDATOR_OUTPUT>\n{plan.validator_output}</VALIDATOR_OUTPUT>\n")
            out.write(f"DRY RUN: nothing written; the reports would say VERDICT: {plan.verdict}\n")
            return 0
        refused = confirm_write(plan, yes=args.yes)
        if refused is not None:
            return refused
        result = write_plan(plan)
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    out.write(f"wrote {len(result.written)} file(s) under {plan.kernel_dir}:\n")
    for p in result.written:
        out.write(f"  {p.relative_to(plan.kernel_dir).as_posix()}\n")
    if result.backup_dir is not None:
        out.write(f"backup of replaced files: {result.backup_dir}\n")
    out.write(closing_block(plan))
    return 1 if plan.verdict == "BLOCKED" else 0


def register(commands: Any, report_commands: Any) -> None:
    """Add ``report f`` to the ``report`` sub-parsers (``commands`` is unused here)."""
    from workbench.cli import add_kernel_args

    p = report_commands.add_parser("f", help="Agent F: residual perf investigation reports",
                                   description="Diagnose slow configs and write reports/perf_investigation_*.md, "
                                               "agent_f.md and agent_logs/agent_f.md (guarded write).")
    add_kernel_args(p)
    p.add_argument("--dry-run", action="store_true", help="render and validate, write nothing")
    p.add_argument("--yes", action="store_true", help="write without asking")
    p.add_argument("--no-real-scripts", action="store_true",
                   help="skip the real validate_agent_f.sh even when a TileGym checkout is known")
    p.set_defaults(func=run_report_f)
