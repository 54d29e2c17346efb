"""The shared data model: typed, immutable dataclasses for records, launches, ratios and findings.

Contract: every view (CLI table, TUI screens, reports) is rendered from these types, which are
built only from files in the TileGym artifact layout (see ``workspace``). Times are milliseconds
(``*_ms``), microseconds (``*_us``) or nanoseconds (``*_ns``) as the suffix says. No Textual here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from cutile_workbench.clock_exposure import ClockExposure, RowClocks, compare_exposures

# --------------------------------------------------------------------------- perf records


@dataclass(frozen=True)
class SourceRef:
    """Where a parsed item came from (for error messages and jump-to)."""

    path: str
    line: int


@dataclass(frozen=True)
class KernelTime:
    """One row of benchmark_fn_cupti's ``kernel_times`` (one profiled call)."""

    name: str
    self_time_us: float
    total_time_us: float
    count: int  # launches of this kernel in that one call


@dataclass(frozen=True)
class PhaseStats:
    """Stats of one phase (``forward``/``backward``) with benchmark_fn_cupti's keys (ms)."""

    median_ms: float
    mean_ms: float | None = None
    std_ms: float | None = None
    rel_std_pct: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    nrep: int | None = None
    peak_mem_mb: float | None = None
    kernel_name: str | None = None
    kernel_times: tuple[KernelTime, ...] = ()
    samples_ms: tuple[float, ...] | None = None  # raw per-call samples (workbench harness only)
    launches_per_call: int | None = None  # measured by the workbench harness for every call
    #: which harness measured it: "workbench" (our CUPTI harness) or "tilegym" (TileGym's benchmark_fn_cupti)
    harness: str | None = None
    #: the workbench harness's CUDA-event self-check: "ok" | "suspect" (None: not checked)
    capture_verdict: str | None = None
    capture_reason: str = ""
    #: the record's capture window mode ("per_call" | "session"; None: the record does not say)
    capture_window: str | None = None
    #: NVML clock readings around the measured calls (None: the record carries none)
    clocks: ClockExposure | None = None
    #: the record's ``capture_source`` ("cupti" | "events" | "kineto" | ...; None: not recorded)
    capture_source: str | None = None

    @property
    def measured_by(self) -> str:
        """Who measured this phase and how, from what the record itself carries (never from one field)."""
        if self.harness == "tilegym":
            return "TileGym's benchmark_fn_cupti (torch.profiler per sample)"
        if self.harness != "workbench":
            return f"harness {self.harness or 'not recorded'}"
        if self.capture_source == "events":
            name = "workbench harness, CUDA events (no launch data)"
        elif self.capture_source in (None, "cupti"):
            name = "workbench CUPTI harness"
        else:
            name = f"workbench harness ({self.capture_source} capture)"
        window = {"per_call": "per-call windows", "session": "one CUPTI window per session"}.get(
            self.capture_window or "",
            f"{self.capture_window} windows" if self.capture_window else "window mode not recorded",
        )
        parts = [
            window,
            "raw samples" if self.samples_ms else "medians only",
            "CUDA-event self-check" if self.capture_verdict is not None else "no CUDA-event self-check",
        ]
        if self.clocks is not None and self.clocks.measured:
            parts.append("NVML clocks per call")
        return f"{name} ({', '.join(parts)})"

    @property
    def capture_suspect(self) -> bool:
        """A self-check doubted this capture: its median is not a valid median."""
        return self.capture_verdict == "suspect"

    @property
    def launches_per_iter(self) -> int | None:
        """Σ kernel_times[].count (TileGym's definition); falls back to the harness count."""
        if self.kernel_times:
            return sum(k.count for k in self.kernel_times)
        return self.launches_per_call


@dataclass(frozen=True)
class PerfRecord:
    """One passed test's ``benchmark`` record, keyed the way E matches rows (contract §3.5)."""

    nodeid: str
    func_key: str  # path::Class::func
    framework: str  # raw record key, e.g. "cutile-rs", "triton", "pytorch"
    params: str  # test id minus the backend token
    phases: dict[str, PhaseStats]
    source: SourceRef | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def row_key(self) -> tuple[str, str]:
        return (self.func_key, self.params)

    @property
    def forward(self) -> PhaseStats | None:
        return self.phases.get("forward")


@dataclass(frozen=True)
class TestOutcome:
    """A test that did not yield a record (failed/skipped/errored), for NA rows and diagnostics."""

    nodeid: str
    func_key: str
    backend_token: str
    params: str
    outcome: Literal["failed", "skipped", "error", "passed_no_record"]
    reason: str = ""
    source: SourceRef | None = None


@dataclass
class PerfLog:
    """A parsed perf log: complete record blocks plus non-record outcomes and parse notes."""

    path: str
    records: list[PerfRecord] = field(default_factory=list)
    outcomes: list[TestOutcome] = field(default_factory=list)
    truncated: bool = False  # last block was cut off (flagged, not fatal)
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- launches (CUPTI)

