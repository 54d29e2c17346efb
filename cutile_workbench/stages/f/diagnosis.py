"""The F procedure (agent_f.md Step 2, contract §5.4): evidence → findings → verdicts.

Contract: :func:`diagnose` is pure (no I/O): it takes :class:`~cutile_workbench.stages.f.finputs.FInputs` (E's ratio table and the perf
records behind it, per-launch captures, analysis.json, IR audits, the static wrapper audit, the
search-space audit, ncu probes, the GPU, which inputs are missing) and returns the
:class:`~cutile_workbench.model.Investigation` list F writes, one report each.

Steps, in order:

0. **Candidate identity** (:mod:`cutile_workbench.evidence.candidate_identity`, from the captures): a matched
   row whose candidate ran the reference's own kernel, only PyTorch/library kernels, or no kernel at all
   is FIXABLE with the symbols side by side (and the wrapper's delegating call, file:line, where the
   static audit finds it), slow or passing — such a row gets an investigation even inside E's gate,
   and is never ALIGNED. Its IR, config and resource findings are then secondary notes: the measured
   kernel is not the candidate's.
1. **E table → slow configs.** A matched row is *slow* when ``ratio > 1.05`` (E's gate).
   **Uniform rule**: the gap is uniform when at least :data:`UNIFORM_MIN_SHARE` (75 %) of the matched
   configs are slow *and* the slow ratios lie within a factor :data:`UNIFORM_MAX_SPREAD` (2.0) of each
   other: one ``all_shapes`` investigation, represented by the slowest row that has launch evidence.
   Otherwise one investigation per slow row (scope = its params string).
2. **Launch evidence, one source per report** (:func:`cutile_workbench.evidence.launches.launch_evidence`):
   the per-launch captures of both sides, else the perf logs' ``kernel_times`` counts, else none.
   More candidate launches per call, or a PyTorch fallback as main kernel → launch finding naming
   each extra class (``fill``, ``copy``, ``memset``, ``elementwise <op>``, ``canary``, ``fallback``);
   high confidence when the main kernel's per-launch time is the same within :data:`SAME_TIME_TOL`.
3. **Per-launch gap** (:mod:`cutile_workbench.evidence.gap`) when the launch counts match: ``noise`` (≤ 1.05x),
   ``real`` (> 1.05x, the 95% interval above 1.05x or no interval), ``unresolved`` (the interval
   reaches 1.05x) or ``unknown``.
4. **Kernel identity per config** (:mod:`cutile_workbench.evidence.identity`): the candidate running one
   kernel for variants whose reference kernels differ, or a variant's config running another
   variant's kernel → FIXABLE "dispatch picks the wrong variant".
5. **Search space** (:mod:`cutile_workbench.evidence.search_space`, wrapper configs read statically for the
   session's GPU) and analysis.json's own ``best_config``/``autotune_key`` checks; **launch resources**
   of the main kernels (registers, static/dynamic smem, grid, block) and the ncu probe's spills and
   achieved occupancy: the register cap (255) where the reference stays below it, ≥ 2x the reference's
   smem above 100 KB, local-memory spill bytes > 2x the reference's, achieved occupancy <
   :data:`OCCUPANCY_RATIO` of the reference's.
6. **IR audit** (diff_ir.sh parity), only once the launch count is sane: FAIL_FIXABLE with a
   perf-relevant critical (diff_ir.sh's scalar ``assume_div_by`` critical is a correctness note). When
   step 5 found the reference's configs absent from the candidate's search space, the criticals a
   different tile config produces by itself (tile shape set, MMA accumulator shape, num_cta/occupancy
   hints: :data:`CONFIG_DRIVEN_IR`) are kept as a note that they follow from the config; only the
   others can make the IR a root cause.
7. **Static wrapper findings** are hypotheses: measured equal launch counts clear hot-path ones, and
   only launch attribution (``evidence.attribution``: the host stack of every activity of one
   un-timed call) confirms one — "confirmed" where an attributed launch was issued through that
   line, "static suspicion, not executed in the measured call" where none was; without attribution
   they stay unconfirmed. Each extra or foreign activity in steps 0 and 2 names the line that issued it.

Verdict rules (one test each in ``tests/unit/test_f_rules.py``):

- **V1** No E table, or no matched config → BLOCKED.
- **V2** No matched row slower than 1.05x, none where the candidate launches more per call
  (kernel_times counts) and none that did not run the candidate (step 0) → ALIGNED, high confidence
  (E's gate: nothing to fix). Rows with extra launches or a wrong identity are investigated even
  within the gate.
- **V3** Any fixable finding → FIXABLE. Fixable without further condition: extra launches or a fallback
  (step 2), a candidate-identity finding (step 0), a dispatch finding (step 4), a perf-relevant IR critical (step 6), a high-confidence
  static wrapper finding not cleared by measurement (step 7). Fixable **only with a real per-launch
  gap** (step 3; seed step 3: "If the reference best config is absent and the kernel-time gap is
  real, classify as FIXABLE"): search-space gaps, analysis.json config/key gaps, resource pressure,
  and the wrapper's ``autotune_missing`` / ``compile_options`` findings; without a real gap they are
  kept as notes that say so.
- **V4** ALIGNED (no fixable finding) only when launch counts match and either the per-launch gap is
  noise, or a named backend limitation is evidenced: the same Tile IR (diff_ir.sh PASS or
  PASS_WITH_NOTES), the same captured launch resources (registers, smem, grid, block), a candidate
  search space that covers the reference's (or no autotuning on either side), no dispatch finding —
  the residual is then tileiras/driver code generation for identical work, not Agent B code.
- **V5** Otherwise BLOCKED: no launch evidence; an unresolved (too noisy) gap; or a real gap without
  actionable evidence — the report lists every piece of evidence that is missing (captures, probe,
  wrapper source, IR pair, kernel names).

Confidence follows the evidence: FIXABLE takes its strongest fixable finding's confidence, capped at
medium when that finding needed the gap and the gap is a point estimate without an interval; ALIGNED is
high for noise measured on captures with an interval (or V2), else medium; BLOCKED is always low.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from cutile_workbench.artifacts.kernel_names import short_kernel_name
from cutile_workbench.evidence import attribution as attr
from cutile_workbench.evidence.gap import GapAssessment, assess_gap
from cutile_workbench.evidence.identity import config_kernels, dispatch_findings, kernel_functions_of
from cutile_workbench.evidence.launches import (
    LaunchEvidence,
    LaunchSummary,
    candidate_attribution,
    extra_launches,
    is_native,
    launch_evidence,
)
from cutile_workbench.evidence.ncu import ProbeResult, probe_advice, probe_for
from cutile_workbench.evidence.search_space import SpaceComparison
from cutile_workbench.ir.audit import IRAudit
from cutile_workbench.model import Finding, Investigation, RatioRow
from cutile_workbench.stages.f.finputs import FInputs

__all__ = [
    "all_findings",
    "classify_pattern",
    "config_findings",
    "diagnose",
    "resource_finding",
]

SLOW_RATIO = 1.05
UNIFORM_MIN_SHARE = 0.75
UNIFORM_MAX_SPREAD = 2.0
SAME_TIME_TOL = 0.10
REGISTER_CAP = 255
SMEM_PRESSURE_BYTES = 100 * 1024
SPILL_RATIO = 2.0
OCCUPANCY_RATIO = 0.75

Confidence = Literal["high", "medium", "low"]
_RANK = {"high": 2, "medium": 1, "low": 0}
#: finding rules that may decide FIXABLE only with a real per-launch gap (V3)
_GAP_GATED_KINDS = ("config", "resources")
_GAP_GATED_WRAPPER_RULES = ("autotune_missing", "compile_options")


# --------------------------------------------------------------------------- step 5 helpers

_KEY_ALIASES = {
    "batch": "q",
    "b": "q",
    "bs": "q",
    "n_rows": "m",
    "rows": "m",
    "cols": "n",
    "hidden": "n",
    "torch_dtype": "dtype",
}


def _norm_key(k: str) -> str:
    k = k.strip().lower()
    return _KEY_ALIASES.get(k, k)


def config_findings(analysis: Any, evidence_path: str) -> list[Finding]:
    """best_config ∈ autotune_configs, autotune_key completeness (§7.1). [] when nothing to check."""
    if analysis is None:
        return []
    out: list[Finding] = []
    configs: list[Mapping[str, Any]] = list(getattr(analysis, "autotune_configs", ()) or ())
    per_variant: dict[str, list[Mapping[str, Any]]] = {}
    for v in getattr(analysis, "kernel_variants", ()) or ():
        if v.autotune_configs:
            per_variant[v.variant_name] = list(v.autotune_configs)
    best = getattr(analysis, "best_config", None)
    if isinstance(best, Mapping) and best:
        items: list[tuple[str | None, Mapping[str, Any]]]
        if all(isinstance(v, Mapping) for v in best.values()):
            items = [(str(k), v) for k, v in best.items()]
        else:
            items = [(None, best)]
        for variant, cfg in items:
            space = per_variant.get(variant or "", []) + configs
            if not space:
                continue
            if not any(all(c.get(k) == val for k, val in cfg.items()) for c in space):
                out.append(
                    Finding(
                        "config",
                        f"reference best config {dict(cfg)} of variant {variant or '(single)'} is not in "
                        f"analysis.json's autotune configs ({len(space)} config(s))",
                        True,
                        (evidence_path,),
                        "high",
                        {"variant": variant, "best_config": dict(cfg), "rule": "analysis_best_config"},
                    )
                )
    autotune = getattr(analysis, "launch_path", None) == "autotune" or bool(configs) or bool(per_variant)
    key = [_norm_key(k) for k in getattr(analysis, "autotune_key", ()) or ()]
    if autotune:
        if not key:
            out.append(
                Finding(
                    "config",
                    "autotune is used but analysis.json has no autotune_key: the cache key cannot be checked",
                    False,
                    (evidence_path,),
                    "low",
                )
            )
        else:
            fields: dict[str, None] = {}
            for g in getattr(analysis, "test_perf_configs", ()) or ():
                for s in g.shapes:
                    for k in s.params:
                        if k not in ("id", "name", "group"):
                            fields.setdefault(_norm_key(k), None)
            missing = [f for f in fields if f not in key]
            if missing:
                out.append(
                    Finding(
                        "config",
                        f"autotune_key {list(getattr(analysis, 'autotune_key', ()))} lacks "
                        f"{', '.join(missing)}: configs tuned for one shape/dtype are reused for another",
                        True,
                        (evidence_path,),
                        "medium",
                        {"missing_key_fields": missing, "rule": "analysis_key"},
                    )
                )
    return out


def _probe_pressure(cand_probe: ProbeResult | None, base_probe: ProbeResult | None) -> list[str]:
    """Spill and occupancy pressure the ncu probes show (step 5)."""
    out: list[str] = []
    cs = cand_probe.spill_bytes if cand_probe else None
    bs = base_probe.spill_bytes if base_probe else None
    if cs is not None and cs > 0 and (bs is None or cs > SPILL_RATIO * bs):
        out.append(
            f"the candidate spills {cs:,.0f} B to local memory (reference: "
            f"{'n/a' if bs is None else f'{bs:,.0f} B'}; ncu probe)"
        )
    co = cand_probe.achieved_occupancy_pct if cand_probe else None
    bo = base_probe.achieved_occupancy_pct if base_probe else None
    if co is not None and bo is not None and bo > 0 and co < OCCUPANCY_RATIO * bo:
        out.append(f"achieved occupancy {co:.1f}% vs {bo:.1f}% for the reference (ncu probe)")
    return out


def resource_finding(
    cand: LaunchSummary | None,
    base: LaunchSummary | None,
    evidence: str,
    *,
    gap: GapAssessment | None = None,
    cand_probe: ProbeResult | None = None,
    base_probe: ProbeResult | None = None,
) -> Finding | None:
    """Same launch count: the main kernels' resources (captures, else the probes) and the probes'
    spills/occupancy. ``fixable`` means "would be fixable": :func:`diagnose` still requires a real gap."""

    def pick(attr: str, summary: Any, probe: Any) -> Any:
        v = getattr(summary, attr, None) if summary is not None else None
        return v if v is not None else (getattr(probe, attr, None) if probe is not None else None)

    rc, rb = pick("registers_per_thread", cand, cand_probe), pick("registers_per_thread", base, base_probe)
    sc = cand.smem_bytes if cand is not None else _probe_smem(cand_probe)
    sb = base.smem_bytes if base is not None else _probe_smem(base_probe)
    gc, gb = pick("grid", cand, cand_probe), pick("grid", base, base_probe)
    kc, kb = pick("block", cand, cand_probe), pick("block", base, base_probe)
    diffs: list[str] = []
    if rc is not None and rb is not None and rc != rb:
        diffs.append(f"registers/thread {rc} vs {rb}")
    if sc is not None and sb is not None and sc != sb:
        diffs.append(f"shared memory {sc / 1024:.0f} KB vs {sb / 1024:.0f} KB")
    if gc and gb and gc != gb:
        diffs.append(f"grid {gc} vs {gb}")
    if kc and kb and kc != kb:
        diffs.append(f"block {kc} vs {kb}")
    pressure: list[str] = []
    if rc is not None and rc >= REGISTER_CAP and (rb is None or rb < REGISTER_CAP):
        # both sides at the cap is no difference to fix (the reference pays the same pressure)
        pressure.append(
            f"the candidate sits at the register cap ({rc}/thread"
            + (f" vs {rb} for the reference)" if rb is not None else ")")
        )
    if sc is not None and sb is not None and sc >= 2 * sb and sc > SMEM_PRESSURE_BYTES:
        pressure.append(f"the candidate uses {sc / 1024:.0f} KB shared memory, ≥ 2x the reference's")
    pressure += _probe_pressure(cand_probe, base_probe)
    if not diffs and not pressure:
        return None
    real = gap is not None and gap.status == "real"
    names = (
        cand.backend if cand else cand_probe.backend if cand_probe else "candidate",
        base.backend if base else base_probe.backend if base_probe else "reference",
    )
    per = (
        f"main kernel {cand.main_per_launch_us / base.main_per_launch_us:.2f}x per launch; "
        if cand is not None and base is not None and base.main_per_launch_us > 0
        else ""
    )
    summary = f"same launch count, {per}{names[0]} vs {names[1]}: " + (
        ", ".join(diffs) or "same registers, shared memory, grid and block"
    )
    if pressure:
        summary += "; " + "; ".join(pressure)
        summary += (
            ": a smaller-tile or higher-occupancy config for this shape is missing"
            if real or gap is None
            else " (not decisive: no real per-launch gap)"
        )
    evidence_paths = tuple(
        e
        for e in (
            evidence if cand is not None else "",
            cand_probe.csv if cand_probe else "",
            base_probe.csv if base_probe else "",
        )
        if e
    )
    return Finding(
        "resources",
        summary,
        bool(pressure),
        evidence_paths,
        "medium",
        {
            "pressure": pressure,
            "diffs": diffs,
            "per_launch_ratio": (
                cand.main_per_launch_us / base.main_per_launch_us
                if cand is not None and base is not None and base.main_per_launch_us > 0
                else None
            ),
        },
    )


def _probe_smem(p: ProbeResult | None) -> int | None:
    if p is None or (p.static_smem is None and p.dynamic_smem is None):
        return None
    return (p.static_smem or 0) + (p.dynamic_smem or 0)


# --------------------------------------------------------------------------- the procedure


def classify_pattern(rows: Sequence[RatioRow]) -> tuple[str, list[RatioRow]]:
    """('none'|'uniform'|'shape_specific', slow rows) by the module's uniform rule."""
    matched = [r for r in rows if r.status == "OK" and r.ratio is not None]
    slow = [r for r in matched if r.ratio is not None and r.ratio > SLOW_RATIO]
    if not slow:
        return "none", []
    ratios = [r.ratio for r in slow if r.ratio is not None]
    share = len(slow) / len(matched)
    if share >= UNIFORM_MIN_SHARE and max(ratios) / min(ratios) <= UNIFORM_MAX_SPREAD:
        return "uniform", slow
    return "shape_specific", slow


