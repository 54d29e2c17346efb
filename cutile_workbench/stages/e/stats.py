"""E's ratio table: config matching, geomean, severity bands and bootstrap CIs (contract §3.5, §5.1).

Contract of :func:`build_ratio_table`:
- Rows are matched by ``(func_key, params)`` on **forward medians**; ratio = candidate / baseline.
- Baseline per row: the winner named by analysis.json (``per_variant[config_to_variant[params]]
  .winner``, the variant's ``reference_backend``, then ``reference_backend``; ``cutile`` reads
  ``baseline_perf_cutile.txt``, ``triton`` reads ``baseline_perf_triton_tileir.txt``); without a
  winner, the faster available baseline for that row. A row the chosen baseline lacks is
  ``NO_BASELINE``: listed, excluded from the geomean.
- ``NA`` rows: failed/errored/skipped/record-less candidate tests, candidate records without a
  finite positive median, rows whose candidate or chosen baseline capture a self-check doubted
  (``capture_check.verdict == "suspect"``: "capture suspect", never a valid median), and configs
  selected by analysis.json with no valid candidate median, and rows whose ratio is not an
  ordinary number both ways (inf, 0, or a subnormal 1e-315 whose inverse is inf: "ratio not finite",
  both medians named). No inf or nan leaves this module: a CI whose bootstrap replicates over- or
  underflow is absent (None), and then so is the joint geomean CI.
- ``geomean = exp(mean(ln ratio))`` over ``OK`` rows.
- **Rounding rule** (so the written line and the verdict can never disagree): the verdict is
  decided on ``round4(g) = float(f"{g:.4f}")`` — exactly the number written as
  ``geomean_ratio=X.XXXX``. Bands: ≤1.05 DONE, ≤1.10 MILD_GAP, ≤1.50 MODERATE_GAP, else
  LARGE_GAP; any NA with some valid rows → INVESTIGATE/MISSING_DATA; no OK row → BLOCKED.
- CIs (when both sides carry raw ``samples_ms``): percentile bootstrap, 95%, of each ratio of
  medians (candidate and baseline resampled independently) and of the geomean (every row
  resampled in each replicate), deterministic. **Each row draws from its own stream**,
  ``numpy.random.default_rng(row_seed(seed, func_key, params))`` (issue 31): a row's CI and its
  replicates depend on that row's samples alone, so a re-run of one config redraws one row and the
  others' results can be reused (:class:`RowBoots`, keyed by :func:`row_boot_key` on the row's key,
  its two sorted samples, ``seed`` and ``n_boot``). The geomean's replicate ``b`` is
  ``exp(mean_i ln ratio_i[b])`` — replicate ``b`` of every row, the rows' streams independent, so
  still a joint resample of every row — combined from the rows' stored ``ln ratio`` replicates
  (float32: the combination's error is below 1e-7 relative, far under the 4 digits shown; fresh and
  cached rows go through the same float32 values, so a cached table equals a fresh one exactly) in
  O(N) numpy adds. The median of a resample is drawn exactly via the order-statistic identity (the
  k-th smallest of n uniform draws is Beta(k, n+1-k)), O(1) per replicate instead of O(n log n),
  vectorised over the replicates (:func:`bootstrap_medians`); percentiles interpolate linearly.
  ``inconclusive`` = the geomean CI straddles 1.05 (``lo ≤ 1.05 < hi``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from cutile_workbench.artifacts.analysis import Analysis
from cutile_workbench.artifacts.testids import id_token, split_nodeid
from cutile_workbench.infra.bootstrap import bootstrap_medians, median_ratio_ci, ratio_ci, row_seed  # noqa: F401 (re-exported)
from cutile_workbench.infra.bootstrap import interval as _interval
from cutile_workbench.infra.bootstrap import sorted_valid as _sorted_valid
from cutile_workbench.infra.bootstrap import valid_sample as _valid
from cutile_workbench.model import DONE_MAX as DONE_MAX  # E's DONE band and the 4-decimal rule: the model's
from cutile_workbench.model import PerfLog, PerfRecord, PhaseStats, RatioRow, RatioTable, Severity
from cutile_workbench.model import RowSamples as RowSamples  # a value the faces show: in the model
from cutile_workbench.model import round4 as round4

MILD_MAX = 1.10
MODERATE_MAX = 1.50

#: analysis.json backend name → baseline log key (``Workspace.baseline_logs``) and record framework
BASELINE_LOG_FOR = {"cutile": "cutile", "triton": "triton_tileir", "triton_tileir": "triton_tileir"}
_LOG_FRAMEWORK = {"cutile": "cutile", "triton_tileir": "triton"}


def severity_for(g: float) -> Severity:
    """§5.1 band of a geomean, decided on its 4-decimal value."""
    r = round4(g)
    if r <= DONE_MAX:
        return "DONE"
    if r <= MILD_MAX:
        return "MILD_GAP"
    if r <= MODERATE_MAX:
        return "MODERATE_GAP"
    return "LARGE_GAP"


def _ordinary(r: float) -> bool:
    """A ratio that is a number both ways: finite, > 0 and with a finite inverse (1e-315 is not)."""
    return math.isfinite(r) and r > 0 and math.isfinite(1.0 / r)


def geomean(values: Sequence[float]) -> float:
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def _fwd(rec: PerfRecord) -> PhaseStats | None:
    return rec.forward


# --------------------------------------------------------------------------- bootstrap


@dataclass(frozen=True)
class _Pending:
    func_key: str
    params: str
    variant: str | None
    cand: PhaseStats
    base: PhaseStats
    base_backend: str


@dataclass(frozen=True)
class RowBoot:
    """One row's bootstrap, drawn from the row's own stream: its 95% CI and the ln of its ``n_boot``
    replicate ratios (float32, what the geomean's CI is combined from); both None when a replicate
    over- or underflowed (no CI rather than an inf/nan one, and then no geomean CI)."""

    ci: tuple[float, float] | None
    logs: np.ndarray | None


class RowBoots(Protocol):
    """Where a table build finds and keeps its rows' bootstraps (E's per-row cache)."""

    def get(self, key: str) -> RowBoot | None: ...

    def put(self, key: str, value: RowBoot) -> None: ...


def row_boot_key(
    func_key: str, params: str, cand: np.ndarray, base: np.ndarray, n_boot: int, seed: int
) -> str:
    """The key of one row's bootstrap: everything it reads (the row's key, its two sorted samples as
    float64 bytes, ``n_boot``, ``seed``) and nothing of any other row."""
    h = hashlib.sha256(
        f"{seed}\0{n_boot}\0{func_key}\0{params}\0{cand.size}\0".encode("utf-8", "surrogatepass")
    )
    h.update(np.ascontiguousarray(cand, dtype="<f8").tobytes())
    h.update(np.ascontiguousarray(base, dtype="<f8").tobytes())
    return h.hexdigest()


def row_bootstrap(
    func_key: str, params: str, cand: np.ndarray, base: np.ndarray, n_boot: int, seed: int
) -> RowBoot:
    """One row's bootstrap from its own stream (see the module contract): ``cand`` and ``base`` sorted."""
    rng = np.random.default_rng(row_seed(seed, func_key, params))
    with np.errstate(over="ignore", divide="ignore", under="ignore", invalid="ignore"):
        ratios = bootstrap_medians(rng, cand, n_boot) / bootstrap_medians(rng, base, n_boot)
        ordinary = bool(np.all(np.isfinite(ratios) & (ratios > 0) & np.isfinite(1.0 / ratios)))
    if not ordinary:
        return RowBoot(None, None)
    return RowBoot(_interval(ratios, 0.95), np.log(ratios).astype(np.float32))