LaunchKind = Literal["kernel", "memcpy", "memset"]


@dataclass(frozen=True)
class Launch:
    """One GPU activity caused by a measured call, attributed via its launching API record."""

    kind: LaunchKind
    name: str
    start_ns: int
    end_ns: int
    correlation_id: int
    demangled: str | None = None
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    registers_per_thread: int | None = None
    static_smem: int | None = None
    dynamic_smem: int | None = None
    stream_id: int | None = None
    graph_id: int | None = None
    graph_node_id: int | None = None
    bytes: int | None = None  # memcpy/memset size
    copy_kind: str | None = None  # e.g. "DtoD", "HtoD"
    api_name: str | None = None  # launching runtime/driver API (e.g. "cuLaunchKernel")
    cluster: tuple[int, int, int] | None = None  # CUPTI cluster_x/y/z (thread-block cluster dims)

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def display_name(self) -> str:
        return self.demangled or self.name


@dataclass(frozen=True)
class CallCapture:
    """All launches of one measured call ``fn()`` (one sample)."""

    index: int
    backend: str
    host_start_ns: int
    host_end_ns: int
    launches: tuple[Launch, ...]

    @property
    def device_time_ns(self) -> int:
        """Σ launch durations (TileGym's "measured sum" of self device times)."""
        return sum(launch.duration_ns for launch in self.launches)


@dataclass
class LaunchSet:
    """Launch captures of one config for one backend (what the Timeline and F read)."""

    nodeid: str
    backend: str
    params: str
    calls: list[CallCapture]
    source: str = "cupti"  # "cupti" | "kineto" | "events" (events: no launch data)
    #: launch attribution: every GPU activity of one call outside the timed samples, with the Python
    #: stack that issued it (``run.capture.attribution``); empty when not recorded
    attribution: tuple[AttributedLaunch, ...] = ()


@dataclass(frozen=True)
class SourceFrame:
    """One kept Python frame of a launch's host stack: the kernel's own code (TileGym tree) or the
    top library frame it called (``library``); ``file`` is TileGym-relative where it can be."""

    file: str
    line: int
    function: str
    code: str = ""
    library: bool = False

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class AttributedLaunch:
    """One GPU activity of the attributed call and the host stack that issued it (innermost first)."""

    kind: LaunchKind
    name: str  # display name (demangled where it could be)
    correlation_id: int
    frames: tuple[SourceFrame, ...]
    api_name: str | None = None
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    cluster: tuple[int, int, int] | None = None

    @property
    def own_frames(self) -> tuple[SourceFrame, ...]:
        """The frames in the kernel's own code (no library frame), innermost first."""
        return tuple(f for f in self.frames if not f.library)


# --------------------------------------------------------------------------- ratios (E)

Severity = Literal["DONE", "MILD_GAP", "MODERATE_GAP", "LARGE_GAP", "MISSING_DATA"]
EVerdict = Literal["DONE", "INVESTIGATE", "BLOCKED"]
RowStatus = Literal["OK", "NA", "NO_BASELINE"]


@dataclass(frozen=True)
class RatioRow:
    """One config of the E table. ``ratio`` is None for NA / unmatched rows."""

    func_key: str
    params: str
    variant: str | None
    baseline_backend: str | None
    baseline_ms: float | None
    candidate_ms: float | None
    ratio: float | None
    status: RowStatus
    ci_low: float | None = None
    ci_high: float | None = None
    candidate_launches: int | None = None
    baseline_launches: int | None = None
    reason: str = ""
    candidate_harness: str | None = None
    baseline_harness: str | None = None
    candidate_clocks: ClockExposure | None = None
    baseline_clocks: ClockExposure | None = None
    #: :attr:`PhaseStats.measured_by` of each side (what "Measured by" counts)
    candidate_measured_by: str | None = None
    baseline_measured_by: str | None = None
    #: run-to-run spread of the row's sides across the run history (an A/A estimate, ``history.noise``);
    #: None with fewer than two runs of a side; ``noise_text`` says from which runs, or why there is none
    noise_floor: float | None = None
    noise_text: str = ""
    #: how faces name the baseline when its key alone would mislead ("triton_tileir (plain Triton)",
    #: ``cutile_workbench.artifacts.stand_ins``); None: the key itself
    baseline_label: str | None = None

    @property
    def clocks(self) -> RowClocks:
        """Were the two sides measured at the same clocks and throttle exposure? (``clock_exposure``)"""
        return compare_exposures(self.candidate_clocks, self.baseline_clocks)

    @property
    def row_verdict(self) -> str:
        if self.ratio is None:
            return "NA"
        return "PASS" if self.ratio <= 1.05 else "INVESTIGATE"


