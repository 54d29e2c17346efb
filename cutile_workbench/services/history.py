"""Run history and measurement comparability as a service: what ``history``, ``table`` and the TUI read.

Contract (the faces call only these; none imports :mod:`cutile_workbench.history` itself):

- :func:`kernel_history` opens the workspace's history (``open_history``: the kernel dir's
  ``workbench/history.sqlite`` for an out root, created and migrated on first use; an in-memory
  store for the recorded session shipped in the package, which is never written), imports the
  artifact tree idempotently, loads every run and per config the series of medians with the
  change between consecutive runs (``load_history``), closes the store and returns a
  :class:`KernelHistory` of display-ready, immutable values (safe to build in a worker thread).
  ``config`` (params or node id) and ``backends`` narrow it; an unknown one is an ``InputError``
  (key ``--config`` / ``--backend``) naming close matches or the backends present.
- :func:`history_json` / :func:`history_csv` are the ``--json`` / ``--csv`` documents (the core's,
  plus where the history came from).
- :func:`ratio_comparability` states, for E's ratio table, whether candidate and each used
  baseline were measured under the same conditions (``ratio_conditions``: GPU model, driver, CUDA,
  MIG mode, throttling, clocks, harness) plus the scale-out rows whose two sides ran on different
  GPU models: ``state`` ``comparable`` (every fact the issue names is known on both sides and
  none differs), ``not_comparable`` (a flag; ``short`` names the first difference with both
  values), ``unknown`` (GPU model, driver, MIG mode or throttling is not recorded for a side;
  ``short`` names what is missing) or ``no_baseline``. ``short`` is "" when comparable; ``lines``
  is the full text, one line per baseline. Rows whose two sides the records show at different
  clocks or throttle exposure (``clock_exposure``: NVML readings around each measured call) make
  the state ``not_comparable`` too, each named in ``clock_rows`` with by how much; when every row
  of a baseline has measured clocks within the bound, the run-level end-snapshot clock difference
  is a note, not a flag (the snapshots were taken outside the measured calls).
  It never raises on file content.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from cutile_workbench.artifacts.testids import id_token, natural_key
from cutile_workbench.artifacts.workspace import Workspace
from cutile_workbench.errors import InputError, WorkbenchError
from cutile_workbench.history.compat import Comparability, Difference, condition_rows
from cutile_workbench.history.conditions import ratio_conditions
from cutile_workbench.history.provenance import Provenance
from cutile_workbench.history.query import KernelHistory as CoreHistory
from cutile_workbench.history.query import history_csv as core_history_csv
from cutile_workbench.history.query import history_to_dict, load_history, open_history, sparkline
from cutile_workbench.history.regress import ChangeFlag
from cutile_workbench.history.store import HistoryStore, StoredRun
from cutile_workbench.model import PerfLog, RatioRow, RatioTable

ChangeKind = Literal["regression", "improvement", "same", "inconclusive"]
NOT_RECORDED = "not recorded"
#: a trend's eight levels span at least this fraction of the series' median (2 % moves one level or two)
TREND_MIN_SPAN = 0.10


def when_text(ts: float | None) -> str:
    """``2026-12-01 09:20 UTC``, or "time not recorded"."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts)) if ts is not None else "time not recorded"


def p_text(p: float) -> str:
    """A p-value as tables show it (the normal approximation underflows to 0 for huge shifts)."""
    return "p<1e-300" if p < 1e-300 else f"p={p:.2g}"


# --------------------------------------------------------------------------- history values


@dataclass(frozen=True)
class RunFacts:
    """One run's conditions, display-ready (``facts``: every provenance fact, label → value)."""

    run_key: str
    when: float | None
    when_text: str
    when_origin: str
    roles: tuple[str, ...]
    source: str  # "live" (appended by the runner) | "import" (read from an artifact tree)
    gpu: str
    driver: str
    harness: str
    clocks: str
    throttling: str
    facts: tuple[tuple[str, str], ...]
    not_recorded: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def short_key(self) -> str:
        return self.run_key[:8]


