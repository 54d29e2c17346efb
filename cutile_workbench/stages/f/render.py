"""Render Agent F's three report files from :func:`cutile_workbench.stages.f.diagnosis.diagnose`'s investigations.

Contract (pure: strings in, strings out; ``report_f.plan_f_reports`` validates and plans the write):
- :func:`render_investigation` → ``reports/perf_investigation_<scope>.md``: first line ``VERDICT: …``,
  then ``## Ratio``, ``## Launch-count evidence``, ``## Root Cause``, ``## Action Items``,
  ``## Confidence`` (agent_f.md's skeleton), then — only where they carry evidence — ``## Kernel
  identity``, ``## Config parity`` (search space, analysis.json), ``## Launch resources`` (side by side
  per slow config), ``## ncu probe`` (side by side), ``## IR diff (diff_ir.sh key lines)``.
- Launch evidence is rendered from the investigation's single :class:`~cutile_workbench.evidence.launches.
  LaunchEvidence` (captures, or kernel_times, or none) and says which; the per-launch gap line and the
  rows table never contradict it. ``## Confidence`` names the verdict rule (V1–V5) that decided.
- :func:`render_agent_f` → ``reports/agent_f.md`` (readable without re-running anything) and
  :func:`render_agent_log` → ``reports/agent_logs/agent_f.md`` (commands, evidence files, raw tables,
  diff_ir.sh output, the validator transcript).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cutile_workbench.artifacts.kernel_names import short_kernel_name
from cutile_workbench.artifacts.testids import shape_token
from cutile_workbench.artifacts.workspace import command_line
from cutile_workbench.evidence.launches import LaunchEvidence, LaunchSummary
from cutile_workbench.ir.audit import IRAudit
from cutile_workbench.model import Finding, Investigation, RatioRow
from cutile_workbench.stages.f.diagnosis import config_findings
from cutile_workbench.stages.f.finputs import FInputs

OWNER = {
    "launch_count": "Agent D / reflection (wrapper hot path)",
    "wrapper": "Agent D / reflection (wrapper hot path)",
    "dispatch": "Agent D (ffi.rs / wrapper variant dispatch)",
    "config": "Agent B/D (autotune search space: wrapper configs + FFI compile options)",
    "resources": "Agent B/D (tile config for this shape)",
    "ir": "Agent B (kernel.rs)",
    "identity": "Agent D (wrapper / ffi.rs: the candidate must launch its own cutile-rs kernel)",
}
MAX_LISTED_CONFIGS = 12


def cell(s: object) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def _us(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f} us"


def _ms_us(v: float | None) -> str:
    return "n/a" if v is None else f"{v * 1000:.2f}"


def _x(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}x"


def scope_token(scope: str) -> str:
    return "all_shapes" if scope == "all_shapes" else shape_token(scope)


def details(inv: Investigation) -> dict[str, Any]:
    return inv.details or {"representative": None, "confidence": "low", "launch_summaries": []}


def _conf_word(c: str) -> str:
    return {"high": "High", "medium": "Medium", "low": "Low"}.get(c, "Low")


# --------------------------------------------------------------------------- tables


def launch_table(le: LaunchEvidence) -> list[str]:
    """agent_f.md's launch table, from the one evidence source."""
    out = [
        "| backend | per-launch kernel time | launches/iter | measured sum |",
        "|---------|------------------------|---------------|--------------|",
    ]
    for role, side in (("reference", le.baseline), ("candidate", le.candidate)):
        if side is None:
            continue
        n = "n/a" if side.launches_per_call is None else str(side.launches_per_call)
        out.append(
            f"| {role} ({cell(side.backend)}) | {_us(side.per_launch_us)} | {n} | {_us(side.measured_sum_us)} |"
        )
    return out


def kernel_rows(s: LaunchSummary) -> list[str]:
    out = [
        f"{s.backend} @ {s.params}: {s.calls_used}/{s.calls_total} calls with the common launch "
        f"signature (source: {s.source})",
        "",
        "| class | kernel | launches/call | median per launch |",
        "|---|---|---|---|",
    ]
    for g in s.groups:
        shown = short_kernel_name(g.name)
        shown = shown if len(shown) <= 110 else shown[:109] + "…"
        out.append(f"| {g.cls} | `{cell(shown)}` | {g.count} | {_us(g.median_us)} |")
    return out