def _bootstrap(
    rows: list[_Pending], n_boot: int, seed: int, boots: RowBoots | None = None
) -> tuple[list[tuple[float, float] | None], tuple[float, float] | None]:
    samples = [(_sorted_valid(r.cand.samples_ms or ()), _sorted_valid(r.base.samples_ms or ())) for r in rows]
    usable = [s if s[0] is not None and s[1] is not None else None for s in samples]
    if n_boot <= 0 or not any(usable):
        return [None] * len(rows), None
    joint_ok = all(s is not None for s in usable)
    log_sum = np.zeros(n_boot)  # replicate b of every row: the sum of their ln ratios
    cis: list[tuple[float, float] | None] = []
    for r, s in zip(rows, usable, strict=True):
        if s is None:
            cis.append(None)
            continue
        cand, base = s
        assert cand is not None and base is not None
        key = row_boot_key(r.func_key, r.params, cand, base, n_boot, seed) if boots is not None else ""
        got = boots.get(key) if boots is not None else None
        if got is None:
            got = row_bootstrap(r.func_key, r.params, cand, base, n_boot, seed)
            if boots is not None:
                boots.put(key, got)
        if got.logs is None:  # a replicate over- or underflowed: no CI, and no joint one
            joint_ok = False
            cis.append(None)
            continue
        log_sum += got.logs
        cis.append(got.ci)
    gci = _interval(np.exp(log_sum / len(rows)), 0.95) if joint_ok else None
    return cis, gci