@dataclass(frozen=True)
class Change:
    """The verdict from the previous run of a series to this one, decided on the raw samples."""

    kind: ChangeKind
    previous: str  # the run key of the previous point
    symbol: str  # + regression, - improvement, = same, ~ inconclusive (asv's letters)
    ratio: float  # median of this run / median of the previous one
    reason: str
    ci: tuple[float, float] | None
    ci_level: float
    p_value: float | None
    test: str | None
    notes: tuple[str, ...]  # launches/call or top kernel changed, capture source changed
    comparable: bool  # the two runs' conditions (newer vs older run)
    condition_flags: tuple[str, ...]
    conditions_unknown: tuple[str, ...]
    #: a regression or improvement between runs whose toolchain differs: the toolchain is the likely cause
    likely_cause: str | None = None

    def brief(self) -> str:
        """``+ regression ×1.105 CI [1.090, 1.121] p=3.2e-40``; untested changes say why instead."""
        head = f"{self.symbol} {self.kind} ×{self.ratio:.3f}"
        cause = f" (likely cause: {self.likely_cause})" if self.likely_cause else ""
        if self.test is None or self.p_value is None:
            return f"{head} ({self.reason.split(': ')[0]}){cause}"
        ci = f" {self.ci_level:.0%} CI [{self.ci[0]:.3f}, {self.ci[1]:.3f}]" if self.ci else ""
        return f"{head}{ci} {p_text(self.p_value)}{cause}"


@dataclass(frozen=True)
class HistoryPoint:
    run: RunFacts
    median_ms: float
    n_samples: int  # raw samples kept (0: median only, TileGym's harness)
    launches_per_call: int | None
    kernel_name: str | None
    capture_source: str | None
    change: Change | None  # vs the previous point (None for the first run)