@dataclass
class RatioTable:
    """The whole E result. ``verdict`` follows contract §5.1 exactly."""

    kernel: str
    rows: list[RatioRow]
    geomean: float | None
    severity: Severity | None
    verdict: EVerdict
    geomean_ci: tuple[float, float] | None = None
    inconclusive: bool = False  # CI straddles 1.05
    variant_geomeans: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def matched(self) -> list[RatioRow]:
        return [r for r in self.rows if r.status == "OK"]

    @property
    def missing(self) -> list[RatioRow]:
        return [r for r in self.rows if r.status != "OK"]


# --------------------------------------------------------------------------- F findings

FVerdict = Literal["FIXABLE", "ALIGNED", "BLOCKED"]


@dataclass(frozen=True)
class Finding:
    """One piece of F evidence with a conclusion, evidence paths and a confidence."""

    kind: str  # "launch_count" | "resources" | "config" | "ir" | "wrapper" | "missing"
    summary: str
    fixable: bool
    evidence: tuple[str, ...] = ()
    confidence: Literal["high", "medium", "low"] = "medium"
    details: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass
class Investigation:
    """F's result for one report file (all shapes, or one shape)."""

    kernel: str
    scope: str  # "all_shapes" or the sanitized params string
    verdict: FVerdict
    rows: list[RatioRow]
    findings: list[Finding]
    pattern: Literal["uniform", "shape_specific", "variant", "none"] = "none"  # variant: issue 32
    # F extras (diagnosis): representative params, overall confidence, launch summaries (base first)
    details: dict[str, Any] = field(default_factory=dict, compare=False)


# --------------------------------------------------------------------------- files to write


@dataclass(frozen=True)
class PlannedFile:
    """A file a report action would write: relative path under the kernel dir + exact bytes."""

    relpath: str
    content: str


@dataclass
class ReportPlan:
    """Everything one guarded write would do, plus the in-process validator transcript."""

    stage: Literal["E", "F"]
    kernel: str
    kernel_dir: Path
    files: list[PlannedFile]
    verdict: str
    validator_output: str  # verbatim transcript ("$ cmd", output, "exit=N" per validator)
    ok: bool  # all validators exit 0
    perf_log_block: str = ""  # E's <PERF_LOG> block (empty for F)


# --------------------------------------------------------------------------- TileGym checks


@dataclass(frozen=True)
class CheckItem:
    """One TileGym-check result row: what was checked, its outcome, where, what to do, and the CLI twin."""

    section: str  # precondition | wiring | kselect | audit
    status: str  # OK | BLOCKED | MISSING | REFUSED | ERROR | FINDING | SKIPPED | INFO | CANCELLED
    title: str
    detail: str = ""  # multi-line plain text: traceback tail, node ids, -k expressions
    location: str = ""  # file:line the row is about ("" when none)
    rule: str = ""  # the rule it breaks (audit findings)
    action: str = ""  # the seed's suggested action
    diff: str = ""  # a unified diff (the proposed wiring edit) — shown, never applied here
    cli: str = ""  # the CLI twin that reproduces (or, for the wiring edit, applies) this row


def config_labels(params: Sequence[str]) -> dict[str, str]:
    """Each params string shown as the fields that vary across ``params`` (``-``-separated pytest
    parametrize ids): with equal field counts, the fields that are the same everywhere are
    dropped; otherwise the common leading and trailing fields. A lone config keeps its full id.
    The TUI's label of a config; every ``--config`` accepts it (:mod:`cutile_workbench.stages.session.configs`)."""
    unique = list(dict.fromkeys(params))
    if len(unique) < 2:
        return {p: p for p in unique}
    split = [p.split("-") for p in unique]
    if len({len(f) for f in split}) == 1:
        varying = [i for i in range(len(split[0])) if len({f[i] for f in split}) > 1]
        return {p: "-".join(f[i] for i in varying) for p, f in zip(unique, split, strict=True)}
    shortest = min(len(f) for f in split)
    head = 0
    while head < shortest - 1 and len({f[head] for f in split}) == 1:
        head += 1
    tail = 0
    while tail < shortest - 1 - head and len({f[len(f) - 1 - tail] for f in split}) == 1:
        tail += 1
    return {p: "-".join(f[head : len(f) - tail]) or p for p, f in zip(unique, split, strict=True)}


# --------------------------------------------------------------------------- test ids (TileGym contract §3.4/§3.5)

#: backend tokens as they appear in ids (``cutile-rs`` becomes ``cutile_rs`` via the conftest hook)
BACKEND_TOKENS: tuple[str, ...] = (
    "cutile_rs",
    "cutile",
    "triton",
    "pytorch",
    "tilecpp",
    # the workbench's own profile suites (cutile_workbench/profiles/): a hot-path-flawed
    # wrapper, a second cuTile variant, and tilegym.ops
    "cutile_hotpath",
    "cutile_row",
    "tilegym",
)