def variant_pattern(rows: Sequence[RatioRow], slow: Sequence[RatioRow]) -> str | None:
    """Issue 32: the variant whose rows are exactly the slow ones (>= 2 slow rows, every matched row of
    that variant slow, and matched rows of another variant, none slow), else None."""
    matched = [r for r in rows if r.status == "OK" and r.ratio is not None]
    variants = {r.variant for r in slow}
    if len(slow) < 2 or len(variants) != 1 or None in variants:
        return None
    (v,) = variants
    slow_ids = {r.params for r in slow}
    own = [r for r in matched if r.variant == v]
    others = [r for r in matched if r.variant != v]
    if not others or any(r.params not in slow_ids for r in own) or any(r.params in slow_ids for r in others):
        return None
    return v


def _evidence_for(inputs: FInputs, row: RatioRow) -> LaunchEvidence:
    base_recs = inputs.baseline_records.get(row.baseline_backend or "", {})
    return launch_evidence(
        row,
        launch_sets=inputs.launch_sets,
        candidate_backend=inputs.candidate_backend,
        candidate_record=inputs.candidate_records.get((row.func_key, row.params)),
        baseline_record=base_recs.get((row.func_key, row.params)),
        launches_path=inputs.evidence.get("launches", "workbench/launches.json.gz"),
        perf_log_path=inputs.evidence.get("e_table", "perf_cutile_rs.txt"),
    )


