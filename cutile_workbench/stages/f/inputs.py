"""Read everything Agent F needs from a workspace, with E's strictness.

Contract of :func:`collect_inputs` (returns :class:`~cutile_workbench.stages.f.finputs.FInputs`):
- An input that is **absent** becomes a ``missing`` line (the diagnosis may then be BLOCKED); an input
  that is **present but malformed** raises :class:`~cutile_workbench.errors.InputError` naming file and line or
  key — the CLI exits 2 and nothing is written, exactly as ``report e`` does. F never computes E figures
  E would have refused.
- The E table is E's own: the candidate logs through :func:`cutile_workbench.stages.e.report.load_candidate` (the
  raw tee or ``perf_cutile_rs.txt``, per-variant logs merged, strict parser), the baselines through
  the workspace's strict parser, the table through :func:`cutile_workbench.stages.e.stats.build_ratio_table`; the perf
  records behind it are kept for launch evidence and kernel identity. analysis.json is re-read with
  :func:`cutile_workbench.artifacts.analysis.load_analysis` when the workspace was opened leniently.
- Strictly read too: ``workbench/launches.json.gz``, every IR pair, ``workbench/session.json``, the
  cutile-rs wrapper (static audit and search space; needs a TileGym checkout) and the reference
  cuTile wrapper beside it, ``workbench/probes/*.json``.
- The session's GPU (:func:`cutile_workbench.evidence.gpu.gpu_facts`) resolves the wrappers' arch branches.
- Candidate identity per row and the reference's config (:func:`cutile_workbench.stages.e.report.workspace_trust`,
  the same answer E's table and performance.md show).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cutile_workbench.artifacts.candidate import resolve_candidate_backend
from cutile_workbench.artifacts.workspace import Workspace
from cutile_workbench.errors import Blocked
from cutile_workbench.ir.audit import IRAudit, audit_texts
from cutile_workbench.ir.loader import discover_ir, load_pair
from cutile_workbench.model import Finding, LaunchSet
from cutile_workbench.stages.f.finputs import FInputs
from cutile_workbench.stages.session.kernel import KernelSession


def _rel(ws: Workspace, p: Path | str) -> str:
    try:
        return str(Path(p).resolve().relative_to(Path(ws.paths.root).resolve()))
    except (ValueError, OSError):
        return str(p)


def reference_wrapper_source(ws: Workspace) -> Path | None:
    """``src/tilegym/ops/cutile/<kernel>.py`` of the TileGym checkout, when present."""
    tilegym = getattr(ws, "tilegym", None)
    if tilegym is None:
        return None
    p = Path(tilegym) / "src" / "tilegym" / "ops" / "cutile" / f"{ws.kernel}.py"
    return p if p.is_file() else None


def _analysis(ws: Workspace) -> Any:
    """The workspace's analysis, or the located error a strict read gives (E opens strictly)."""
    if ws.analysis is None and ws.paths.analysis_json.is_file():
        from cutile_workbench.artifacts.analysis import load_analysis

        return load_analysis(ws.paths.analysis_json)  # raises InputError with file/line/key
    return ws.analysis


