"""Agent F's reports: render the investigations, validate in-process, plan one guarded write.

Contract:
- The evidence arrives as a :class:`~workbench.diagnosis.FInputs` (collected by
  :func:`workbench.services.stage_f.collect`) with the investigations of
  :func:`workbench.diagnosis.diagnose`.
- :func:`plan_f_reports` renders ``reports/perf_investigation_<scope>.md`` per investigation (first
  line ``VERDICT: FIXABLE|ALIGNED|BLOCKED``; sections Ratio, Launch-count evidence, Root Cause,
  Action Items, Confidence, plus Config parity (with the regs/smem/grid/block table) and IR diff
  (diff_ir.sh key lines) for shape-specific gaps or when the cause is config/resources/IR),
  ``reports/agent_f.md`` (readable without re-running)
  and ``reports/agent_logs/agent_f.md`` (commands, evidence files, raw launch tables, diff_ir.sh
  output, verbatim validator output with ``exit=N``), validates the overlay with the in-process
  twin of ``validate_agent_f.sh`` and, when a TileGym checkout is known and ``run_real_scripts``,
  with the real script too. Every target is under ``reports/``; ``VERDICT: DONE`` is never written
  (both asserted here, and the writer enforces paths again). Nothing is written here:
  ``workbench.writer.write_plan`` does that.
- :func:`closing_block` is F's return protocol (§1.5.9): ``<VALIDATOR_OUTPUT>`` … ``</VALIDATOR_OUTPUT>``
  then the final ``VERDICT:`` line, nothing after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.diagnosis import FInputs, LaunchSummary, same_backend, short_kernel_name
from workbench.errors import InputError, UnsafePath, ValidationRefused
from workbench.ir.audit import IRAudit
from workbench.model import Finding, Investigation, PlannedFile, RatioRow, ReportPlan
from workbench.testids import shape_token

F_VERDICTS = ("FIXABLE", "ALIGNED", "BLOCKED")
_OWNER = {
    "launch_count": "Agent D / reflection (wrapper hot path)",
    "wrapper": "Agent D / reflection (wrapper hot path)",
    "config": "Agent D (autotune search space / cache key)",
    "resources": "Agent B/D (tile config for this shape)",
    "ir": "Agent B (kernel.rs)",
}


# --------------------------------------------------------------------------- rendering helpers


def _cell(s: object) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def _us(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f} us"


def _ms_us(v: float | None) -> str:
    return "n/a" if v is None else f"{v * 1000:.2f}"


def _x(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}x"


def _launch_table(summaries: Sequence[LaunchSummary], baseline_backend: str | None) -> list[str]:
    out = ["| backend | per-launch kernel time | launches/iter | measured sum |",
           "|---------|------------------------|---------------|--------------|"]
    for s in summaries:
        role = "reference" if same_backend(s.backend, baseline_backend) else "candidate"
        out.append(f"| {role} ({_cell(s.backend)}) | {_us(s.main_per_launch_us)} | {s.launches_per_call} | "
                   f"{_us(s.measured_sum_us)} |")
    return out


def _kernel_rows(s: LaunchSummary) -> list[str]:
    out = [f"{s.backend} @ {s.params}: {s.calls_used}/{s.calls_total} calls with the common launch "
           f"signature (source: {s.source})", "",
           "| class | kernel | launches/call | median per launch |", "|---|---|---|---|"]
    for g in s.groups:
        shown = short_kernel_name(g.name)
        shown = shown if len(shown) <= 110 else shown[:109] + "…"
        out.append(f"| {g.cls} | `{_cell(shown)}` | {g.count} | {_us(g.median_us)} |")
    return out


def _resource_table(summaries: Sequence[LaunchSummary]) -> list[str]:
    out = ["| backend | registers/thread | shared memory | grid | block |", "|---|---|---|---|---|"]
    for s in summaries:
        smem = "n/a" if s.smem_bytes is None else f"{s.smem_bytes / 1024:.0f} KB ({s.smem_bytes} B)"
        out.append(f"| {_cell(s.backend)} | {s.registers_per_thread if s.registers_per_thread is not None else 'n/a'}"
                   f" | {smem} | {s.grid or 'n/a'} | {s.block or 'n/a'} |")
    return out


def _rows_table(rows: Sequence[RatioRow]) -> list[str]:
    out = ["| Config | baseline | baseline (us) | candidate (us) | ratio | launches cand/base |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        launches = (f"{r.candidate_launches}/{r.baseline_launches}"
                    if r.candidate_launches is not None or r.baseline_launches is not None else "n/a")
        out.append(f"| {_cell(r.params)} | {_cell(r.baseline_backend or 'n/a')} | {_ms_us(r.baseline_ms)} | "
                   f"{_ms_us(r.candidate_ms)} | {_x(r.ratio)} | {launches} |")
    return out


def _details(inv: Investigation) -> dict[str, Any]:
    return inv.details or {"representative": None, "confidence": "low", "launch_summaries": []}


def _conf_word(c: str) -> str:
    return {"high": "High", "medium": "Medium", "low": "Low"}.get(c, "Low")


def _audit_for(inputs: FInputs, inv: Investigation) -> IRAudit | None:
    variant = inv.rows[0].variant if inv.rows else None
    a = inputs.ir_audits.get(variant)
    if a is None and len(inputs.ir_audits) == 1:
        a = next(iter(inputs.ir_audits.values()))
    return a


def render_investigation(inv: Investigation, inputs: FInputs) -> str:
    """``perf_investigation_<scope>.md`` (first line is the verdict, nothing before it)."""
    d = _details(inv)
    table = inputs.table
    title = "all slow shapes" if inv.scope == "all_shapes" else inv.scope
    gm = _x(table.geomean) if table is not None else "n/a"
    pattern = (inv.pattern.replace("_", "-") if inv.pattern != "none"
               else "unknown (no usable E table)" if table is None or not table.matched else "no slow configs")
    lines = [f"VERDICT: {inv.verdict}", "", f"# Perf Investigation: {inv.kernel} {title}", "", "## Ratio",
             f"- Agent E geomean: {gm}", f"- Shape pattern: {pattern}"]
    if table is not None:
        slow = sum(1 for r in table.matched if r.ratio is not None and r.ratio > 1.05)
        lines.append(f"- Slow configs (ratio > 1.05): {slow} of {len(table.matched)} matched "
                     f"({len(table.missing)} NA)")
    if inv.rows:
        lines += ["", *_rows_table(inv.rows)]
    summaries: list[LaunchSummary] = list(d.get("launch_summaries") or [])
    base_backend = inv.rows[0].baseline_backend if inv.rows else None
    lines += ["", "## Launch-count evidence"]
    if summaries:
        lines.append(f"Representative shape: `{d.get('representative')}` (per-launch CUPTI capture; medians over "
                     "the calls with the common launch signature).")
        lines += ["", *_launch_table(summaries, base_backend)]
        cand = [s for s in summaries if s is not summaries[0]] if len(summaries) > 1 else []
        for s in cand:
            if len(s.groups) > 1:
                lines += ["", *_kernel_rows(s)]
    else:
        lf = [f for f in inv.findings if f.kind == "launch_count"]
        lines.append(lf[0].summary if lf else "No launch evidence: no per-launch capture and no kernel_times counts.")
    fixable = [f for f in inv.findings if f.fixable]
    lines += ["", "## Root Cause"]
    if fixable:
        lines += [f"- {f.summary} (evidence: {', '.join(f.evidence) or 'n/a'}; confidence {f.confidence})"
                  for f in fixable]
    elif inv.verdict == "BLOCKED":
        lines += [f"- {f.summary}" for f in inv.findings if f.kind == "missing"] or ["- Required evidence missing."]
        lines += [f"- (informational) {f.summary}" for f in inv.findings if f.kind == "ir"]
    else:
        lines += [f"- {f.summary}" for f in inv.findings if f.kind in ("ratio", "launch_count", "resources", "ir")]
        lines.append("- No actionable wrapper, config or IR difference: the remaining gap is noise or "
                     "tileiras/backend behaviour.")
    lines += ["", "## Action Items"]
    if fixable:
        for f in fixable:
            lines.append(f"- {_OWNER.get(f.kind, 'Agent B/reflection')}: {_action(f)}")
        wrapper_issue = any(f.kind in ("launch_count", "wrapper") for f in fixable)
        lines.append(f"- Template propagation needed: {'yes' if wrapper_issue else 'no'}")
    elif inv.verdict == "BLOCKED":
        lines.append("- Produce the missing evidence (see Root Cause) and re-run `cutile-workbench report f "
                     f"{inv.kernel}`.")
    else:
        lines.append("- None for Agent B/D; record as a backend/compiler limitation if the gap persists.")
    lines += ["", "## Confidence"]
    ev = sorted({e for f in inv.findings for e in f.evidence if e})
    lines.append(f"{_conf_word(str(d.get('confidence', 'low')))}. Evidence: {', '.join(ev) or 'none'}; "
                 "details in reports/agent_f.md and reports/agent_logs/agent_f.md.")
    # tuning/IR tables: always for shape-specific gaps, and for uniform ones whose cause is there
    if inv.pattern == "shape_specific" or any(f.fixable and f.kind in ("resources", "config", "ir")
                                              for f in inv.findings):
        lines += ["", "## Config parity"]
        lines += _config_parity(inputs)
        if summaries:
            lines += ["", *_resource_table(summaries)]
        lines += ["", "## IR diff (diff_ir.sh key lines)"]
        audit = _audit_for(inputs, inv)
        if audit is None:
            lines.append("No reference/generated IR pair for this variant.")
        else:
            lines += [f"`diff_ir.sh {audit.ref_name} {audit.gen_name}` (in-process twin, exit={audit.exit_code}):",
                      "", "```text", *audit.key_lines(), "```"]
    return "\n".join(lines) + "\n"


def _action(f: Finding) -> str:
    if f.kind == "launch_count":
        extras = f.details.get("extra") or []
        what = "; ".join(extras) if extras else "the extra launches"
        return (f"remove {what} from the measured call: allocate outputs with torch.empty only, no clone/"
                "contiguous/zeros/canary inside kernel_fn or before every cached launch")
    if f.kind == "config":
        return f.summary
    if f.kind == "resources":
        return ("add a smaller-tile / higher-occupancy config for this shape to the search space and "
                "re-tune; check spills with ncu")
    if f.kind == "ir":
        return "fix the generated IR to match the reference: " + "; ".join(f.details.get("critical", [])[:5])
    if f.kind == "wrapper" and f.details.get("action"):
        # The static wrapper audit carries the seed's suggested action; cite the line it applies to.
        where = f" ({f.evidence[0]})" if f.evidence else ""
        return f"{f.details['action']}{where}"
    return f.summary


def _config_parity(inputs: FInputs) -> list[str]:
    a = inputs.analysis
    if a is None:
        return ["analysis.json unavailable: config parity not checked."]
    configs = list(getattr(a, "autotune_configs", ()) or ())
    out = ["| item | value |", "|---|---|",
           f"| launch_path | {_cell(getattr(a, 'launch_path', None) or 'n/a')} |",
           f"| autotune_configs (top level) | {len(configs)} |",
           f"| autotune_key | {_cell(list(getattr(a, 'autotune_key', ()) or ()) or 'n/a')} |",
           f"| best_config | {_cell(dict(getattr(a, 'best_config', None) or {}) or 'n/a')} |"]
    cf = [f for f in inputs_findings(inputs) if f.kind == "config"]
    out += ["", *(f"- {f.summary}" for f in cf)] if cf else ["", "- best_config and autotune_key checks found no gap."]
    return out


def inputs_findings(inputs: FInputs) -> list[Finding]:
    from workbench.diagnosis import config_findings

    return config_findings(inputs.analysis, inputs.evidence.get("analysis", "reference/analysis.json"))


def render_agent_f(invs: Sequence[Investigation], inputs: FInputs, verdict: str) -> str:
    """``reports/agent_f.md``: the rich report (readable without re-running anything)."""
    t = inputs.table
    lines = [f"# Agent F report: {inputs.kernel}", "", "## Inputs read"]
    for role, p in sorted(inputs.evidence.items()):
        lines.append(f"- {role}: {p}")
    for v, a in inputs.ir_audits.items():
        lines.append(f"- IR pair {v or 'single'}: {a.ref_name} ↔ {a.gen_name}")
    lines.append(f"- per-launch captures: {len(inputs.launch_sets)} launch set(s)")
    lines += ["", "## Missing inputs"]
    lines += [f"- {m}" for m in inputs.missing] or ["- none"]
    lines += ["", "## E ratio summary"]
    if t is None:
        lines.append("No E table.")
    else:
        gm = f"{t.geomean:.4f}" if t.geomean is not None else "n/a"
        lines.append(f"rows={len(t.rows)} matched={len(t.matched)} missing={len(t.missing)} geomean_ratio={gm} "
                     f"severity={t.severity or 'n/a'} E verdict={t.verdict}")
        lines += ["", *_rows_table(t.rows)]
    lines += ["", "## Launch-count evidence per shape"]
    any_launch = False
    for inv in invs:
        s = list(_details(inv).get("launch_summaries") or [])
        if s:
            any_launch = True
            lines += ["", f"### {_details(inv).get('representative')}", "",
                      *_launch_table(s, inv.rows[0].baseline_backend if inv.rows else None)]
            for x in s:
                lines += ["", *_kernel_rows(x)]
    if not any_launch:
        lines.append("No per-launch captures were used (see Missing inputs).")
    lines += ["", "## Autotune / cache-key audit", *_config_parity(inputs)]
    lines += ["", "## IR diff highlights"]
    if not inputs.ir_audits:
        lines.append("No IR pair audited.")
    for v, a in inputs.ir_audits.items():
        lines += ["", f"### {v or 'single variant'}: {a.verdict_line}", ""]
        lines += [f"- {n}" for n in a.notes] or ["- no notes"]
    lines += ["", "## Root causes"]
    fixable = {(f.kind, f.summary): f for inv in invs for f in inv.findings if f.fixable}
    lines += [f"- [{f.kind}] {f.summary} — evidence: {', '.join(f.evidence) or 'n/a'} (confidence {f.confidence})"
              for f in fixable.values()] or ["- none actionable"]
    lines += ["", "## Action items per owner"]
    by_owner: dict[str, list[str]] = {}
    for f in fixable.values():
        by_owner.setdefault(_OWNER.get(f.kind, "Agent B/reflection"), []).append(_action(f))
    for owner, acts in by_owner.items():
        lines.append(f"- {owner}:")
        lines += [f"  - {a}" for a in acts]
    if not by_owner:
        lines.append("- none")
    lines += ["", "## Reports", *[f"- reports/perf_investigation_{_scope_token(i.scope)}.md: {i.verdict}"
                                   for i in invs]]
    lines += ["", "## Final verdict", "", f"Final verdict: {verdict}"]
    return "\n".join(lines) + "\n"


def render_agent_log(invs: Sequence[Investigation], inputs: FInputs, command: str, validator_text: str) -> str:
    """``reports/agent_logs/agent_f.md``: commands, evidence, raw tables, verbatim validator output."""
    lines = [f"# Agent F log: {inputs.kernel}", "", "## Commands", f"$ {command}"]
    for a in inputs.ir_audits.values():
        lines.append(f"$ bash scripts/diff_ir.sh {a.ref_name} {a.gen_name}  # in-process twin → diff_ir_rc={a.exit_code}")
    lines += ["", "## Evidence files"]
    lines += [f"- {p}" for p in sorted(set(inputs.evidence.values()))]
    lines += [f"- {a.ref_name}" for a in inputs.ir_audits.values()]
    lines += [f"- {a.gen_name}" for a in inputs.ir_audits.values()]
    lines += ["", "## Raw launch tables"]
    seen = False
    for inv in invs:
        for s in _details(inv).get("launch_summaries") or []:
            seen = True
            lines += ["", *_kernel_rows(s)]
    if not seen:
        lines.append("none")
    for v, a in inputs.ir_audits.items():
        lines += ["", f"## diff_ir.sh output ({v or 'single'}, verbatim twin)", "", "```text",
                  a.stdout.rstrip("\n"), "```"]
    lines += ["", "## Validator output", "", validator_text.rstrip("\n")]
    return "\n".join(lines) + "\n"


def _scope_token(scope: str) -> str:
    return "all_shapes" if scope == "all_shapes" else shape_token(scope)


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


def plan_f_reports(ws: Any, investigations: Sequence[Investigation], *, inputs: FInputs,
                   run_real_scripts: bool = True, command: str | None = None) -> ReportPlan:
    """Render, validate (twin + real script when available) and return the F write plan."""
    from workbench.validators import run_real_validator, transcript, validate_agent_f

    if not investigations:
        raise InputError("no investigations to report (diagnose() returns at least one)")
    verdict = primary_verdict(investigations)
    command = command or f"cutile-workbench report f {ws.kernel}"
    files: dict[str, str] = {}
    for inv in investigations:
        files[f"reports/perf_investigation_{_scope_token(inv.scope)}.md"] = render_investigation(inv, inputs)
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
    from workbench.validators import output_block

    return f"{output_block(plan.validator_output)}VERDICT: {plan.verdict}\n"