def _issued_text(issued: list[attr.IssuedLine] | None, fallback: bool, has_captures: bool) -> str:
    """The lines that issued the candidate's extra (or, for a fallback, all) activities."""
    if issued is None:
        return (
            " (these captures carry no launch attribution: the lines that issued them are not evidenced)"
            if has_captures
            else ""
        )
    shown = [x for x in issued if fallback or x.cls != "main"]
    return f"; {attr.describe(shown)}" if shown else ""


def _launch_findings(
    le: LaunchEvidence, issued: list[attr.IssuedLine] | None = None
) -> tuple[list[Finding], bool | None]:
    """Step 2 for one config: (findings, launch counts match?) — None when there are no counts.
    ``issued``: the candidate's attributed activities by class and line (None: no attribution)."""
    c, b = le.candidate, le.baseline
    if not le.has_counts or c is None or b is None:
        return [], None
    assert c.launches_per_call is not None and b.launches_per_call is not None
    ev = (le.path,) if le.path else ()
    cs, bs = c.summary, b.summary
    fallback = cs is not None and is_native(cs.main_kernel)
    if c.launches_per_call > b.launches_per_call or fallback:
        same = (
            c.per_launch_us is not None
            and b.per_launch_us is not None
            and b.per_launch_us > 0
            and abs(c.per_launch_us / b.per_launch_us - 1) <= SAME_TIME_TOL
        )
        extras = extra_launches(cs, bs) if cs is not None and bs is not None else []
        kinds = (
            ", ".join(extras)
            if extras
            else ("unclassified" if cs is not None else "kinds unknown without per-launch captures")
        )
        conf: Confidence = "high" if same and cs is not None else "medium"
        unit = "GPU activities per call" if cs is not None else "launches/iter (kernel_times)"
        shown = [x for x in (issued or []) if fallback or x.cls != "main"]
        return [
            Finding(
                "launch_count",
                f"{c.backend} runs {c.launches_per_call} {unit} vs {b.launches_per_call} for "
                f"{b.backend}"
                + (" with the same per-launch kernel time" if same else "")
                + f"; extra: {kinds} — a wrapper/host hot-path issue"
                + _issued_text(issued, fallback, cs is not None),
                True,
                ev,
                conf,
                {
                    "extra": extras,
                    "same_per_launch": same,
                    "source": le.source,
                    "attributed": issued is not None,
                    "issued_at": [
                        {
                            "class": x.cls,
                            "kernel": x.name,
                            "count": x.count,
                            "file": x.frame.file if x.frame else None,
                            "line": x.frame.line if x.frame else None,
                            "code": x.frame.code if x.frame else None,
                            "library": x.library.where if x.library else None,
                        }
                        for x in shown
                    ],
                },
            )
        ], False
    if c.launches_per_call == b.launches_per_call:
        return [
            Finding(
                "launch_count",
                f"launch counts match: {c.launches_per_call}/call on both sides ({le.describe})",
                False,
                ev,
                "high" if cs is not None else "medium",
                {"source": le.source},
            )
        ], True
    return [
        Finding(
            "launch_count",
            f"{c.backend} runs fewer launches per call ({c.launches_per_call}) than "
            f"{b.backend} ({b.launches_per_call}): no extra wrapper work ({le.describe})",
            False,
            ev,
            "medium",
            {"source": le.source},
        )
    ], True