@dataclass(frozen=True)
class HistorySeries:
    """One config of one backend (and phase) across runs, oldest first."""

    func_key: str
    params: str
    backend: str
    phase: str
    points: tuple[HistoryPoint, ...]

    @property
    def label(self) -> str:
        return self.backend if self.phase == "forward" else f"{self.backend} {self.phase}"

    @property
    def trend(self) -> str:
        """Sparkline of the medians; changes under ``TREND_MIN_SPAN`` of the median stay within a few levels."""
        medians = sorted(p.median_ms for p in self.points)
        span = TREND_MIN_SPAN * medians[len(medians) // 2] if medians else 0.0
        return sparkline([p.median_ms for p in self.points], min_span=span)

    @property
    def last_change(self) -> Change | None:
        return self.points[-1].change if self.points else None

    @property
    def is_candidate(self) -> bool:
        """Measured in a candidate run (E's candidate log) at least once."""
        return any("candidate" in p.run.roles for p in self.points)

    def tail(self, n: int) -> HistorySeries:
        """The last ``n`` runs (the first kept point keeps its change from the run before it)."""
        return HistorySeries(self.func_key, self.params, self.backend, self.phase, self.points[-n:])


@dataclass(frozen=True)
class KernelHistory:
    """The kernel's history as the faces show it (see module contract)."""

    kernel: str
    source: Literal["recorded", "out_root"]
    kernel_dir: Path
    store: str  # the store file, or ":memory:" for the recorded session
    persisted: bool
    runs: tuple[RunFacts, ...]
    series: tuple[HistorySeries, ...]
    policy: str  # the decision rule, stated
    added: int  # runs this open imported
    skipped: tuple[tuple[str, str], ...]  # (log, why) not imported
    notes: tuple[str, ...]
    core: CoreHistory = field(repr=False, compare=False)
    #: inputs of the kernel dir read on without (``services.session.ignored_inputs``: file and line)
    ignored: tuple[str, ...] = ()

    def configs(self) -> list[str]:
        """Params of every config in the Ratios table's order (shape fields as numbers: 4096 before 16384)."""
        return list(dict.fromkeys(s.params for s in self.ordered_series()))

    def ordered_series(self) -> list[HistorySeries]:
        """Per config (natural order of its params, as on Ratios), the candidate's series first, then the
        baselines'."""
        return sorted(
            self.series,
            key=lambda s: (
                natural_key(s.params),
                s.func_key,
                not s.is_candidate,
                s.backend,
                s.phase != "forward",
                s.phase,
            ),
        )

    def series_for(self, params: str, func_key: str | None = None) -> tuple[HistorySeries, ...]:
        """The series of one config (candidate first)."""
        return tuple(
            s
            for s in self.ordered_series()
            if s.params == params and (func_key is None or s.func_key == func_key)
        )


def _snapshot_facts(prov: Provenance) -> list[tuple[str, str]]:
    out = []
    for label, snap in (("GPU at start", prov.before), ("GPU at end", prov.after)):
        if snap is None:
            continue
        bits = []
        if snap.temperature_c is not None:
            bits.append(f"{snap.temperature_c} °C")
        if snap.power_w is not None:
            bits.append(
                f"{snap.power_w:.0f} W" + (f" of {snap.power_limit_w:.0f} W" if snap.power_limit_w else "")
            )
        if snap.pstate is not None:
            bits.append(f"P{snap.pstate}")
        if snap.clock_event_reasons is not None:
            bits.append("clock events: " + (", ".join(snap.clock_event_reasons) or "none"))
        if bits:
            out.append((label, "; ".join(bits)))
    return out


#: condition_rows' labels → the shorter ones of the faces (a narrow panel has ~40 columns for values)
_LABELS = {"CUDA (driver)": "CUDA", "SM/memory clock (start → end)": "clocks SM/mem"}


#: the toolchain row's parts, in the order a kernel engineer reads them (``toolchain.TOOLCHAIN_KEYS``)
_TOOLCHAIN_PARTS: tuple[tuple[str, str], ...] = (
    ("tileiras", "tileiras"),
    ("ptxas", "ptxas"),
    ("cutile_rs", "cutile-rs"),
    ("cuda_tile", "cuda-tile"),
    ("cupti", "cupti"),
)


def toolchain_text(toolchain: Mapping[str, str]) -> str:
    """One line of a run's toolchain (``tileiras 13.4.0 · ptxas 13.0.88 · cutile-rs 0.2.0 @ 0123456789ab
    · …``), the tools recorded only; "not recorded" when none is (runs before issue 36)."""
    parts = []
    for key, label in _TOOLCHAIN_PARTS:
        value = toolchain.get(key)
        if not value:
            continue
        commit = toolchain.get("cutile_rs_commit") if key == "cutile_rs" else None
        parts.append(f"{label} {value}" + (f" @ {commit[:12]}" if commit else ""))
    return " · ".join(parts) if parts else NOT_RECORDED


def run_facts(run: StoredRun) -> RunFacts:
    """The display form of one stored run."""
    prov = run.provenance
    base = dict(condition_rows(prov))
    gpu = prov.gpu
    workbench = " ".join(x for x in (prov.workbench_version, (prov.workbench_commit or "")[:12]) if x)
    facts: list[tuple[str, str]] = [
        ("recorded", when_text(run.recorded_at)),
        ("time from", run.recorded_at_origin),
        *((_LABELS.get(k, k), v) for k, v in base.items() if k not in ("recorded", "host")),
        ("GPU UUID", (gpu.uuid or NOT_RECORDED) if gpu else NOT_RECORDED),
        *_snapshot_facts(prov),
        ("TileGym commit", prov.tilegym_commit[:12] if prov.tilegym_commit else NOT_RECORDED),  # --json: full
        (
            "cutile-rs lib",
            f"sha256 {prov.cutile_rs_lib_sha256[:16]}…" if prov.cutile_rs_lib_sha256 else NOT_RECORDED,
        ),
        ("toolchain", toolchain_text(prov.toolchain)),  # --json: the provenance's toolchain, key by key
        ("workbench", workbench or NOT_RECORDED),
        (
            "python / torch",
            f"{prov.python or '?'} / {prov.torch or '?'}"
            + (f" (CUDA {prov.torch_cuda})" if prov.torch_cuda else ""),
        ),
        ("host", base.get("host", NOT_RECORDED)),
    ]
    not_recorded = tuple(f"{k}: {v}" for k, v in sorted(prov.unknown.items()))
    harness = prov.harness.name if prov.harness else "unknown"
    return RunFacts(
        run.run_key,
        run.recorded_at,
        when_text(run.recorded_at),
        run.recorded_at_origin,
        run.roles,
        run.source,
        base.get("GPU", NOT_RECORDED),
        base.get("driver", NOT_RECORDED),
        harness,
        base.get("SM/memory clock (start → end)", NOT_RECORDED),
        base.get("throttling", NOT_RECORDED),
        tuple(facts),
        not_recorded,
        run.notes,
    )


def _change(flag: ChangeFlag, cond: Comparability, previous: str, ci_level: float) -> Change:
    return Change(
        flag.change,
        previous,
        flag.symbol,
        flag.ratio,
        flag.reason,
        flag.ci,
        ci_level,
        flag.test.p_value if flag.test else None,
        flag.test.method_text if flag.test else None,
        flag.notes,
        cond.comparable,
        tuple(d.text for d in cond.flags),
        cond.unknown,
        _likely_cause(flag, cond),
    )


def _likely_cause(flag: ChangeFlag, cond: Comparability) -> str | None:
    """A toolchain change between the two runs, named as the likely cause of a decided change (issue 36)."""
    tools = [d.text.split(":")[0] for d in cond.flags if d.kind == "toolchain"]
    if not tools or flag.change not in ("regression", "improvement"):
        return None
    return f"the toolchain changed ({', '.join(tools)}), not necessarily the kernel"


def _view(
    core: CoreHistory,
    ws: Workspace,
    store: str,
    persisted: bool,
    added: int,
    skipped: tuple[tuple[str, str], ...],
    notes: tuple[str, ...],
) -> KernelHistory:
    facts = {r.run_id: run_facts(r) for r in core.runs}
    series = []
    for s in core.series:
        points = []
        for i, p in enumerate(s.points):
            change = (
                _change(s.changes[i - 1], s.conditions[i - 1], s.points[i - 1].run_key, core.policy.ci_level)
                if i
                else None
            )
            r = p.result
            points.append(
                HistoryPoint(
                    facts[p.run_id],
                    r.median_ms,
                    len(r.samples_ms or ()),
                    r.launches_per_call,
                    r.kernel_name,
                    r.capture_source,
                    change,
                )
            )
        series.append(HistorySeries(s.func_key, s.params, s.backend, s.phase, tuple(points)))
    return KernelHistory(
        ws.kernel,
        ws.source,
        ws.kernel_dir,
        store,
        persisted,
        tuple(facts.values()),
        tuple(series),
        core.policy.describe(),
        added,
        skipped,
        notes,
        core,
    )


def _check_backends(backends: Sequence[str], present: Iterable[str], label: str) -> list[str]:
    """The record backends ``backends`` name (``triton_tileir`` ≙ ``triton`` records, ids compared
    by token); InputError naming those present when one names none."""
    have = sorted(set(present))
    chosen: list[str] = []
    for want in backends:
        tokens = {id_token(want), id_token(want.removesuffix("_tileir"))}
        hits = [b for b in have if id_token(b) in tokens]
        if not hits:
            raise InputError(
                f"no runs of backend {want!r} in the history (backends: {', '.join(have) or 'none'})",
                path=label,
                key="--backend",
            )
        chosen += [h for h in hits if h not in chosen]
    return chosen


def kernel_history(
    ws: Workspace, *, config: str | None = None, backends: Sequence[str] = (), phase: str | None = None
) -> KernelHistory:
    """Open, import, load and close the workspace's history (see module contract); the logs the
    command's session parsed already are imported as parsed (not parsed again)."""
    from cutile_workbench.stages.session.kernel import KernelSession

    session = KernelSession.of(ws)
    # the one config naming (full params, the TUI's label); a node id stays one (it names one test: its backend)
    if config is not None and "[" not in config:
        named = session.configs().lookup(config)
        if len(named) > 1:
            session.resolve_config(config)  # ambiguous: InputError listing every config it names
        config = named[0] if named else config  # a config of older runs only: the history names it
    parsed = session.parsed_logs()
    store, report = open_history(ws.paths, source=ws.source, variants=ws.variant_names(), parsed=parsed)
    try:
        core = _load(ws.kernel, store, config, backends, phase)
    except InputError as exc:
        if exc.path == store.label and store.path is None:  # ":memory:" says nothing: name the kernel dir
            exc.path = str(ws.kernel_dir)
        raise
    finally:
        store.close()
    from cutile_workbench.services.session import ignored_inputs

    view = _view(
        core, ws, store.label, store.path is not None, len(report.added), report.skipped, report.notes
    )
    return replace(view, ignored=ignored_inputs(ws))


def _load(
    kernel: str, store: HistoryStore, config: str | None, backends: Sequence[str], phase: str | None
) -> CoreHistory:
    if not backends:
        return load_history(store, kernel, config=config, phase=phase)
    rows = [c for _run, c in store.configs(phase=phase)]
    chosen = _check_backends(backends, (c.backend for c in rows), store.label)
    if config is not None:
        with_config = {c.backend for c in rows if config in (c.params, c.nodeid)}
        if with_config and not with_config & set(chosen):
            raise InputError(
                f"config {config!r} has no runs of backend(s) {', '.join(backends)} "
                f"(it has: {', '.join(sorted(with_config))})",
                path=store.label,
                key="--backend",
            )
        chosen = [
            b for b in chosen if b in with_config
        ] or chosen  # an unknown config: load names close matches
    parts = [load_history(store, kernel, config=config, backend=b, phase=phase) for b in chosen]
    return CoreHistory(
        kernel, store.label, parts[0].runs, tuple(s for c in parts for s in c.series), parts[0].policy
    )


def history_json(history: KernelHistory) -> dict[str, Any]:
    """The ``--json`` document: the core's (runs with provenance, series, flags) plus where it came from."""
    doc = history_to_dict(history.core)
    return {
        "kernel": history.kernel,
        "source": history.source,
        "kernel_dir": str(history.kernel_dir),
        "persisted": history.persisted,
        "imported_now": history.added,
        "skipped": [{"path": p, "why": w} for p, w in history.skipped],
        "notes": list(history.notes),
        "ignored": list(history.ignored),
        **{k: v for k, v in doc.items() if k != "kernel"},
    }


def history_csv(history: KernelHistory) -> str:
    """The ``--csv`` table: one row per (config, run) with the change from the previous run."""
    return core_history_csv(history.core)


# --------------------------------------------------------------------------- ratio comparability


ComparabilityState = Literal["comparable", "not_comparable", "unknown", "no_baseline"]
#: the facts the comparability verdict needs on both sides (issue #15: GPU model, driver, MIG, throttling)
REQUIRED_FACTS = ("GPU", "driver", "MIG mode", "throttling")


@dataclass(frozen=True)
class BaselineComparability:
    baseline: str  # the ratio table's baseline key (cutile, triton_tileir)
    state: ComparabilityState
    short: str  # "" when comparable
    flags: tuple[str, ...]
    same: tuple[str, ...]  # "GPU model NVIDIA H200", ... : the required facts known and equal on both sides
    notes: tuple[str, ...]
    unknown: tuple[str, ...]

    def line(self) -> str:
        """The full text for this baseline (what the details line and the CLI print)."""
        if self.state == "not_comparable":
            parts = ["NOT COMPARABLE: " + "; ".join(self.flags)]
        elif self.state == "unknown":
            parts = [self.short.removeprefix("? ")]
        else:
            parts = ["comparable"]
        if self.same:
            parts.append("same " + ", ".join(self.same))
        said = REQUIRED_FACTS if self.state == "unknown" else ()
        missing = [f for f in dict.fromkeys(u.split(":", 1)[0] for u in self.unknown) if f not in said]
        if missing:
            parts.append(("also " if said else "") + "not recorded: " + ", ".join(missing))
        if self.notes:
            parts.append("notes: " + "; ".join(self.notes))
        return f"baseline {self.baseline}: " + " · ".join(parts)


@dataclass(frozen=True)
class RatioComparability:
    """Comparability of E's ratios (see module contract)."""

    state: ComparabilityState
    short: str
    baselines: tuple[BaselineComparability, ...]
    mixed_gpu_rows: tuple[str, ...] = ()
    #: "<config>: <by how much>" for each row whose two sides ran at different clocks or throttle exposure
    clock_rows: tuple[str, ...] = ()

    @property
    def lines(self) -> tuple[str, ...]:
        out = tuple(b.line() for b in self.baselines)
        if self.mixed_gpu_rows:
            out += (
                f"{len(self.mixed_gpu_rows)} row(s) measured on different GPU models: "
                + "; ".join(self.mixed_gpu_rows),
            )
        if self.clock_rows:
            out += (
                f"{len(self.clock_rows)} row(s) measured at different clocks or throttle exposure: "
                + "; ".join(self.clock_rows),
            )
        return out

    def for_baseline(self, key: str | None) -> BaselineComparability | None:
        return next((b for b in self.baselines if b.baseline == key), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "short": self.short,
            "lines": list(self.lines),
            "baselines": [
                {
                    "baseline": b.baseline,
                    "state": b.state,
                    "short": b.short,
                    "flags": list(b.flags),
                    "notes": list(b.notes),
                    "unknown": list(b.unknown),
                }
                for b in self.baselines
            ],
            "mixed_gpu_rows": list(self.mixed_gpu_rows),
            "clock_rows": list(self.clock_rows),
        }


def _short_flag(d: Difference, who: str) -> str:
    """One difference in a few words, both values named (the header's flag)."""
    a, b = d.a_value, d.b_value
    if d.kind == "throttling":
        return f"⚠ throttling during the {'candidate' if a is not None else who} run ({a or b})"
    if a is None or b is None:
        return f"⚠ {d.text}"
    if d.kind == "mig":
        return f"⚠ {who} measured with MIG {b} (candidate: {a})"
    if d.kind == "harness":
        if "=" in a:  # a knob that changes what a sample measures
            return f"⚠ {who} measured with {b} (candidate {a})"
        return f"⚠ {who} measured by another harness ({b} vs candidate {a})"
    if d.kind == "clocks":
        return f"⚠ {who} measured at another {d.text.split(':')[0]} ({b} vs candidate {a})"
    what = {"gpu_model": "GPU model", "driver": "driver", "cuda": "CUDA driver version"}.get(d.kind, d.kind)
    return f"⚠ {who} measured on another {what} ({b} vs candidate {a})"


def _same_facts(cand: Provenance | None, base: Provenance | None) -> tuple[str, ...]:
    if cand is None or base is None or cand.gpu is None or base.gpu is None:
        return ()
    out = []
    for label, va, vb in (
        ("GPU model", cand.gpu.name, base.gpu.name),
        ("driver", cand.gpu.driver_version, base.gpu.driver_version),
        ("MIG mode", cand.gpu.mig_mode, base.gpu.mig_mode),
    ):
        if va is not None and va == vb:
            out.append(f"{label} ({va})")
    if cand.throttling() == () and base.throttling() == ():
        out.append("no throttling")
    return tuple(out)


def _per_row_clocks_decide(comp: Comparability, rows_measured: bool) -> Comparability:
    """With NVML clocks measured around every call of every row of this baseline (all within the
    bound), the run's start/end snapshots no longer decide: their clock difference becomes a note."""
    if not rows_measured or not any(d.kind == "clocks" and d.severity == "flag" for d in comp.differences):
        return comp
    why = " (a snapshot outside the measured calls; every row's measured clocks are within the bound)"
    return replace(
        comp,
        differences=tuple(
            replace(d, severity="note", text=d.text + why)
            if d.kind == "clocks" and d.severity == "flag"
            else d
            for d in comp.differences
        ),
    )


def _baseline_state(
    key: str, comp: Comparability, cand: Provenance | None, base: Provenance | None
) -> BaselineComparability:
    who = f"baseline {key}"
    notes = tuple(d.text for d in comp.differences if d.severity == "note")
    same = _same_facts(cand, base)
    missing = [
        f for f in REQUIRED_FACTS if any(u.split(":", 1)[0] in (f, "all conditions") for u in comp.unknown)
    ]
    if comp.flags:
        more = f" (+{len(comp.flags) - 1} more)" if len(comp.flags) > 1 else ""
        return BaselineComparability(
            key,
            "not_comparable",
            _short_flag(comp.flags[0], who) + more,
            tuple(d.text for d in comp.flags),
            same,
            notes,
            comp.unknown,
        )
    if missing:
        short = f"? comparability unknown: {', '.join(missing)} not recorded"
        return BaselineComparability(key, "unknown", short, (), same, notes, comp.unknown)
    return BaselineComparability(key, "comparable", "", (), same, notes, comp.unknown)


def _mixed_rows(ws: Workspace) -> tuple[str, ...]:
    from cutile_workbench.run.scaleout.provenance import mixed_gpu_rows

    try:
        session = ws.session_meta()
    except WorkbenchError:
        return ()  # the loaders report a malformed session.json already
    return tuple(r.describe() for r in mixed_gpu_rows(session).rows) if session else ()


def _all_rows_same_clocks(rows: Sequence[RatioRow]) -> bool:
    return bool(rows) and all(r.clocks.state == "comparable" for r in rows)


def ratio_comparability(
    ws: Workspace,
    table: RatioTable | None,
    *,
    used: set[str] | None = None,
    logs: tuple[PerfLog, Mapping[str, PerfLog]] | None = None,
) -> RatioComparability:
    """Were the candidate and each used baseline measured under the same conditions? (module contract)

    ``used`` names the baselines directly when no table was built (the overview reads E's report).
    Computed once per content of the logs, session.json and events.jsonl (``e_table.cached_derivation``):
    reading the conditions parses both logs, which a 1,000-config session makes cost seconds. The
    table's per-row clock states come from the same logs, so they need no key of their own."""
    from cutile_workbench.artifacts.derive_cache import cached_derivation

    if used is None:
        used = {r.baseline_backend for r in (table.matched if table else []) if r.baseline_backend}
    paths = ws.paths
    raw = ws.raw_log_path()
    inputs = [
        p
        for p in (
            raw,
            paths.baseline_cutile,
            paths.baseline_triton_tileir,
            paths.session_json,
            paths.events_jsonl,
        )
        if p is not None
    ]
    code = [
        "cutile_workbench.services.history",
        "cutile_workbench.history.conditions",
        "cutile_workbench.history.importer",
        "cutile_workbench.history.provenance",
        "cutile_workbench.run.scaleout.provenance",
        "cutile_workbench.clock_exposure",
        "cutile_workbench.stages.e.stats",
        "cutile_workbench.model",
    ]
    rows = len(table.matched) if table is not None else -1
    return cached_derivation(
        "comparability",
        inputs,
        f"{raw}\0{sorted(used)}\0{rows}",
        code,
        lambda: _ratio_comparability(ws, used, table, logs),
        digest=ws.digest,  # the workspace's digests: each log read once for every key
    )


def _ratio_comparability(
    ws: Workspace,
    used: set[str],
    table: RatioTable | None,
    logs: tuple[PerfLog, Mapping[str, PerfLog]] | None = None,
) -> RatioComparability:
    # ``logs``: the candidate and baseline logs the caller parsed already (the overview), not again;
    # without them the command's session gives its own (parsed once for every fact of the command)
    if logs is None:
        from cutile_workbench.errors import WorkbenchError
        from cutile_workbench.stages.session.kernel import KernelSession

        session = KernelSession.of(ws)
        try:
            logs = (session.candidate(), session.baseline_logs())
        except WorkbenchError:
            logs = None  # the conditions read what they can (a missing or bad log is said there)
    conds = ratio_conditions(
        ws.paths,
        used,
        candidate_log=ws.raw_log_path(),
        candidate=logs[0] if logs else None,
        baselines=logs[1] if logs else None,
    )
    matched = table.matched if table else []
    baselines = tuple(
        _baseline_state(
            b.baseline,
            _per_row_clocks_decide(
                b.comparability,
                _all_rows_same_clocks([r for r in matched if r.baseline_backend == b.baseline]),
            ),
            conds.candidate,
            b.provenance,
        )
        for b in conds.baselines
    )
    mixed = _mixed_rows(ws)
    # issue 18: the per-row clock exposure (NVML readings around each call) decides, when the records carry it
    clocks = tuple(
        f"{r.params}: {r.clocks.text}"
        for r in (table.matched if table else [])
        if r.clocks.state == "not_comparable"
    )
    if mixed:  # a scale-out run: rows whose two sides ran on different GPU models
        short = f"⚠ {len(mixed)} row(s): candidate and baseline measured on different GPU models"
        return RatioComparability("not_comparable", short, baselines, mixed, clocks)
    if clocks:
        short = (
            f"⚠ {len(clocks)} row(s) measured at different clocks or throttle exposure (first {clocks[0]})"
        )
        return RatioComparability("not_comparable", short, baselines, (), clocks)
    if not baselines:
        return RatioComparability("no_baseline", "", ())
    states: tuple[ComparabilityState, ...] = ("not_comparable", "unknown")
    for state in states:
        hit = [b for b in baselines if b.state == state]
        if hit:
            who = f" (baseline {hit[0].baseline}" + (f", +{len(hit) - 1} more)" if len(hit) > 1 else ")")
            short = hit[0].short + (who if state == "unknown" and len(baselines) > 1 else "")
            return RatioComparability(state, short, baselines)
    return RatioComparability("comparable", "", baselines)