_NODEID = re.compile(r"^(?P<func>[^\[\]]+?)(?:\[(?P<id>.*)\])?$")


def split_nodeid(nodeid: str, extra_tokens: tuple[str, ...] = ()) -> tuple[str, str, str]:
    """Return ``(func_key, backend_token, params)``; token is "" when the id has none we know."""
    m = _NODEID.match(nodeid.strip())
    if not m:
        return nodeid, "", ""
    func, test_id = m.group("func"), m.group("id") or ""
    first, sep, rest = test_id.partition("-")
    if first in BACKEND_TOKENS or first in extra_tokens:
        return func, first, rest if sep else ""
    return func, "", test_id


_DIGIT_RUNS = re.compile(r"(\d+)")


def natural_key(params: str) -> tuple[tuple[int, int | str], ...]:
    """Natural order of a params string: shape fields compare as numbers (4096 before 16384).
    The Ratios table and the run history order configs by it."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in _DIGIT_RUNS.split(params) if part
    )


# --------------------------------------------------------------------------- values the faces show


@dataclass(frozen=True)
class RowSamples:
    """The raw forward samples (ms) behind one E row: candidate and its chosen baseline."""

    candidate: tuple[float, ...]
    baseline: tuple[float, ...]


@dataclass
class ShardProgress:
    index: int
    planned: int = 0
    finished: int = 0
    failed: int = 0
    state: str = "pending"
    host: str = ""
    gpu: str = ""
    device: str = ""  # the CUDA_VISIBLE_DEVICES entry of its slot ("" unpinned / not known yet)
    running: str | None = None
    detail: str = ""


#: E's DONE band: a geomean at or under it (on its 4-decimal value) is DONE (contract §5.1)
DONE_MAX = 1.05


def round4(g: float) -> float:
    """The value written as ``geomean_ratio=X.XXXX`` (the verdict is decided on this)."""
    return float(f"{g:.4f}")


#: the overview's short form of where E's figures came from
E_SOURCE_SHORT = {"performance.md": "md", "logs": "logs", "logs (performance.md stale)": "logs*"}

#: the overview's columns, in priority order: the one list both faces show (the CLI's text table,
#: the TUI's ``OverviewTable``); each face formats a cell of a column its own way
OVERVIEW_COLUMNS: tuple[str, ...] = (
    "kernel",
    "E",
    "geomean",
    "severity",
    "worst config",
    "matched",
    "F",
    "candidate",
    "identity",
    "comparable",
    "from",
    "regression",
    "last run",
)


@dataclass(frozen=True)
class OverviewRow:
    """One kernel dir of the out root (see the module contract for each source)."""

    kernel: str
    path: str
    problem: str | None = None  # what is wrong with a broken / half-written dir
    e_source: str | None = None  # "performance.md" | "logs (performance.md stale)" | "logs" | None
    e_verdict: str | None = None  # DONE | INVESTIGATE | BLOCKED
    geomean: float | None = None
    severity: str | None = None
    worst_config: str | None = None
    worst_ratio: float | None = None
    configs: int | None = None
    matched: int | None = None
    missing: int | None = None
    f_verdicts: dict[str, str] = field(default_factory=dict)
    candidate: str | None = None  # "cutile-rs" or the stand-in's frameworks
    stand_in: bool = False
    identity: str | None = None  # who the candidate's launches really are (trust rules), None = unknown
    comparability: str | None = None  # "comparable" | "not_comparable" | "unknown" | "no_baseline"
    comparability_text: str = ""
    last_run: str | None = None  # ISO time of the last measured run (session.json), else None
    regression: str | None = None  # "none" | "N config(s) regressed" | "no history" | ...
    notes: tuple[str, ...] = ()

    @property
    def identity_mark(self) -> str:
        """``own`` when every row ran the candidate's own kernels, ``—`` unknown, else ``CHECK`` (see identity)."""
        if not self.identity:
            return "—"
        if self.identity.startswith("all ") and "own kernels" in self.identity:
            return "own"
        return "CHECK"

    @property
    def in_band(self) -> bool | None:
        """Is the geomean inside E's DONE band (≤ 1.05)? None without a geomean."""
        return None if self.geomean is None else round4(self.geomean) <= DONE_MAX


class SideSol(Protocol):
    """One side's speed of light as a face shows it: the fraction of the measured peak (None = unknown)."""

    @property
    def sol(self) -> float | None: ...


class RowSol(Protocol):
    """One E row's speed of light as the Ratios table shows it (``evidence.sol.SolRow`` is one)."""

    @property
    def candidate(self) -> SideSol | None: ...

    @property
    def baseline(self) -> SideSol | None: ...