def _gap_for(le: LaunchEvidence, row: RatioRow, inputs: FInputs) -> GapAssessment:
    c, b = le.candidate, le.baseline
    cs = c.summary if c else None
    bs = b.summary if b else None
    if cs is not None and bs is not None:
        return assess_gap(
            cand_per_launch_ns=cs.main_durations_ns,
            base_per_launch_ns=bs.main_durations_ns,
            noise_floor=row.noise_floor,
        )
    one_each = bool(c and b and c.launches_per_call == 1 and b.launches_per_call == 1)
    crec = inputs.candidate_records.get((row.func_key, row.params))
    brec = inputs.baseline_records.get(row.baseline_backend or "", {}).get((row.func_key, row.params))
    return assess_gap(
        row=row,
        one_launch_each=one_each,
        cand_stats=crec.forward if crec else None,
        base_stats=brec.forward if brec else None,
        cand_per_launch_us=c.per_launch_us if c else None,
        base_per_launch_us=b.per_launch_us if b else None,
        noise_floor=row.noise_floor,
    )


#: diff_ir.sh criticals a different tile config produces by itself (tile sizes, CTA count, occupancy)
CONFIG_DRIVEN_IR = re.compile(
    r"^(?:(?:num_cta|occupancy) hint mismatch|tile shape set differs|MMA accumulator )"
)


def _ir_findings(
    inputs: FInputs, row: RatioRow, config_gap: str = ""
) -> tuple[list[Finding], IRAudit | None]:
    """Step 6. ``config_gap`` names a search-space finding of this row's variant (the reference's tuned
    config cannot be chosen by the candidate): then the criticals a different config produces by itself
    (:data:`CONFIG_DRIVEN_IR`) are its consequence, not a kernel.rs defect, and only the others decide."""
    audit = (
        inputs.ir_config_audits.get(row.params)
        or inputs.ir_audits.get(row.variant)
        or (next(iter(inputs.ir_audits.values())) if len(inputs.ir_audits) == 1 else None)
    )
    if audit is None:
        return [], None
    ev = (audit.ref_name, audit.gen_name)
    crit = [n[len("CRITICAL: ") :] for n in audit.notes if n.startswith("CRITICAL: ")]
    perf = [c for c in crit if not c.startswith("generated scalar assume_div_by")]
    out: list[Finding] = []
    if config_gap:
        follows = [c for c in perf if CONFIG_DRIVEN_IR.match(c)]
        perf = [c for c in perf if not CONFIG_DRIVEN_IR.match(c)]
        if follows:
            out.append(
                Finding(
                    "ir",
                    f"diff_ir.sh criticals that follow from the different tuned config, not from "
                    f"kernel.rs: {'; '.join(follows)} ({config_gap}): re-audit the IR after re-tuning",
                    False,
                    ev,
                    "medium",
                    {"verdict": audit.verdict, "config_driven": follows},
                )
            )
    if audit.verdict == "FAIL_FIXABLE" and perf:
        return [
            *out,
            Finding(
                "ir",
                f"diff_ir.sh verdict FAIL_FIXABLE: {'; '.join(perf)}"
                + (
                    f" (also: {'; '.join(c for c in crit if c not in perf)})" if len(perf) < len(crit) else ""
                ),
                True,
                ev,
                "medium",
                {"verdict": audit.verdict, "critical": perf},
            ),
        ], audit
    if out:
        return out, audit
    if audit.verdict == "FAIL_FIXABLE":
        return [
            Finding(
                "ir",
                f"diff_ir.sh verdict FAIL_FIXABLE only for: {'; '.join(crit)} (a correctness "
                "hazard, not a perf cause)",
                False,
                ev,
                "medium",
                {"verdict": audit.verdict, "critical": crit},
            )
        ], audit
    text = (
        "diff_ir.sh verdict PASS"
        if audit.verdict == "PASS"
        else f"diff_ir.sh verdict PASS_WITH_NOTES ({audit.workaround_count} workaround op(s), "
        f"{audit.note_count} note(s)): no B-addressable IR mismatch"
    )
    return [Finding("ir", text, False, ev, "medium", {"verdict": audit.verdict})], audit