def collect_inputs(ws: Workspace | KernelSession, *, candidate_backend: str | None = None) -> FInputs:
    """Everything F reads for ``ws`` — a workspace, or the command's :class:`KernelSession`, whose facts
    (E's table, the launch store, trust, probes) are read once for every face (see the module docstring)."""
    session = KernelSession.of(ws)
    ws = session.ws
    paths = ws.paths
    missing: list[str] = []
    evidence: dict[str, str] = {}
    analysis = _analysis(ws)
    if analysis is None:
        missing.append("reference/analysis.json: absent (no config/cache-key audit, no variants)")
    else:
        evidence["analysis"] = _rel(ws, paths.analysis_json)
    meta = session.session_meta()  # InputError when malformed

    table = None
    cand_name = candidate_backend
    records = None
    etable = None
    try:
        if analysis is ws.analysis:
            etable = session.e_table()  # E's own table, the session's (cached on its inputs' hash)
            records = session.row_records()  # cached on the table's key: no log parsed when warm
        else:  # opened leniently with a usable analysis.json re-read strictly: E's table of that one
            from cutile_workbench.stages.e.e_table import load_e_table
            from cutile_workbench.stages.session.records import row_records

            etable = load_e_table(ws, analysis=analysis)
            records = row_records(etable)
        evidence["perf_log"] = " + ".join(raw.source for raw in etable.raw_logs)
    except Blocked as exc:
        missing.append(f"candidate perf log: {exc.message} (run E first)")
    if records is not None and etable is not None:
        if not records.baselines:
            missing.append("baseline_perf_cutile.txt / baseline_perf_triton_tileir.txt: absent")
        else:
            from cutile_workbench.history.noise import table_with_noise

            # F's noise band (issue 18 §4): the table every face shows, the session's when it is its E table
            table = (
                session.table()
                if etable is session.any_e_table()
                else table_with_noise(etable.table, paths, set(records.frameworks))
            )
            evidence["e_table"] = " + ".join(
                [evidence["perf_log"]]
                + [_rel(ws, p) for p in (paths.baseline_cutile, paths.baseline_triton_tileir) if p.is_file()]
            )
    # one order for F and the TUI (artifacts.candidate); F assumes cutile-rs when nothing says
    frameworks = records.frameworks if records is not None else None
    cand_name = resolve_candidate_backend(meta, frameworks, explicit=cand_name) or "cutile-rs"
    base_recs = records.baselines if records is not None else {}

    launch_sets: Sequence[LaunchSet] = []
    store = session.launches()  # InputError when malformed; each row's sets decoded when F reads that row
    if store is not None:
        launch_sets = store
        evidence["launches"] = _rel(ws, paths.launches_json)
    else:
        missing.append(
            f"{_rel(ws, paths.launches_json)}: absent (no per-launch CUPTI capture; the perf logs' "
            "kernel_times counts are used instead)"
        )

    audits = _ir_audits(ws, missing)
    gpu = session.gpu()
    wrapper_findings, search, wrapper_read = _wrapper_evidence(ws, analysis, gpu, evidence, missing)

    probes = dict(session.probes())
    if probes:
        evidence["probes"] = _rel(ws, paths.workbench_dir / "probes")
    from cutile_workbench.evidence.sol import recorded_argnames, test_argnames

    argnames = {
        **recorded_argnames(ws.kernel),
        **test_argnames(getattr(ws, "tilegym", None), (r.func_key for r in table.matched) if table else ()),
    }
    tuned = _autotune_tables(ws, evidence)  # issue 32: both sides' autotune tables (events)
    trust = None
    if table is not None and records is not None:
        # the reference's config pinned where trust is derived (evidence.pinning): E's faces state the same
        trust = session.trust(None if session.is_shown(table) else table)
        if search is not None:
            search = with_ran_configs(search, trust, table)
    return FInputs(
        ws.kernel,
        table,
        launch_sets,
        analysis,
        audits,
        wrapper_findings,
        cand_name,
        evidence,
        missing,
        candidate_records=records.candidate if records is not None else {},
        baseline_records=base_recs,
        search_space=search,
        probes=probes,
        gpu=gpu,
        wrapper_read=wrapper_read,
        perf_argnames=argnames,
        ir_config_audits=_ir_config_audits(ws),
        trust=trust,
        stand_ins=_stand_ins(frameworks, meta, table),
        autotune=tuned,
        locator=ws.locator,
    )


def _autotune_tables(ws: Workspace, evidence: dict[str, str]) -> dict[tuple[str, str], Any]:
    """Both sides' autotune tables from workbench/events.jsonl (issue 32); none when absent. A malformed
    stream raises InputError naming the file and line, as every input F reads."""
    from cutile_workbench.artifacts.events import read_events
    from cutile_workbench.evidence.autotune import tables_from_events

    path = ws.paths.events_jsonl
    if not path.is_file():
        return {}
    tables = tables_from_events(read_events(path, allow_truncated_tail=True))
    if tables:
        evidence["autotune"] = _rel(ws, path)
    return dict(tables)


def ran_configs_by_variant(trust: Any, table: Any) -> dict[str | None, list[Any]]:
    """``{variant: [ReferenceConfig, …]}`` of the matched rows whose reference config the evidence pins."""
    out: dict[str | None, list[Any]] = {}
    for r in table.matched:
        rc = trust.reference_configs.get(r.params)
        if rc is not None and rc.decided:
            out.setdefault(r.variant, []).append(rc)
    return out