def _baseline_index(
    name: str, log: PerfLog, candidate_frameworks: set[str]
) -> dict[tuple[str, str], PerfRecord]:
    want = _LOG_FRAMEWORK.get(name)
    recs = [r for r in log.records if r.framework == want] if want else []
    if not recs:  # a log holding another backend's records (e.g. a stand-in): take non-reference ones
        recs = [
            r for r in log.records if r.framework not in candidate_frameworks and r.framework != "pytorch"
        ]
    out: dict[tuple[str, str], PerfRecord] = {}
    for r in recs:
        fwd = _fwd(r)
        if fwd is not None and _valid(fwd.median_ms):
            out.setdefault(r.row_key, r)
    return out


def baseline_records(
    name: str, log: PerfLog, candidate_frameworks: set[str]
) -> dict[tuple[str, str], PerfRecord]:
    """The records E takes from baseline log ``name`` (``cutile``/``triton_tileir``), keyed by row."""
    return _baseline_index(name, log, candidate_frameworks)


def _params_of_selected(ident: str) -> str:
    _, token, params = split_nodeid(f"x[{ident}]")
    return params if token else ident


def build_ratio_table(
    kernel: str,
    candidate: PerfLog,
    baselines: Mapping[str, PerfLog],
    analysis: Analysis | None,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    row_boots: RowBoots | None = None,
) -> RatioTable:
    """The E table for one kernel (see module docstring for every rule); ``row_boots``: where rows'
    bootstraps drawn before are found and new ones kept (E's per-row cache), else every row is drawn."""
    notes: list[str] = list(candidate.notes)
    if candidate.truncated:
        notes.append(f"{candidate.path}: last record block was truncated and ignored")
    cand_frameworks = {r.framework for r in candidate.records}
    cand_tokens = {id_token(f) for f in cand_frameworks} | {"cutile_rs"}
    base_idx = {
        name: _baseline_index(name, log, cand_frameworks)
        for name, log in baselines.items()
        if not name.startswith("cutile_rs") and name in _LOG_FRAMEWORK
    }
    for log in baselines.values():
        if log.truncated:
            notes.append(f"{log.path}: last record block was truncated and ignored")

    def variant_of(params: str) -> str | None:
        return analysis.variant_of(params) if analysis is not None else None

    na_rows: list[RatioRow] = []
    pending: list[_Pending] = []
    no_base: list[RatioRow] = []
    seen: set[tuple[str, str]] = set()
    seen_params: set[str] = set()

    for rec in candidate.records:
        key = rec.row_key
        if key in seen:
            notes.append(f"duplicate candidate record for {rec.nodeid}: first one kept")
            continue
        seen.add(key)
        seen_params.add(rec.params)
        variant = variant_of(rec.params)
        fwd = _fwd(rec)
        if fwd is None or not _valid(fwd.median_ms):
            why = "no forward phase" if fwd is None else f"invalid forward median {fwd.median_ms!r}"
            na_rows.append(
                RatioRow(
                    rec.func_key,
                    rec.params,
                    variant,
                    None,
                    None,
                    None,
                    None,
                    "NA",
                    candidate_launches=fwd.launches_per_iter if fwd else None,
                    reason=why,
                )
            )
            continue
        if fwd.capture_suspect:
            na_rows.append(
                RatioRow(
                    rec.func_key,
                    rec.params,
                    variant,
                    None,
                    None,
                    None,
                    None,
                    "NA",
                    candidate_launches=fwd.launches_per_iter,
                    candidate_harness=fwd.harness,
                    candidate_measured_by=fwd.measured_by,
                    reason=f"capture suspect (median {fwd.median_ms:.6g} ms not valid): "
                    f"{fwd.capture_reason or 'the CUDA-event self-check disagreed'}",
                )
            )
            continue
        winner = analysis.winner_for(variant) if analysis is not None else None
        choice: tuple[str, PerfRecord] | None = None
        reason = ""
        if winner is not None:
            log_key = BASELINE_LOG_FOR.get(winner, winner)
            if log_key not in base_idx:
                reason = f"reference backend {winner!r} has no baseline log"
            elif key not in base_idx[log_key]:
                reason = f"reference backend {winner!r} has no median for this config"
            else:
                choice = (log_key, base_idx[log_key][key])
        else:
            options = [(name, idx[key]) for name, idx in base_idx.items() if key in idx]
            if options:
                choice = min(options, key=lambda o: o[1].phases["forward"].median_ms)
            else:
                reason = "no baseline log has this config"
        if choice is None:
            no_base.append(
                RatioRow(
                    rec.func_key,
                    rec.params,
                    variant,
                    None,
                    None,
                    fwd.median_ms,
                    None,
                    "NO_BASELINE",
                    candidate_launches=fwd.launches_per_iter,
                    reason=reason,
                )
            )
            continue
        bfwd = choice[1].phases["forward"]
        if bfwd.capture_suspect:
            na_rows.append(
                RatioRow(
                    rec.func_key,
                    rec.params,
                    variant,
                    choice[0],
                    None,
                    fwd.median_ms,
                    None,
                    "NA",
                    candidate_launches=fwd.launches_per_iter,
                    candidate_harness=fwd.harness,
                    baseline_harness=bfwd.harness,
                    candidate_measured_by=fwd.measured_by,
                    baseline_measured_by=bfwd.measured_by,
                    reason=f"baseline capture suspect ({choice[0]}): "
                    f"{bfwd.capture_reason or 'the CUDA-event self-check disagreed'}",
                )
            )
            continue
        pending.append(_Pending(rec.func_key, rec.params, variant, fwd, bfwd, choice[0]))

    for out in candidate.outcomes:
        key = (out.func_key, out.params)
        if key in seen:
            continue
        # the log may hold other backends' outcomes (a broad -k): keep only the candidate's
        if cand_frameworks and out.backend_token not in cand_tokens:
            continue
        if not cand_frameworks and out.backend_token == "pytorch":
            continue
        seen.add(key)
        seen_params.add(out.params)
        reason = f"{out.outcome}" + (f": {out.reason}" if out.reason else "")
        na_rows.append(
            RatioRow(
                out.func_key, out.params, variant_of(out.params), None, None, None, None, "NA", reason=reason
            )
        )

    if analysis is not None:
        for group in analysis.test_perf_configs:
            for shape in group.shapes:
                if not shape.id:
                    continue
                params = _params_of_selected(shape.id)
                if params in seen_params:
                    continue
                seen_params.add(params)
                func = group.test or ""
                na_rows.append(
                    RatioRow(
                        func,
                        params,
                        variant_of(params),
                        None,
                        None,
                        None,
                        None,
                        "NA",
                        reason="selected in analysis.json test_perf_configs; no candidate median",
                    )
                )

    # A finite but absurd median (e.g. 1e308 ms) can overflow the ratio; such a row is NA with the
    # numbers named, never an inf geomean that the report validators would then refuse.
    usable: list[_Pending] = []
    for p in pending:
        r = p.cand.median_ms / p.base.median_ms
        if _ordinary(r):
            usable.append(p)
        else:
            na_rows.append(
                RatioRow(
                    p.func_key,
                    p.params,
                    p.variant,
                    p.base_backend,
                    p.base.median_ms,
                    None,
                    None,
                    "NA",
                    candidate_launches=p.cand.launches_per_iter,
                    baseline_launches=p.base.launches_per_iter,
                    reason=f"ratio not finite: candidate {p.cand.median_ms!r} ms / baseline "
                    f"{p.base.median_ms!r} ms = {r!r} (it or its inverse is not an ordinary number)",
                )
            )
    pending = usable
    cis, gci = _bootstrap(pending, n_boot, seed, row_boots)
    ok_rows = [
        RatioRow(
            p.func_key,
            p.params,
            p.variant,
            p.base_backend,
            p.base.median_ms,
            p.cand.median_ms,
            p.cand.median_ms / p.base.median_ms,
            "OK",
            ci_low=ci[0] if ci else None,
            ci_high=ci[1] if ci else None,
            candidate_launches=p.cand.launches_per_iter,
            baseline_launches=p.base.launches_per_iter,
            candidate_harness=p.cand.harness,
            baseline_harness=p.base.harness,
            candidate_clocks=p.cand.clocks,
            baseline_clocks=p.base.clocks,
            candidate_measured_by=p.cand.measured_by,
            baseline_measured_by=p.base.measured_by,
        )
        for p, ci in zip(pending, cis, strict=True)
    ]
    rows = ok_rows + na_rows + no_base
    g = geomean([r.ratio for r in ok_rows if r.ratio is not None]) if ok_rows else None
    variant_geomeans: dict[str, float] = {}
    for v in sorted({r.variant for r in ok_rows if r.variant is not None}):
        variant_geomeans[v] = geomean([r.ratio for r in ok_rows if r.variant == v and r.ratio is not None])
    severity: Severity | None
    if g is None:
        verdict = "BLOCKED"
        severity = None
        if not candidate.records and not candidate.outcomes:
            notes.append("no candidate records at all")
        elif no_base and not na_rows:
            notes.append("candidate medians exist but no baseline matches any of them")
    elif na_rows:
        verdict, severity = "INVESTIGATE", "MISSING_DATA"
    else:
        severity = severity_for(g)
        verdict = "DONE" if severity == "DONE" else "INVESTIGATE"
    if no_base:
        notes.append(f"{len(no_base)} config(s) without a baseline match: excluded from the geomean")
    inconclusive = bool(gci and gci[0] <= DONE_MAX < gci[1])
    return RatioTable(
        kernel=kernel,
        rows=rows,
        geomean=g,
        severity=severity,
        verdict=verdict,  # type: ignore[arg-type]
        geomean_ci=gci,
        inconclusive=inconclusive,
        variant_geomeans=variant_geomeans,
        notes=notes,
    )