_HOT_PATH_RULES = ("canary_hot_path", "kernel_fn_alloc", "second_output", "hot_path_copy")


def _cross_check_wrapper(
    wrapper: Sequence[Finding],
    launch: Sequence[Finding],
    cand_set: attr.Attributed | None = None,
    main_kernel: str | None = None,
) -> list[Finding]:
    """Static wrapper findings are hypotheses: only the attributed launches confirm one (issue 32).

    A hot-path rule (extra launch/alloc/copy) is **confirmed** (fixable, high) only where an
    attributed launch of the candidate's un-timed call was issued through that very line on a path of
    its own (not the measured main launch's: ``attribution.extra_launches_at``); with attribution and
    no launch at that line it is a static suspicion, not executed in the measured call (low, not
    fixable); a line only the main launch's own path runs through is not confirmed either. Without attribution it stays what the static audit said, labelled
    unconfirmed (capped at medium): a launch count alone confirms no line. Measured equal launch
    counts still clear hot-path findings (kept as notes)."""
    extra = any(f.kind == "launch_count" and f.fixable for f in launch)
    measured_equal = any(f.kind == "launch_count" and not f.fixable for f in launch)
    attributed = cand_set is not None and bool(cand_set.attribution)
    out: list[Finding] = []
    for f in wrapper:
        rule = str(f.details.get("rule", ""))
        if rule not in _HOT_PATH_RULES:
            out.append(f)
            continue
        file, line = str(f.details.get("file", "")), int(f.details.get("line", 0) or 0)
        hits = attr.extra_launches_at(cand_set, main_kernel, file, line) if attributed else []
        on_main_path = bool(attributed and not hits and attr.launches_at(cand_set, file, line))
        if on_main_path:
            out.append(
                Finding(
                    f.kind,
                    f"{f.summary} (not confirmed: every attributed launch through {file}:{line} is the "
                    "measured main kernel's own path)",
                    False,
                    f.evidence,
                    "low",
                    {**f.details, "confirmed_by": None, "executed": True},
                )
            )
        elif hits:
            names = sorted({short_kernel_name(a.name) for a in hits})
            out.append(
                Finding(
                    f.kind,
                    f"{f.summary} (confirmed: the attributed call issued {len(hits)} GPU "
                    f"activit{'y' if len(hits) == 1 else 'ies'} through {file}:{line}: "
                    + ", ".join(f"`{n}`" for n in names)
                    + ")",
                    True,
                    f.evidence,
                    "high",
                    {**f.details, "confirmed_by": "attribution", "attributed_launches": names},
                )
            )
        elif attributed:
            out.append(
                Finding(
                    f.kind,
                    f"{f.summary} (static suspicion, not executed in the measured call: no attributed "
                    f"launch was issued through {file}:{line})",
                    False,
                    f.evidence,
                    "low",
                    {**f.details, "confirmed_by": None, "executed": False},
                )
            )
        elif measured_equal:
            out.append(
                Finding(
                    f.kind,
                    f"{f.summary} (not confirmed: measured launch counts match the reference)",
                    False,
                    f.evidence,
                    "low",
                    dict(f.details),
                )
            )
        elif extra:
            conf: Confidence = "medium" if f.confidence == "high" else f.confidence
            out.append(
                Finding(
                    f.kind,
                    f"{f.summary} (unconfirmed: the captures carry no launch attribution, so the extra "
                    "launches are not tied to this line)",
                    f.fixable,
                    f.evidence,
                    conf,
                    {**f.details, "confirmed_by": None},
                )
            )
        else:
            out.append(f)
    return out


def _gap_gated(f: Finding) -> bool:
    return f.kind in _GAP_GATED_KINDS or (
        f.kind == "wrapper" and f.details.get("rule") in _GAP_GATED_WRAPPER_RULES
    )


def _gate(findings: Sequence[Finding], gap: GapAssessment | None) -> list[Finding]:
    """V3: a gap-gated finding decides only with a real gap; otherwise it stays as a note saying why."""
    out = []
    for f in findings:
        if not (f.fixable and _gap_gated(f)):
            out.append(f)
            continue
        if gap is not None and gap.status == "real":
            conf = f.confidence if gap.ci is not None or f.confidence == "low" else "medium"
            out.append(
                Finding(f.kind, f.summary, True, f.evidence, conf, {**f.details, "gated_on": gap.text})
            )
        else:
            why = gap.text if gap is not None else "no per-launch gap measured"
            out.append(
                Finding(
                    f.kind,
                    f"{f.summary} (not decisive: {why})",
                    False,
                    f.evidence,
                    "low",
                    {**f.details, "gated_on": why},
                )
            )
    return out