def with_ran_configs(search: Any, trust: Any, table: Any) -> Any:
    """The search-space audit with each variant's "best" config taken from what the reference RAN (its captured
    symbol decoded, :mod:`cutile_workbench.evidence.reference_config`) when every row of the variant pins the same
    config — the captures outrank analysis.json's ``best_config`` (a claim), and a disagreement is noted."""
    from cutile_workbench.evidence.search_space import compare_spaces

    ran = ran_configs_by_variant(trust, table)
    comparisons = []
    for c in search.comparisons:
        rcs = ran.get(c.variant) or (ran.get(None) if c.variant is None else None) or []
        labels = {rc.config.label for rc in rcs}
        if len(labels) != 1:
            comparisons.append(c)
            continue
        rc = rcs[0]
        src = f"the reference's captured kernel symbol `{rc.symbol}` ({rc.constants_source})"
        if c.best is not None and not c.best.matches(rc.config, [k for k, _ in c.best.knobs]):
            search.notes.append(
                f"variant {c.variant or '(single)'}: {c.best_source} says {c.best.label}, but the "
                f"reference ran {rc.config.label} (its captured symbol): the captures win"
            )
        comparisons.append(compare_spaces(c.candidate, c.reference, c.variant, (rc.config, src)))
    search.comparisons = comparisons
    return search


def _stand_ins(frameworks: tuple[str, ...] | None, meta: Any, table: Any) -> tuple[str, ...]:
    from cutile_workbench.artifacts.stand_ins import stand_ins_of

    keys = {r.baseline_backend for r in table.matched if r.baseline_backend} if table is not None else set()
    return tuple(stand_ins_of(set(frameworks) if frameworks is not None else None, meta, keys).lines())


def _ir_config_audits(ws: Workspace) -> dict[str, IRAudit]:
    """The IR each config ran (``workbench/ir/index.json``), audited like the variant pairs."""
    from cutile_workbench.ir.filing import index_file, read_index

    out: dict[str, IRAudit] = {}
    for params, sides in read_index(ws.paths.root)["configs"].items():  # InputError on a bad index
        if not (
            isinstance(sides, dict)
            and isinstance(sides.get("reference"), dict)
            and isinstance(sides.get("candidate"), dict)
        ):
            continue
        # every file the index names is confined to the kernel dir (UnsafePath: exit 2, naming index and key)
        ref = index_file(ws.paths.root, sides["reference"], str(params), "reference")
        gen = index_file(ws.paths.root, sides["candidate"], str(params), "candidate")
        from cutile_workbench.ir.loader import IRPairPaths

        lp = load_pair(IRPairPaths(None, ref, gen))
        out[str(params)] = audit_texts(
            lp.reference.text, lp.generated.text, ref_name=_rel(ws, ref), gen_name=_rel(ws, gen)
        )
    return out


def _ir_audits(ws: Workspace, missing: list[str]) -> dict[str | None, IRAudit]:
    audits: dict[str | None, IRAudit] = {}
    inv = discover_ir(ws.paths)
    for pair in inv.pairs:
        lp = load_pair(pair)  # InputError (file, line) for unreadable or truncated IR
        audits[pair.variant] = audit_texts(
            lp.reference.text,
            lp.generated.text,
            ref_name=_rel(ws, pair.reference),
            gen_name=_rel(ws, pair.generated),
        )
    for p in inv.unpaired_reference:
        missing.append(f"{_rel(ws, p)}: no generated IR for this variant")
    for p in inv.unpaired_generated:
        missing.append(f"{_rel(ws, p)}: no reference IR for this variant")
    if not inv.pairs and not inv.unpaired_reference and not inv.unpaired_generated:
        missing.append("reference/reference*.mlir and generated/generated*_canon.mlir: absent (no IR audit)")
    return audits


def _wrapper_evidence(
    ws: Workspace, analysis: Any, gpu: Any, evidence: dict[str, str], missing: list[str]
) -> tuple[list[Finding], Any, bool]:
    """(static wrapper findings, search-space audit, wrapper read?) — both need the TileGym checkout."""
    from cutile_workbench.checks.wrapper_audit import audit_wrapper
    from cutile_workbench.evidence.search_space import audit_search_space

    wrapper = ws.wrapper_source() if hasattr(ws, "wrapper_source") else None
    reference = reference_wrapper_source(ws)
    if reference is not None:
        evidence["reference_wrapper"] = str(reference)
    findings: list[Finding] = []
    if wrapper is not None:
        evidence["wrapper"] = str(wrapper)
        findings = list(audit_wrapper(wrapper, analysis, reference=reference))
    else:
        missing.append(
            f"src/tilegym/ops/cutile_rs/{ws.kernel}.py: wrapper source not available (pass --tilegym): "
            "no static wrapper audit, no search-space comparison"
        )
    search = audit_search_space(
        candidate_wrapper=wrapper,
        reference_wrapper=reference,
        analysis=analysis,
        capability=gpu.capability,
        capability_source=gpu.capability_source,
        kernel=ws.kernel,
    )
    if wrapper is not None:
        missing.extend(search.notes)
    return findings, search, wrapper is not None