# --------------------------------------------------------------------------- a subset of the table


def subset_summary(
    kernel: str,
    rows: Sequence[RatioRow],
    samples: Mapping[tuple[str, str], RowSamples],
    *,
    n_boot: int = 2000,
    seed: int = 0,
) -> RatioTable:
    """E's summary of ``rows`` alone (a variant tab, a filter): geomean over their ``OK`` rows, the
    §5.1 severity and verdict by :func:`build_ratio_table`'s rules (an NA row → INVESTIGATE /
    MISSING_DATA, no OK row → BLOCKED) and the joint bootstrap CI of that geomean, resampled from
    ``samples`` exactly as E does; no CI unless every OK row has its samples. Not E's verdict:
    the faces label it as the summary of a subset."""
    ok = [r for r in rows if r.status == "OK" and r.ratio is not None]
    na = [r for r in rows if r.status == "NA"]
    g = geomean([r.ratio for r in ok if r.ratio is not None]) if ok else None
    pending: list[_Pending] = []
    for r in ok:
        s = samples.get((r.func_key, r.params))
        if s is None:
            pending = []
            break
        pending.append(
            _Pending(
                r.func_key,
                r.params,
                r.variant,
                PhaseStats(r.candidate_ms or 0.0, samples_ms=s.candidate),
                PhaseStats(r.baseline_ms or 0.0, samples_ms=s.baseline),
                r.baseline_backend or "",
            )
        )
    gci = _bootstrap(pending, n_boot, seed)[1] if pending and len(pending) == len(ok) else None
    severity: Severity | None
    if g is None:
        verdict, severity = "BLOCKED", None
    elif na:
        verdict, severity = "INVESTIGATE", "MISSING_DATA"
    else:
        severity = severity_for(g)
        verdict = "DONE" if severity == "DONE" else "INVESTIGATE"
    inconclusive = bool(gci and gci[0] <= DONE_MAX < gci[1])
    return RatioTable(
        kernel=kernel,
        rows=list(rows),
        geomean=g,
        severity=severity,
        verdict=verdict,  # type: ignore[arg-type]
        geomean_ci=gci,
        inconclusive=inconclusive,
    )