def _space_for(inputs: FInputs, variant: str | None) -> SpaceComparison | None:
    return inputs.search_space.for_variant(variant) if inputs.search_space is not None else None


def _space_covered(inputs: FInputs, variant: str | None) -> tuple[bool, str]:
    """(covered, why): the candidate's search space covers the reference's, or neither autotunes."""
    comp = _space_for(inputs, variant)
    if comp is not None:
        return comp.covers_reference, comp.candidate.origin
    audit = inputs.search_space
    if audit is None or not inputs.wrapper_read:
        return False, "the cutile-rs wrapper source was not read"
    if not audit.candidate_spaces and not audit.reference_spaces:
        return (
            True,
            "neither side autotunes (no configs in the wrapper, the reference wrapper or analysis.json)",
        )
    return False, "the candidate and reference search spaces could not be paired"


def _named_limitation(
    inputs: FInputs, row: RatioRow, le: LaunchEvidence, audit: IRAudit | None, findings: Sequence[Finding]
) -> tuple[str | None, list[str]]:
    """V4's evidence chain: (limitation text, or None with the links that are missing)."""
    missing: list[str] = []
    if audit is None:
        missing.append(f"no reference/generated IR pair for variant {row.variant or '(single)'}")
    elif audit.verdict == "FAIL_FIXABLE":
        missing.append("the Tile IR differs (diff_ir.sh FAIL_FIXABLE)")
    summaries = le.summaries
    cprobe = probe_for(inputs.probes, inputs.candidate_backend, row.params)
    bprobe = probe_for(inputs.probes, row.baseline_backend, row.params)
    pairs: list[tuple[Any, Any]] | None = None
    if len(summaries) == 2:
        base, cand = summaries
        pairs = [
            (cand.registers_per_thread, base.registers_per_thread),
            (cand.smem_bytes, base.smem_bytes),
            (cand.grid, base.grid),
            (cand.block, base.block),
        ]
    elif cprobe is not None and bprobe is not None:
        pairs = [
            (cprobe.registers_per_thread, bprobe.registers_per_thread),
            (_probe_smem(cprobe), _probe_smem(bprobe)),
            (cprobe.grid, bprobe.grid),
            (cprobe.block, bprobe.block),
        ]
    if pairs is None:
        missing.append(
            "no per-launch capture or ncu probe of both sides: launch resources (registers, smem, grid, "
            "block) unknown"
        )
    elif not all(x is not None and x == y for x, y in pairs):
        missing.append("launch resources differ or are not all known (registers, smem, grid, block)")
    if _probe_pressure(cprobe, bprobe):
        missing.append("the ncu probe shows spill or occupancy pressure")
    covered, why = _space_covered(inputs, row.variant)
    if not covered:
        missing.append(f"search space not shown to cover the reference's: {why}")
    if any(f.kind == "dispatch" for f in findings):
        missing.append("a dispatch finding")
    if missing:
        return None, missing
    return (
        "named backend limitation: the same Tile IR (diff_ir.sh "
        + (audit.verdict if audit else "")
        + "), the same launch resources and a search space that covers the reference's run slower: the "
        "residual is tileiras/driver code generation for identical work, not Agent B code"
    ), []


def _probe_hint(inputs: FInputs, row: RatioRow) -> str:
    line = probe_advice(inputs.kernel, row.params, row.func_key, inputs.locator)
    return f"`{line}` (ncu on one call of each side: spills, achieved occupancy, DRAM throughput)"


def _verdict(
    findings: Sequence[Finding],
    *,
    counts_match: bool | None,
    gap: GapAssessment | None,
    limitation: str | None,
    capture: bool,
) -> tuple[str, Confidence]:
    fixable = [f for f in findings if f.fixable]
    if fixable:
        best = max(fixable, key=lambda f: _RANK[f.confidence])
        return "FIXABLE", best.confidence
    if counts_match and gap is not None and gap.status == "noise":
        return "ALIGNED", "high" if capture and gap.ci is not None else "medium"
    if counts_match and limitation is not None:
        return "ALIGNED", "medium"
    return "BLOCKED", "low"


def _missing_findings(inputs: FInputs) -> list[Finding]:
    return [Finding("missing", m, False, (), "low") for m in inputs.missing]


def _blocked_all(inputs: FInputs, why: str) -> Investigation:
    table = inputs.table
    # IR audits still inform the reader, but cannot decide a verdict without a measured gap
    info = [
        Finding(
            "ir",
            f"{a.verdict_line} for {a.ref_name} vs {a.gen_name} (no E data to tie it to a gap)",
            False,
            (a.ref_name, a.gen_name),
            "low",
        )
        for a in inputs.ir_audits.values()
    ]
    findings = [
        Finding(
            "missing",
            f"{why}: no trustworthy diagnosis is possible",
            False,
            (inputs.evidence.get("e_table", "perf_cutile_rs.txt"),),
            "low",
        ),
        *_missing_findings(inputs),
        *info,
    ]
    return Investigation(
        inputs.kernel,
        "all_shapes",
        "BLOCKED",
        list(table.rows) if table else [],
        findings,
        "none",
        {
            "representative": None,
            "confidence": "low",
            "launch_summaries": [],
            "launch_evidence": None,
            "gap": None,
            "rule": "V1",
        },
    )