def resources_table(evidences: Sequence[LaunchEvidence]) -> list[str]:
    """Launch resources of the main kernels per config, each cell ``candidate / reference`` (captures only)."""
    from cutile_workbench.evidence.identity import kernel_stem

    rows = [le for le in evidences if len(le.summaries) == 2]
    if not rows:
        return []

    def pair(c: object, b: object) -> str:
        return f"{'n/a' if c is None else c} / {'n/a' if b is None else b}"

    base0, cand0 = rows[0].summaries
    out = [
        f"Main kernel of each side, `candidate ({cell(cand0.backend)}) / reference ({cell(base0.backend)})`, from "
        f"{rows[0].describe}:",
        "",
        "| Config | kernel | grid | block | registers/thread | static smem (B) | dynamic smem (B) | per-launch |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for le in rows:
        base, cand = le.summaries
        out.append(
            f"| {cell(le.params)} | `{cell(kernel_stem(cand.main_kernel))}` / `{cell(kernel_stem(base.main_kernel))}` "
            f"| {pair(cand.grid, base.grid)} | {pair(cand.block, base.block)} "
            f"| {pair(cand.registers_per_thread, base.registers_per_thread)} "
            f"| {pair(cand.static_smem, base.static_smem)} | {pair(cand.dynamic_smem, base.dynamic_smem)} "
            f"| {_us(cand.main_per_launch_us)} / {_us(base.main_per_launch_us)} |"
        )
    return out


def rows_table(rows: Sequence[RatioRow]) -> list[str]:
    out = [
        "| Config | baseline | baseline (us) | candidate (us) | ratio | launches cand/base |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        launches = (
            f"{r.candidate_launches}/{r.baseline_launches}"
            if r.candidate_launches is not None or r.baseline_launches is not None
            else "n/a"
        )
        out.append(
            f"| {cell(r.params)} | {cell(r.baseline_backend or 'n/a')} | {_ms_us(r.baseline_ms)} | "
            f"{_ms_us(r.candidate_ms)} | {_x(r.ratio)} | {launches} |"
        )
    return out


def candidate_identity_lines(inputs: FInputs, rows: Sequence[RatioRow]) -> list[str]:
    """Symbols side by side (and launch resources) for the rows whose candidate is not its own kernel."""
    trust = inputs.trust
    if trust is None:
        return ["Candidate identity not checked (no E table or no candidate log)."]
    out = [
        f"{trust.summary}.",
        "",
        "| Config | mark | candidate kernel | reference kernel | grid cand/ref | block cand/ref | "
        "registers cand/ref | smem cand/ref (B) | why |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ident = trust.identities.get(r.params)
        if ident is None:
            continue
        c, b = ident.candidate, ident.baseline

        def pair(attr: str, c: Any = c, b: Any = b) -> str:
            cv = getattr(c, attr) if c is not None else None
            bv = getattr(b, attr) if b is not None else None
            return f"{'n/a' if cv is None else cv} / {'n/a' if bv is None else bv}"

        out.append(
            f"| {cell(r.params)} | {ident.mark} | `{cell(c.symbol if c else 'none')}` | "
            f"`{cell(b.symbol if b else 'n/a')}` | {pair('grid')} | {pair('block')} | {pair('registers')} | "
            f"{pair('smem')} | {cell(ident.why)} |"
        )
    calls = trust.wrapper_calls
    out += [""] + (
        [f"- wrapper call that reaches another backend (static audit): {c}" for c in calls]
        if calls
        else [
            "- static audit of the wrapper: no call into another backend found"
            if inputs.wrapper_read
            else "- wrapper source not read (pass --tilegym): no file:line for the delegating call"
        ]
    )
    return out


def identity_table(kernels: Sequence[Any]) -> list[str]:
    out = [
        "| Config | variant (config_to_variant) | candidate kernel | reference kernel | source |",
        "|---|---|---|---|---|",
    ]
    for k in kernels:
        cv = f" → {k.candidate_variant}" if k.candidate_variant and k.candidate_variant != k.variant else ""
        out.append(
            f"| {cell(k.params)} | {cell(k.variant or 'n/a')} | `{cell(k.candidate_stem or 'n/a')}`{cv} | "
            f"`{cell(k.baseline_stem or 'n/a')}` | {k.source} |"
        )
    return out


def search_space_lines(inputs: FInputs) -> list[str]:
    audit = inputs.search_space
    if audit is None:
        return ["Search space not audited."]
    out = [
        f"GPU for arch-conditional configs: sm_{audit.capability[0]}{audit.capability[1]} ({audit.capability_source})."
    ]
    for c in audit.comparisons:
        out += [
            "",
            f"- variant {c.variant or '(single)'}: candidate {c.candidate.origin} ({len(c.candidate.configs)} "
            f"config(s)) vs reference {c.reference.origin} ({len(c.reference.configs)})",
        ]
        # seed step 3's question first: is THE config the reference ran in the candidate's space?
        out += ran_config_lines(inputs, c)
        out.append(f"  - supporting detail: compared on knobs {', '.join(c.compared_on) or 'none'}")
        if c.missing:
            shown = c.missing[:MAX_LISTED_CONFIGS]
            out.append(
                f"  - reference configs absent from the candidate ({len(c.missing)}), in the candidate's spelling:"
            )
            out += [f"    - `{c.candidate.spelled(m)}` (reference: {m.label})" for m in shown]
            if len(c.missing) > len(shown):
                out.append(f"    - … {len(c.missing) - len(shown)} more (agent_f.md lists them all)")
        for knob, vals in c.absent_knobs.items():
            out.append(f"  - knob `{knob}`: the reference tunes {list(vals)}; the candidate cannot")
        for knob, how in c.fixed_knobs.items():
            out.append(f"  - knob `{knob}`: {how}")
        if c.covers_reference:
            out.append("  - the candidate's space covers the reference's")
    out += [f"- note: {n}" for n in audit.notes]
    if not audit.comparisons and not audit.notes:
        out.append("- no autotune configs on either side")
    return out


def ran_config_lines(inputs: FInputs, c: Any) -> list[str]:
    """The config the reference ran for this variant (from its own evidence, else analysis.json's best_config)
    and whether the candidate's space has it, in the candidate's spelling; what is unknown when not pinned."""
    if c.best is not None:
        where = "PRESENT in" if c.best_present else "**ABSENT** from"
        return [
            f"  - **the config the reference ran**: {c.best.label} ({c.best_source}) — {where} the candidate's "
            f"space; in the candidate's spelling: `{c.candidate.spelled(c.best)}`"
        ]
    trust = inputs.trust
    rows = [
        r
        for r in (inputs.table.matched if inputs.table is not None else [])
        if c.variant is None or r.variant == c.variant
    ]
    refs = [
        trust.reference_configs[r.params]
        for r in rows
        if trust is not None and r.params in trust.reference_configs
    ]
    if not refs:
        return [
            "  - the config the reference ran: unknown (no capture of the reference's kernel for this variant)"
        ]
    texts = sorted({rc.text for rc in refs})
    return [
        "  - the config the reference ran is not pinned by its evidence: "
        + texts[0]
        + (f" (and {len(texts) - 1} other answer(s) across the configs)" if len(texts) > 1 else "")
    ]


def config_parity(inputs: FInputs) -> list[str]:
    """analysis.json's autotune facts, the reference best config per variant, the cache key, then the
    search-space audit. Whether a best config is in the candidate's search space has one source, the
    audit's comparison of that variant; analysis.json's own consistency is a separate column."""
    a = inputs.analysis
    out: list[str] = []
    if a is None:
        out.append("analysis.json unavailable: its configs, best_config and autotune_key are not checked.")
    else:
        configs = list(getattr(a, "autotune_configs", ()) or ())
        out += [
            "| item | value |",
            "|---|---|",
            f"| launch_path | {cell(getattr(a, 'launch_path', None) or 'n/a')} |",
            f"| autotune_configs (top level) | {len(configs)} |",
            f"| autotune_key | {cell(list(getattr(a, 'autotune_key', ()) or ()) or 'n/a')} |",
        ]
        out += best_config_lines(inputs)
        out += ["", *cache_key_lines(inputs)]
    out += ["", *search_space_lines(inputs)]
    return out


def best_config_lines(inputs: FInputs) -> list[str]:
    """One row per reference best config: in analysis.json's own configs? in the candidate's space?"""
    from cutile_workbench.evidence.search_space import best_configs

    bests = best_configs(inputs.analysis)
    if not bests:
        return [
            "",
            "- analysis.json names no best_config; the config the reference ran is read from its own "
            "captured kernel symbol instead (search-space section below).",
        ]
    inconsistent = {
        f.details.get("variant")
        for f in config_findings(inputs.analysis, "")
        if f.details.get("rule") == "analysis_best_config"
    }
    listed = {
        v.variant_name for v in getattr(inputs.analysis, "kernel_variants", ()) or () if v.autotune_configs
    }
    top = bool(getattr(inputs.analysis, "autotune_configs", ()) or ())
    audit = inputs.search_space
    out = [
        "",
        "| variant | reference best config (analysis.json) | in analysis.json's autotune configs | "
        "in the candidate's search space |",
        "|---|---|---|---|",
    ]
    for variant, (cfg, _src) in bests.items():
        own = "no" if variant in inconsistent else "yes" if top or variant in listed else "n/a (none listed)"
        comp = audit.for_variant(variant) if audit is not None else None
        if comp is not None and comp.best_present is not None:
            where = cell(comp.candidate.origin)
            space = f"**ABSENT** ({where})" if comp.best_present is False else f"present ({where})"
        else:
            space = "not audited: " + _why_not_audited(inputs)
        out.append(f"| {cell(variant or '(single)')} | {cell(cfg.label)} | {own} | {space} |")
    return out


def _why_not_audited(inputs: FInputs) -> str:
    audit = inputs.search_space
    if audit is None or not inputs.wrapper_read:
        return "the cutile-rs wrapper source was not read (pass --tilegym DIR)"
    return audit.notes[0] if audit.notes else "no candidate config function paired with this variant"


def cache_key_lines(inputs: FInputs) -> list[str]:
    """The autotune cache key, both checks in one place: analysis.json's key vs test_perf's shape fields,
    and the cutile-rs wrapper's ``autotune_launch(key=...)`` vs analysis.json's key."""
    own = [
        f
        for f in config_findings(inputs.analysis, "")
        if f.details.get("rule") == "analysis_key" or "no autotune_key" in f.summary
    ]
    wrapper = [f for f in inputs.wrapper_findings if f.details.get("rule") == "cache_key"]
    out = [
        f"- analysis.json autotune_key: {own[0].summary}"
        if own
        else "- analysis.json autotune_key: covers every test_perf shape field"
    ]
    if wrapper:
        out += [f"- cutile-rs wrapper key: {f.summary} ({', '.join(f.evidence) or 'n/a'})" for f in wrapper]
    elif inputs.wrapper_read:
        out.append(
            "- cutile-rs wrapper key: covers every analysis.json autotune_key field (static audit: a field "
            "derived from a parameter, or a parameter the wrapper refuses, counts)"
        )
    else:
        out.append("- cutile-rs wrapper key: not checked (the wrapper source was not read)")
    return out


def probe_lines(probes: tuple[Any, Any] | None) -> list[str]:
    from cutile_workbench.evidence.ncu import side_by_side

    if not probes or (probes[0] is None and probes[1] is None):
        return []
    cand, base = probes
    rows = side_by_side(cand, base)
    out = ["| metric | candidate | reference |", "|---|---|---|"]
    out += [f"| {name} | {c} | {b} |" for name, c, b in rows]
    srcs = [p.csv for p in (cand, base) if p is not None and p.csv]
    if srcs:
        out += ["", f"Raw ncu CSV: {', '.join(srcs)}."]
    return out


def audit_for(inputs: FInputs, inv: Investigation) -> IRAudit | None:
    """The IR the investigated config ran (one-config reports), else its variant's pair."""
    if len(inv.rows) == 1 and inv.rows[0].params in inputs.ir_config_audits:
        return inputs.ir_config_audits[inv.rows[0].params]
    variant = inv.rows[0].variant if inv.rows else None
    a = inputs.ir_audits.get(variant)
    if a is None and len(inputs.ir_audits) == 1:
        a = next(iter(inputs.ir_audits.values()))
    return a


# --------------------------------------------------------------------------- actions


def action(f: Finding) -> str:
    if f.kind == "launch_count":
        extras = f.details.get("extra") or []
        what = "; ".join(extras) if extras else "the extra launches"
        return (
            f"remove {what} from the measured call: allocate outputs with torch.empty only, no clone/"
            "contiguous/zeros/canary inside kernel_fn or before every cached launch"
        )
    if f.kind == "config" and f.details.get("rule") == "search_space":
        missing = list(f.details.get("missing_as_candidate") or f.details.get("missing") or [])
        where = f.details.get("candidate_origin") or "the wrapper's config function"
        parts = []
        # the best config is usually one of the missing ones: name it once, in the candidate's full spelling
        best_at = f.details.get("best_index_in_missing")
        if f.details.get("best_present") is False and f.details.get("best") and best_at is None:
            parts.append(
                f"add the reference best config `{f.details.get('best_as_candidate') or f.details['best']}`"
            )
        if missing:
            shown = ", ".join(
                f"`{m}`" + (" (the reference best config)" if i == best_at else "")
                for i, m in enumerate(missing[:MAX_LISTED_CONFIGS])
            )
            more = (
                f" and {len(missing) - MAX_LISTED_CONFIGS} more (agent_f.md)"
                if len(missing) > MAX_LISTED_CONFIGS
                else ""
            )
            parts.append(f"add the {len(missing)} reference config(s) the candidate lacks: {shown}{more}")
        for knob, vals in (f.details.get("absent_knobs") or {}).items():
            parts.append(f"make `{knob}` tunable ({vals}; carry it through the FFI / kernel generics)")
        return (
            f"in {where} ({f.details.get('capability')} branch of the reference): "
            + "; ".join(parts)
            + "; re-tune"
        )
    if f.kind == "identity":
        calls = f.details.get("wrapper_calls") or []
        where = f" (wrapper: {'; '.join(calls)})" if calls else ""
        what = {
            "reference": "stop running the reference's kernel",
            "library": "replace the PyTorch/library kernel",
            "none": "make the call launch its cutile-rs kernel",
        }.get(str(f.details.get("kind")), "fix the dispatch")
        return (
            f"{what} for config {f.details.get('config')}: the candidate ran `{f.details.get('candidate_kernel')}`"
            f"{where}; route the call to the cutile-rs FFI kernel (no delegation, no silent fallback) and "
            "re-measure"
        )
    if f.kind == "dispatch":
        return (
            f"{f.summary}: route each variant's configs to that variant's kernel in the wrapper/ffi.rs "
            "dispatch (check the variant flag reaches the FFI)"
        )
    if f.kind == "config":
        return f.summary
    if f.kind == "resources":
        return (
            "add a smaller-tile / higher-occupancy config for this shape to the search space and re-tune "
            "(pressure: " + "; ".join(f.details.get("pressure") or []) + ")"
        )
    if f.kind == "ir":
        return "fix the generated IR to match the reference: " + "; ".join(f.details.get("critical", [])[:5])
    if f.kind == "wrapper" and f.details.get("action"):
        # The static wrapper audit carries the seed's suggested action; cite the line it applies to.
        where = f" ({f.evidence[0]})" if f.evidence else ""
        return f"{f.details['action']}{where}"
    return f.summary


# --------------------------------------------------------------------------- the three files


def _launch_section(inv: Investigation) -> list[str]:
    d = details(inv)
    le: LaunchEvidence | None = d.get("launch_evidence")
    rep = d.get("representative")
    if rep is None and inv.pattern == "none":
        return _no_slow_launch_lines(d.get("row_evidence") or {})
    if le is None or le.source == "none":
        return [
            f"No launch evidence for `{rep}`: neither a per-launch capture of both sides nor kernel_times counts "
            "in both perf logs."
            if rep
            else "No launch evidence (no slow config to investigate)."
        ]
    where = f" ({le.path})" if le.path else ""
    lines = [
        f"Representative shape: `{rep}`. Source: {le.describe}{where}"
        + (
            "; medians over the calls with the common launch signature."
            if le.summaries
            else "; no per-launch capture, so launch kinds and resources are unknown."
        ),
        "",
        *launch_table(le),
    ]
    if len(le.summaries) == 2 and len(le.summaries[1].groups) > 1:
        lines += ["", *kernel_rows(le.summaries[1])]
    gap = d.get("gap")
    if gap is not None:
        lines += ["", f"Per-launch gap: {gap.text}."]
    return lines


def _no_slow_launch_lines(evidences: dict[str, LaunchEvidence]) -> list[str]:
    """V2 (no slow config): the launch counts of every config, from its one evidence source."""
    counted = [le for le in evidences.values() if le.has_counts]
    if not counted:
        return [
            "No slow config to investigate; no launch evidence of both sides for any config either "
            "(no per-launch capture, no kernel_times counts)."
        ]
    sources = sorted({le.describe for le in counted})
    extra = [
        le
        for le in counted
        if le.candidate
        and le.baseline
        and le.candidate.launches_per_call is not None
        and le.baseline.launches_per_call is not None
        and le.candidate.launches_per_call > le.baseline.launches_per_call
    ]
    head = (
        f"No slow config to investigate. Launches per call ({'; '.join(sources)}) for {len(counted)} of "
        f"{len(evidences)} config(s): "
        + (
            "the candidate launches no more than the reference on every one."
            if not extra
            else f"{len(extra)} with extra candidate launches."
        )
    )
    out = [head, "", "| Config | launches/call cand/ref | per-launch kernel time cand/ref |", "|---|---|---|"]
    for le in counted:
        assert le.candidate is not None and le.baseline is not None
        out.append(
            f"| {cell(le.params)} | {le.candidate.launches_per_call}/{le.baseline.launches_per_call} | "
            f"{_us(le.candidate.per_launch_us)} / {_us(le.baseline.per_launch_us)} |"
        )
    return out


def _identity_of(inputs: FInputs, rows: Sequence[RatioRow]) -> str:
    """One line: the candidate identity of these rows (marks and reasons for any that are not the candidate's)."""
    trust = inputs.trust
    if trust is None or not rows:
        return "Candidate identity: not checked"
    idents = [trust.identities[r.params] for r in rows if r.params in trust.identities]
    if idents and all(i.kind == "candidate" for i in idents):
        return f"Candidate identity: {len(idents)} of {len(rows)} row(s) ran {trust.candidate_framework}'s own kernels"
    other = "; ".join(f"{i.mark} {i.params}: {i.why}" for i in idents if i.kind != "candidate")
    return f"Candidate identity: {other or 'unknown (no capture of these rows)'}"


def change_first(inv: Investigation, inputs: FInputs) -> str | None:
    """Issue 32: the ONE config or line to change, from the strongest evidence (None: nothing fixable).

    Order: a library/delegation path at an attributed line; a static finding confirmed by attribution;
    an extra launch at its attributed line; the reference's pinned config absent from the candidate's
    space; else the first fixable finding's action."""
    fixable = [f for f in inv.findings if f.fixable]
    if not fixable:
        return None

    def at(x: dict[str, Any]) -> str:
        code = f" `{x['code']}`" if x.get("code") else ""
        return f"{x.get('file')}:{x.get('line')}{code}"

    for f in fixable:
        lines = [x for x in f.details.get("issued_at") or () if x.get("file")]
        if f.kind == "identity" and lines:
            return (
                f"route {at(lines[0])} back to the cutile-rs FFI kernel (it ran `{lines[0].get('kernel')}`)"
            )
    for f in fixable:
        if f.kind == "wrapper" and f.details.get("confirmed_by") == "attribution":
            return f"{f.details.get('file')}:{f.details.get('line')}: {f.details.get('action') or f.summary}"
    for f in fixable:
        lines = [x for x in f.details.get("issued_at") or () if x.get("file")]
        if f.kind == "launch_count" and lines:
            return "; ".join(
                f"{at(x)} issues {x.get('class')} `{x.get('kernel')}` x{x.get('count')} per call: "
                + ("remove it" if x.get("class") == "canary" else "allocate with torch.empty / drop the copy")
                for x in lines
            )
    rep = next((r for r in inv.rows if r.params == details(inv).get("representative")), None)
    audit = inputs.search_space
    cmp = audit.for_variant(rep.variant if rep else None) if audit is not None else None
    if cmp is not None and cmp.best is not None and cmp.best_present is False:
        where = cmp.candidate.origin if cmp.candidate is not None else "the candidate's config function"
        return f"add the reference's config `{cmp.best.label}` ({cmp.best_source}) to {where}"
    return action(fixable[0])


def render_investigation(inv: Investigation, inputs: FInputs) -> str:
    """``perf_investigation_<scope>.md`` (first line is the verdict, nothing before it)."""
    d = details(inv)
    table = inputs.table
    no_slow = inv.pattern == "none" and table is not None and bool(table.matched)
    title = (
        ("all shapes (none slow)" if no_slow else "all slow shapes")
        if inv.scope == "all_shapes"
        else inv.scope
    )
    gm = _x(table.geomean) if table is not None else "n/a"
    var = d.get("variant_pattern")
    pattern = (
        (
            f"variant {var}: every slow row is a {var} row and the other variants' rows are at parity "
            "(one cause in that variant's config or kernel, not per-shape)"
        )
        if inv.pattern == "variant" and var
        else inv.pattern.replace("_", "-")
        if inv.pattern != "none"
        else "unknown (no usable E table)"
        if table is None or not table.matched
        else "no slow configs"
    )
    lines = [
        f"VERDICT: {inv.verdict}",
        "",
        f"# Perf Investigation: {inv.kernel} {title}",
        "",
    ]
    first = change_first(inv, inputs)
    if first is not None:  # issue 32: the action item is one line, before the evidence behind it
        lines += [
            "## Change first",
            "",
            f"- {cell(first)}",
            "- The rest of the evidence and audit follows.",
            "",
        ]
    lines += [
        "## Ratio",
        *(f"- **{cell(s)}**" for s in inputs.stand_ins),
        f"- Agent E geomean: {gm}",
        f"- Shape pattern: {pattern}",
    ]
    if table is not None:
        slow = sum(1 for r in table.matched if r.ratio is not None and r.ratio > 1.05)
        lines.append(
            f"- Slow configs (ratio > 1.05): {slow} of {len(table.matched)} matched ({len(table.missing)} NA)"
        )
        if no_slow and table.verdict == "DONE":
            lines.append(
                "- Agent E verdict: DONE — terminal in TileGym's pipeline (no F runs after it); this report "
                "records that F has nothing to investigate"
            )
    if inputs.trust is not None:  # issue 18: who ran these rows, before any conclusion is drawn from them
        lines.append(f"- {_identity_of(inputs, inv.rows)}")
    for r in inv.rows:  # issue 18 §3: a row measured at other clocks is not evidence of a kernel gap
        if r.status == "OK" and r.clocks.state == "not_comparable":
            lines.append(f"- **Clocks differ** for `{cell(r.params)}`: {cell(r.clocks.text)}")
    if inv.rows:
        lines += ["", *rows_table(inv.rows)]
    lines += ["", "## Launch-count evidence", *_launch_section(inv)]
    fixable = [f for f in inv.findings if f.fixable]
    lines += ["", "## Root Cause"]
    if fixable:
        lines += [
            f"- {f.summary} (evidence: {', '.join(f.evidence) or 'n/a'}; confidence {f.confidence})"
            for f in fixable
        ]
        # what was looked at and ruled out, so a reader sees why it is not listed above
        lines += [
            f"- (not a root cause) {f.summary}"
            for f in inv.findings
            if not f.fixable and f.kind in ("ir", "resources") and "(secondary" not in f.summary
        ]
    elif inv.verdict == "BLOCKED":
        lines += [f"- {f.summary}" for f in inv.findings if f.kind == "missing"] or [
            "- Required evidence missing."
        ]
        lines += [
            f"- (informational) {f.summary}"
            for f in inv.findings
            if f.kind in ("ir", "config", "resources", "wrapper", "dispatch")
        ]
    else:
        lines += [
            f"- {f.summary}"
            for f in inv.findings
            if f.kind in ("ratio", "launch_count", "gap", "resources", "ir", "config", "limitation")
        ]
        if not any(f.kind == "limitation" for f in inv.findings) and inv.pattern != "none":
            lines.append(
                "- The per-launch kernel time is within noise; no actionable wrapper, dispatch, config or IR "
                "difference."
            )
    lines += ["", "## Action Items"]
    if fixable:
        for f in fixable:
            lines.append(f"- {OWNER.get(f.kind, 'Agent B/reflection')}: {action(f)}")
        wrapper_issue = any(f.kind in ("launch_count", "wrapper", "dispatch", "identity") for f in fixable)
        lines.append(f"- Template propagation needed: {'yes' if wrapper_issue else 'no'}")
    elif inv.verdict == "BLOCKED":
        again = command_line("report", "f", inv.kernel, locator=inputs.locator)
        lines.append(f"- Produce the missing evidence (see Root Cause) and re-run `{again}`.")
    else:
        lines.append(
            "- None for Agent B/D"
            + (
                "; record the named backend limitation."
                if any(f.kind == "limitation" for f in inv.findings)
                else "."
            )
        )
    lines += ["", "## Confidence"]
    ev = sorted({e for f in inv.findings for e in f.evidence if e})
    rule = d.get("rule")
    lines.append(
        f"{_conf_word(str(d.get('confidence', 'low')))}."
        + (f" Verdict rule {rule}." if rule else "")
        + f" Evidence: {', '.join(ev) or 'none'}; details in reports/agent_f.md and "
        "reports/agent_logs/agent_f.md."
    )
    lines += _optional_sections(inv, inputs)
    return "\n".join(lines) + "\n"


def autotune_lines(inv: Investigation, inputs: FInputs) -> list[str]:
    """Issue 32: per config of the report, both sides' autotune winner, runner-up and margin vs noise."""
    out: list[str] = []
    for r in inv.rows:
        for side in ("reference", "candidate"):
            t = inputs.autotune.get((r.params, side))
            if t is not None:
                out.append(f"- `{cell(r.params)}`: {cell(t.text)}")
    if out:
        out.append(f"- (from {inputs.evidence.get('autotune', 'workbench/events.jsonl')})")
    return out


def _optional_sections(inv: Investigation, inputs: FInputs) -> list[str]:
    d = details(inv)
    kinds = {f.kind for f in inv.findings if f.fixable}
    out: list[str] = []
    kernels = d.get("kernels") or []
    variants = {k.variant for k in kernels if k.variant}
    if "identity" in kinds:
        out += ["", "## Candidate identity", *candidate_identity_lines(inputs, inv.rows)]
    if "dispatch" in kinds or len(variants) > 1:
        out += ["", "## Kernel identity", *identity_table(kernels)]
    deep = inv.pattern in ("shape_specific", "variant") or bool(kinds & {"resources", "config", "ir"})
    if deep or d.get("search_space") is not None:
        out += ["", "## Config parity", *config_parity(inputs)]
    tuned = autotune_lines(inv, inputs)
    if tuned:
        out += ["", "## Autotune tables (both sides)", *tuned]
    evidences: dict[str, LaunchEvidence] = d.get("row_evidence") or {}
    resources = resources_table(list(evidences.values()))
    if resources and (deep or "resources" in kinds):
        out += ["", "## Launch resources", *resources]
    probe = probe_lines(d.get("probes"))
    if probe:
        out += ["", f"## ncu probe (`{d.get('representative')}`)", *probe]
    if deep:
        out += ["", "## IR diff (diff_ir.sh key lines)"]
        audit = audit_for(inputs, inv)
        if audit is None:
            out.append("No reference/generated IR pair for this variant.")
        else:
            out += [
                f"`diff_ir.sh {audit.ref_name} {audit.gen_name}` (in-process twin, exit={audit.exit_code}):",
                "",
                "```text",
                *audit.key_lines(),
                "```",
            ]
    return out


def render_agent_f(invs: Sequence[Investigation], inputs: FInputs, verdict: str) -> str:
    """``reports/agent_f.md``: the rich report (readable without re-running anything)."""
    t = inputs.table
    lines = [
        f"# Agent F report: {inputs.kernel}",
        *(["", *(f"**{cell(s)}**" for s in inputs.stand_ins)] if inputs.stand_ins else []),
        "",
        "## Inputs read",
    ]
    for role, p in sorted(inputs.evidence.items()):
        lines.append(f"- {role}: {p}")
    for v, a in inputs.ir_audits.items():
        lines.append(f"- IR pair {v or 'single'}: {a.ref_name} ↔ {a.gen_name}")
    if inputs.ir_config_audits:
        lines.append(
            f"- IR each config ran: {len(inputs.ir_config_audits)} pair(s) from workbench/ir/index.json"
        )
    lines.append(f"- per-launch captures: {len(inputs.launch_sets)} launch set(s)")
    if inputs.gpu is not None:
        lines.append(
            f"- GPU: {inputs.gpu.name or 'unknown'} ({inputs.gpu.sm}; {inputs.gpu.capability_source})"
        )
    lines += ["", "## Missing inputs"]
    lines += [f"- {m}" for m in inputs.missing] or ["- none"]
    lines += ["", "## E ratio summary"]
    if t is None:
        lines.append("No E table.")
    else:
        gm = f"{t.geomean:.4f}" if t.geomean is not None else "n/a"
        lines.append(
            f"rows={len(t.rows)} matched={len(t.matched)} missing={len(t.missing)} geomean_ratio={gm} "
            f"severity={t.severity or 'n/a'} E verdict={t.verdict}"
        )
        lines += ["", *rows_table(t.rows)]
        lines += _sol_lines(inputs)
    lines += ["", "## Launch-count evidence per shape"]
    for inv in invs:
        lines += ["", f"### {details(inv).get('representative') or inv.scope}", "", *_launch_section(inv)]
        le = details(inv).get("launch_evidence")
        for s in le.summaries if le is not None else []:
            lines += ["", *kernel_rows(s)]
    if inputs.trust is not None and inputs.table is not None:
        lines += [
            "",
            "## Candidate identity per config (captures)",
            *candidate_identity_lines(inputs, inputs.table.rows),
        ]
        lines += ["", "## The config the reference ran (its captured symbol)"]
        lines += [f"- {cell(p)}: {rc.text}" for p, rc in inputs.trust.reference_configs.items()] or [
            "- no matched config"
        ]
    kernels = {k.params: k for inv in invs for k in details(inv).get("kernels") or []}
    if kernels:
        lines += ["", "## Kernel identity per config", *identity_table(list(kernels.values()))]
    lines += ["", "## Autotune / cache-key audit", *config_parity(inputs)]
    missing_all = [
        (c.variant, m)
        for c in (inputs.search_space.comparisons if inputs.search_space else [])
        for m in c.missing
    ]
    if len(missing_all) > MAX_LISTED_CONFIGS:
        lines += ["", "All reference configs absent from the candidate:"]
        lines += [f"- {v or '(single)'}: `{m.label}` ({m.where})" for v, m in missing_all]
    res = resources_table([le for inv in invs for le in (details(inv).get("row_evidence") or {}).values()])
    if res:
        lines += ["", "## Launch resources (slow configs)", "", *res]
    for inv in invs:
        probe = probe_lines(details(inv).get("probes"))
        if probe:
            lines += ["", f"## ncu probe: {details(inv).get('representative')}", "", *probe]
    lines += ["", "## IR diff highlights"]
    if not inputs.ir_audits:
        lines.append("No IR pair audited.")
    for v, a in inputs.ir_audits.items():
        lines += ["", f"### {v or 'single variant'}: {a.verdict_line}", ""]
        lines += [f"- {n}" for n in a.notes] or ["- no notes"]
    lines += ["", "## Root causes"]
    fixable = {(f.kind, f.summary): f for inv in invs for f in inv.findings if f.fixable}
    lines += [
        f"- [{f.kind}] {f.summary} — evidence: {', '.join(f.evidence) or 'n/a'} (confidence {f.confidence})"
        for f in fixable.values()
    ] or ["- none actionable"]
    lines += ["", "## Action items per owner"]
    by_owner: dict[str, list[str]] = {}
    for f in fixable.values():
        by_owner.setdefault(OWNER.get(f.kind, "Agent B/reflection"), []).append(action(f))
    for owner, acts in by_owner.items():
        lines.append(f"- {owner}:")
        lines += [f"  - {a}" for a in acts]
    if not by_owner:
        lines.append("- none")
    lines += [
        "",
        "## Reports",
        *[
            f"- reports/perf_investigation_{scope_token(i.scope)}.md: {i.verdict} "
            f"(rule {details(i).get('rule', '?')})"
            for i in invs
        ],
    ]
    lines += ["", "## Final verdict", "", f"Final verdict: {verdict}"]
    return "\n".join(lines) + "\n"


def _sol_lines(inputs: FInputs) -> list[str]:
    if inputs.table is None or inputs.gpu is None:
        return []
    from cutile_workbench.evidence.sol import render_sol_section, sol_rows

    rows = sol_rows(
        inputs.table,
        inputs.kernel,
        inputs.gpu,
        analysis=inputs.analysis,
        probes=inputs.probes,
        candidate_backend=inputs.candidate_backend,
        argnames=inputs.perf_argnames,
    )
    text = render_sol_section(rows, inputs.gpu)
    return ["", *text.rstrip("\n").split("\n")] if text else []


def render_agent_log(
    invs: Sequence[Investigation], inputs: FInputs, command: str, validator_text: str
) -> str:
    """``reports/agent_logs/agent_f.md``: commands, evidence, raw tables, verbatim validator output."""
    lines = [
        f"# Agent F log: {inputs.kernel}",
        *(["", *inputs.stand_ins] if inputs.stand_ins else []),
        "",
        "## Commands",
        f"$ {command}",
    ]
    for a in inputs.ir_audits.values():
        lines.append(
            f"$ bash scripts/diff_ir.sh {a.ref_name} {a.gen_name}  # in-process twin → diff_ir_rc={a.exit_code}"
        )
    for p in inputs.probes.values():
        if p.command:
            lines.append(f"$ {p.command}  # ncu probe, {p.captured_at}")
    lines += ["", "## Evidence files"]
    lines += [f"- {p}" for p in sorted(set(inputs.evidence.values()))]
    lines += [f"- {a.ref_name}" for a in inputs.ir_audits.values()]
    lines += [f"- {a.gen_name}" for a in inputs.ir_audits.values()]
    lines += ["", "## Raw launch tables"]
    seen = False
    for inv in invs:
        le = details(inv).get("launch_evidence")
        for s in le.summaries if le is not None else []:
            seen = True
            lines += ["", *kernel_rows(s)]
    if not seen:
        lines.append("none")
    for v, a in inputs.ir_audits.items():
        lines += [
            "",
            f"## diff_ir.sh output ({v or 'single'}, verbatim twin)",
            "",
            "```text",
            a.stdout.rstrip("\n"),
            "```",
        ]
    lines += ["", "## Validator output", "", validator_text.rstrip("\n")]
    return "\n".join(lines) + "\n"


__all__ = ["OWNER", "action", "render_agent_f", "render_agent_log", "render_investigation", "scope_token"]