def identity_findings(inputs: FInputs, rows: Sequence[RatioRow]) -> list[Finding]:
    """Step 0: a row whose candidate ran the reference's kernel, only library kernels, or nothing measurable
    is FIXABLE whatever its ratio (a passing ratio of the reference against itself proves nothing)."""
    trust = inputs.trust
    if trust is None:
        return []
    out: list[Finding] = []
    for r in rows:
        ident = trust.identities.get(r.params)
        if ident is None or not ident.not_candidate:
            continue
        cand = ident.candidate.symbol if ident.candidate else "none"
        base = ident.baseline.symbol if ident.baseline else "n/a"
        where = tuple(e for e in (ident.evidence, *(c.split(": ", 1)[0] for c in ident.wrapper_calls)) if e)
        ratio = f"{r.ratio:.3f}x" if r.ratio is not None else "NA"
        issued = attr.issued_by_class(
            candidate_attribution(inputs.launch_sets, r, inputs.candidate_backend), None
        )
        out.append(
            Finding(
                "identity",
                f"config {r.params} ({ratio}) does not measure the candidate: {ident.why} "
                f"(candidate `{cand}` vs reference `{base}`)"
                + (
                    "; the wrapper delegates: " + "; ".join(ident.wrapper_calls)
                    if ident.wrapper_calls
                    else ""
                )
                + (f"; the attributed call ran: {attr.describe(issued)}" if issued else ""),
                True,
                where,
                "high",
                {
                    "rule": "candidate_identity",
                    "config": r.params,
                    "kind": ident.kind,
                    "candidate_kernel": cand,
                    "baseline_kernel": base,
                    "same_launch": ident.same_launch,
                    "wrapper_calls": list(ident.wrapper_calls),
                    "issued_at": [
                        {
                            "class": x.cls,
                            "kernel": x.name,
                            "count": x.count,
                            "file": x.frame.file if x.frame else None,
                            "line": x.frame.line if x.frame else None,
                            "code": x.frame.code if x.frame else None,
                            "where": x.where,
                        }
                        for x in issued or []
                    ],
                },
            )
        )
    return out


def _relevant(f: Finding, rows: Sequence[RatioRow]) -> bool:
    """A kernel-wide finding that names configs/variants applies to the investigations holding them."""
    params = {r.params for r in rows}
    variants = {r.variant for r in rows}
    d = f.details
    if d.get("configs"):
        return bool(params & set(d["configs"]))
    if d.get("config"):
        return d["config"] in params
    if "variant" in d and d.get("rule") == "search_space":
        return d["variant"] in variants or d["variant"] is None or len(variants) > 1
    return True


def diagnose(inputs: FInputs) -> list[Investigation]:
    """Run the procedure and the verdict rules of the module docstring; one Investigation per report."""
    missing = _missing_findings(inputs)
    table = inputs.table
    if table is None or not table.matched:
        return [
            _blocked_all(
                inputs, "no E ratio table" if table is None else "the E table has no matched config (all NA)"
            )
        ]
    pattern, slow = classify_pattern(table.rows)
    extra = [
        r
        for r in table.matched
        if r.candidate_launches is not None
        and r.baseline_launches is not None
        and r.candidate_launches > r.baseline_launches
    ]
    if pattern == "none" and extra:
        # within E's gate overall, but the candidate launches more per call: a wrapper defect (V2's condition)
        pattern, slow = "shape_specific", extra
    not_candidate = [r for r in table.matched if identity_findings(inputs, [r])]
    if pattern == "none" and not_candidate:
        # passing rows that did not run the candidate: never ALIGNED (step 0)
        pattern, slow = "shape_specific", not_candidate
    if pattern == "none":
        gm = f"{table.geomean:.4f}" if table.geomean is not None else "n/a"
        # nothing to investigate, but the launch evidence is still shown per config (it backs V2's
        # "no extra launches" half, and the reader sees the same counts the E table lists)
        evidences = {r.params: _evidence_for(inputs, r) for r in table.matched}
        paths = sorted({le.path for le in evidences.values() if le.has_counts and le.path})
        f = Finding(
            "ratio",
            f"no matched config is slower than {SLOW_RATIO} (geomean_ratio={gm}): nothing to fix",
            False,
            (inputs.evidence.get("e_table", "reports/performance.md"), *paths),
            "high",
        )
        return [
            Investigation(
                inputs.kernel,
                "all_shapes",
                "ALIGNED",
                list(table.matched),
                [f, *missing],
                "none",
                {
                    "representative": None,
                    "confidence": "high",
                    "launch_summaries": [],
                    "launch_evidence": None,
                    "gap": None,
                    "rule": "V2",
                    "row_evidence": evidences,
                    "e_verdict": table.verdict,
                },
            )
        ]
    analysis_path = inputs.evidence.get("analysis", "reference/analysis.json")
    cfg = config_findings(inputs.analysis, analysis_path)
    kernels = config_kernels(
        table.matched,
        launch_sets=inputs.launch_sets,
        candidate_backend=inputs.candidate_backend,
        candidate_records=inputs.candidate_records,
        baseline_records=inputs.baseline_records,
        kernel_functions=kernel_functions_of(inputs.analysis),
    )
    ident_ev = [
        e
        for e in (
            inputs.evidence.get("launches")
            if kernels and kernels[0].source != "kernel_times"
            else inputs.evidence.get("e_table"),
        )
        if e
    ]
    dispatch = dispatch_findings(kernels, ident_ev)
    space = inputs.search_space.findings() if inputs.search_space is not None else []

    def investigate(scope: str, rows: list[RatioRow], pat: str) -> Investigation:
        evidences = {r.params: _evidence_for(inputs, r) for r in rows}
        with_counts = [r for r in rows if evidences[r.params].has_counts]
        rep = max(with_counts or rows, key=lambda r: r.ratio or 0.0)
        le = evidences[rep.params]
        cand_set = candidate_attribution(inputs.launch_sets, rep, inputs.candidate_backend)
        cs0 = le.candidate.summary if le.candidate is not None else None
        issued = attr.issued_by_class(cand_set, cs0.main_kernel if cs0 else None)
        lf, counts_match = _launch_findings(le, issued)
        gap = _gap_for(le, rep, inputs) if counts_match else None
        findings: list[Finding] = list(lf)
        if gap is not None:
            findings.append(
                Finding(
                    "gap",
                    gap.text,
                    False,
                    (le.path,) if le.path else (),
                    "medium" if gap.ci is None else "high",
                    {"status": gap.status},
                )
            )
        cprobe = probe_for(inputs.probes, inputs.candidate_backend, rep.params)
        bprobe = probe_for(inputs.probes, rep.baseline_backend, rep.params)
        summaries = le.summaries
        if counts_match and (len(summaries) == 2 or cprobe is not None or bprobe is not None):
            cs, bs = (summaries[1], summaries[0]) if len(summaries) == 2 else (None, None)
            rf = resource_finding(cs, bs, le.path, gap=gap, cand_probe=cprobe, base_probe=bprobe)
            if rf is not None:
                findings.append(rf)
        findings += [f for f in dispatch if _relevant(f, rows)]
        findings += [f for f in space if _relevant(f, rows)] + cfg
        irf, audit = _ir_findings(
            inputs, rep, _config_gap([f for f in space if _relevant(f, rows)], rep.variant)
        )
        if any(f.kind == "launch_count" and f.fixable for f in lf):
            # launch count not sane yet: IR differences cannot be ranked as the cause (agent_f.md step 4)
            irf = [
                Finding(
                    f.kind,
                    f"{f.summary} (secondary: re-audit once the extra launches are gone)",
                    False,
                    f.evidence,
                    "low",
                    dict(f.details),
                )
                for f in irf
            ]
        findings += (
            _cross_check_wrapper(inputs.wrapper_findings, lf, cand_set, cs0.main_kernel if cs0 else None)
            + irf
        )
        ident = identity_findings(inputs, rows)
        if ident:
            # the measured kernel is not the candidate's: its IR, config and resources cannot explain these
            # numbers (step 0 first; they stay listed as secondary)
            findings = [
                Finding(
                    f.kind,
                    f"{f.summary} (secondary: the measurement did not run the candidate's kernel)",
                    False,
                    f.evidence,
                    "low",
                    dict(f.details),
                )
                if f.fixable and f.kind in ("ir", "config", "resources")
                else f
                for f in findings
            ]
            findings = [*ident, *findings]
        findings = _gate(findings, gap)
        limitation: str | None = None
        links: list[str] = []
        if counts_match and gap is not None and gap.status == "real" and not any(f.fixable for f in findings):
            limitation, links = _named_limitation(inputs, rep, le, audit, findings)
        verdict, conf = _verdict(
            findings, counts_match=counts_match, gap=gap, limitation=limitation, capture=len(summaries) == 2
        )
        if verdict == "BLOCKED":
            findings += _blocked_reasons(inputs, rep, le, counts_match, gap, links, audit)
        elif limitation is not None:
            findings.append(Finding("limitation", limitation, False, (), "medium"))
        rule = "V3" if verdict == "FIXABLE" else "V4" if verdict == "ALIGNED" else "V5"
        details: dict[str, Any] = {
            "representative": rep.params,
            "confidence": conf,
            "launch_summaries": summaries,
            "launch_evidence": le,
            "gap": gap,
            "rule": rule,
            "row_evidence": evidences,
            "kernels": [k for k in kernels if k.params in {r.params for r in rows}],
            "search_space": _space_for(inputs, rep.variant),
            "probes": (cprobe, bprobe),
        }
        return Investigation(
            inputs.kernel,
            scope,
            verdict,  # type: ignore[arg-type]
            rows,
            [*findings, *missing],
            pat,  # type: ignore[arg-type]
            details,
        )

    if pattern == "uniform":
        invs = [investigate("all_shapes", slow, "uniform")]
    else:
        var = variant_pattern(table.rows, slow)
        invs = [investigate(r.params, [r], "variant" if var else "shape_specific") for r in slow]
        for inv in invs:
            if var:
                inv.details["variant_pattern"] = var
    covered = {r.params for inv in invs for r in inv.rows}
    # a passing row that did not run the candidate gets its own report (step 0), never silence
    invs += [investigate(r.params, [r], "shape_specific") for r in not_candidate if r.params not in covered]
    return invs


def _config_gap(space: Sequence[Finding], variant: str | None) -> str:
    """The search-space finding of ``variant`` whose reference configs the candidate cannot pick, as a
    short reason ("" when the candidate's space covers the reference's)."""
    for f in space:
        d = f.details
        if not f.fixable or d.get("rule") != "search_space" or d.get("variant") not in (variant, None):
            continue
        if d.get("best_present") is False:
            return f"the reference best config {d.get('best')} is absent from the candidate's search space"
        if d.get("missing") or d.get("absent_knobs"):
            return "reference configs are absent from the candidate's search space"
    return ""


def _blocked_reasons(
    inputs: FInputs,
    rep: RatioRow,
    le: LaunchEvidence,
    counts_match: bool | None,
    gap: GapAssessment | None,
    links: Sequence[str],
    audit: IRAudit | None,
) -> list[Finding]:
    """V5: what stops a verdict, as ``missing`` findings (the report's Root Cause for BLOCKED)."""
    out: list[str] = []
    if counts_match is None:
        out.append(
            f"no launch evidence for {rep.params}: neither per-launch captures of both sides nor "
            "kernel_times counts in both perf logs"
        )
    elif gap is None or gap.status == "unknown":
        out.append(f"no per-launch kernel time on both sides for {rep.params}")
    elif gap.status == "unresolved":
        out.append(
            f"the per-launch gap is unresolved: {gap.text}; re-measure this config (more samples) or run "
            + _probe_hint(inputs, rep)
        )
    elif gap.status == "real":
        out.append(
            f"a real per-launch gap ({gap.text}) with no actionable wrapper, dispatch, config, resource or IR "
            "finding; missing evidence: " + "; ".join(links or ["none listed"])
        )
        if not inputs.probes:
            out.append("no ncu probe for this config: run " + _probe_hint(inputs, rep))
    if audit is None and not any("IR pair" in x for x in links):
        out.append(f"no reference/generated IR pair for variant {rep.variant or '(single)'}")
    return [Finding("missing", x, False, (), "low") for x in out]


def all_findings(invs: Iterable[Investigation]) -> list[Finding]:
    seen: dict[tuple[str, str], Finding] = {}
    for inv in invs:
        for f in inv.findings:
            seen.setdefault((f.kind, f.summary), f)
    return list(seen.values())
