"""AppData: everything the app shows, injected by :func:`make_app` (no loading inside screens).

Contract: screens read ``app.data`` and call its callables; they never open files themselves
(except ``read_existing`` through this object). ``problems`` are load errors found while
building the data (shown as notifications on start, naming file and line). ``LiveRunner`` is the
protocol a live run source implements (``cutile_workbench.run.runner`` adapter or a replay of a recorded
event stream); it is called from a thread worker.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from cutile_workbench.errors import WorkbenchError
from cutile_workbench.model import LaunchSet, RatioRow, RatioTable, ReportPlan

if TYPE_CHECKING:  # annotations only: the IR widgets load with their screen, after the first paint
    from cutile_workbench.services.history import KernelHistory, RatioComparability
    from cutile_workbench.services.session import KernelTrust, ProbeResult, RowSamples, SolRow
    from cutile_workbench.tui.widgets.audit_panel import AuditItem
    from cutile_workbench.tui.widgets.ir_diff_view import DiffLine

DataSource = str  # "recorded" | "out_root" | "tilegym" | "live" | "synthetic"


class LiveRunner(Protocol):
    """Runs the perf suite for some configs in a child, calling ``on_event`` per JSON-lines event.

    ``on_event`` receives ``cutile_workbench.artifacts.events.Event`` objects (or dicts with ``event``); the call
    returns the child's exit status. It must poll ``cancel`` and stop the child when it is set.
    An optional ``events_source`` attribute (the events file) names the file in error messages.
    """

    def __call__(
        self, rows: Sequence[RatioRow], on_event: Callable[[Any], None], cancel: threading.Event
    ) -> int: ...


class ShardedRunner(Protocol):
    """Re-runs several configs sharded over GPU slots (``cutile_workbench.services.sharded.ShardedRerun``).

    Called from a thread worker: ``on_event`` gets the scale-out service's events, ``cancel`` stops
    every worker; returns a ``ShardedOutcome`` (``rc``, ``cancelled``, ``summary`` lines)."""

    def describe(self, rows: Sequence[RatioRow]) -> str: ...

    def slot_label(self) -> str: ...

    def __call__(
        self, rows: Sequence[RatioRow], on_event: Callable[[Any], None], cancel: threading.Event
    ) -> Any: ...


@dataclass(frozen=True)
class IRPair:
    """One reference/generated IR pair, already diffed and audited by the core."""

    name: str
    ref_label: str
    gen_label: str
    rows: tuple[DiffLine, ...]
    audit: tuple[AuditItem, ...] = ()
    lexer: Any = None
    verdict: str = ""  # e.g. diff_ir.sh's PASS / FAIL_FIXABLE / PASS_WITH_NOTES
    #: the config (params string) this pair is the recorded IR of (``workbench/ir/index.json``);
    #: None for the per-variant pairs of ``reference/`` and ``generated/``
    config: str | None = None
    how: str = ""  # how each side was chosen (the index's sentences)
    #: the structural diff's verdict ("equivalent" / "different" / "not fully parsed") and notes
    structure: str = ""
    structure_notes: tuple[str, ...] = ()
    #: per hunk (rank order): category, audit check it belongs to (or None), cosmetic
    hunks: tuple[tuple[str, str | None, bool], ...] = ()
    launch: tuple[str, ...] = ()  # launch evidence of this config (registers, smem, grid), where captured


@dataclass
class AppData:
    kernel: str
    source: DataSource
    out_root: Path | None = None
    gpu: str = "unknown GPU"
    table: RatioTable | None = None
    #: a list, or a :class:`~cutile_workbench.artifacts.launch_store.LaunchStore` whose sets are decoded per config shown
    launch_sets: Sequence[LaunchSet] = field(default_factory=list)
    candidate_backend: str = "cutile-rs"
    #: which harness measured the rows ("workbench", "tilegym", "workbench+tilegym"; "" unknown)
    harness: str = ""

    @property
    def stand_in(self) -> bool:
        """The candidate is not cutile-rs (e.g. our cuTile kernel in the cutile-rs slot)."""
        return self.candidate_backend != "cutile-rs"

    ir_pairs: list[IRPair] = field(default_factory=list)
    #: deferred IR loading (parse + structural diff + audit; the diff alone took 0.5-1.3 s for two
    #: 10k-line files on the loaded CPU box, BENCHMARKS §2b): the app runs it in a thread after the
    #: first paint; returns (pairs, load problems)
    ir_loader: Callable[[], tuple[list[IRPair], list[WorkbenchError]]] | None = None
    plan_report: Callable[[str], ReportPlan] | None = None  # "E" | "F" → plan (may raise)
    write_report: Callable[[ReportPlan], Any] | None = None  # guarded writer (may raise)
    read_existing: Callable[[ReportPlan], Mapping[str, str | None]] | None = None
    runner: LiveRunner | None = None
    #: why there is no live runner although a GPU is present ("" = no reason to give)
    live_unavailable: str = ""
    #: re-runs several configs sharded over this node's GPUs (``G`` on Ratios): a
    #: ``cutile_workbench.services.sharded.ShardedRerun``; None = not offered (fewer than 2 GPUs, no --gpus)
    sharded: ShardedRunner | None = None
    #: why ``--gpus`` was given but the sharded re-run cannot be offered ("" = nothing to say)
    sharded_unavailable: str = ""
    #: why writing is not allowed here ("" = allowed), e.g. the recorded session inside the package
    read_only: str = ""
    problems: list[WorkbenchError] = field(default_factory=list)
    #: what a problem of ``problems`` left out of a view (issue #34 item 3), stated in that view
    #: until fixed and under ``i``: (view, what is not shown, the problem), e.g.
    #: ``("ratios", "id column not shown", <session.json:48 invalid JSON>)``
    narrowed: list[tuple[str, str, WorkbenchError]] = field(default_factory=list)
    #: the flags that find this kernel dir again (``Workspace.locator``): every command line a screen
    #: prints ends with them (:meth:`command`), so that it runs when pasted (issue 36)
    locator: tuple[str, ...] = ()
    #: inputs the lenient open read on without (``services.session.ignored_inputs``: file and line);
    #: also in ``problems``, and stated where the IR diff would use them
    ignored: tuple[str, ...] = ()
    session: Mapping[str, Any] = field(default_factory=dict)
    #: the workspace's TileGym checkout (None = none attached, e.g. the recorded session)
    tilegym: Path | None = None
    #: runs the TileGym-side checks (``screens.checks.gather_checks``) given a ``cancelled()``
    #: poll; called from a thread worker; None disables the Checks screen's run action
    run_checks: Callable[[Callable[[], bool]], Any] | None = None
    #: filed ncu probes, ``(backend id token, params)`` → result (``services.probe.load``)
    probes: Mapping[tuple[str, str], ProbeResult] = field(default_factory=dict)
    #: speed of light per E row, ``(func_key, params)`` → SolRow (``services.stage_f.speed_of_light``);
    #: a row without a work model is absent (the Ratios screen shows "—")
    sol: Mapping[tuple[str, str], SolRow] = field(default_factory=dict)
    # --- run history (issue #15): the Ratios header's comparability flag and the History screen (mode 6)
    #: were candidate and baselines measured under the same conditions (None = not checked here)
    conditions: RatioComparability | None = None
    #: the run history (``services.history.kernel_history``), built by ``history_loader`` in a thread
    #: worker when the History screen mounts; tests may inject it directly
    history: KernelHistory | None = None
    history_loader: Callable[[], KernelHistory] | None = None
    #: issue 18: who ran each row (candidate identity, ``trust.mark(params)``) and the config the reference
    #: ran (``trust.reference_configs``), from ``services.stage_e.trust``; None = not computed here
    trust: KernelTrust | None = None
    # --- issue 31 item 3: the first screen paints from what is cheap, the rest fills in from a worker
    #: the Ratios columns whose values are still being computed (``ci``, ``id``, ``sol``): their cells
    #: say "pending" (never "—", which reads as "none") until :attr:`full_loader`'s data replaces this
    pending: frozenset[str] = frozenset()
    #: the whole session's data (this one's session object, so nothing is read twice), run by the app
    #: in a thread worker after the first frame; None = this data is already the whole session's
    full_loader: Callable[[], AppData] | None = None

    def command(self, *words: str) -> str:
        """A ``cutile-workbench`` line a screen prints as advice: ``words``, then :attr:`locator`, quoted."""
        from cutile_workbench.services.session import command_line

        return command_line(*words, locator=self.locator)

    def identity_marks(self) -> dict[str, str]:
        """params → the row's identity mark (own / REF / LIB / NONE / ?); empty when not computed."""
        return {p: i.mark for p, i in self.trust.identities.items()} if self.trust is not None else {}

    def identity_line(self, params: str | None) -> str:
        """``id REF: <why>`` for one config ("" when not computed)."""
        ident = self.trust.identities.get(params) if self.trust is not None and params else None
        return f"id {ident.mark}: {ident.why}" if ident is not None else ""

    def reference_config_line(self, params: str | None) -> str:
        """The config the reference ran for one config (decoded from its captured symbol), or why it is not
        pinned — the same answer F's step 3 and ``timeline`` give ("" when not computed)."""
        rc = self.trust.reference_configs.get(params) if self.trust is not None and params else None
        if rc is None:
            return ""
        if rc.config is not None:
            return f"reference ran {rc.config.label} (from its captured symbol; {rc.constants_source})"
        return "reference config not pinned: " + ("; ".join(rc.unknown) or rc.text)

    #: raw forward samples behind each OK row, ``(func_key, params)`` → ``stats.RowSamples``
    #: (``services.stage_e.row_samples``): the Ratios distribution and the subset CIs read them
    samples: Mapping[tuple[str, str], RowSamples] = field(default_factory=dict)

    def sets_for(self, row: RatioRow) -> tuple[LaunchSet | None, LaunchSet | None]:
        """(candidate, baseline) launch sets of one config — F's own matching rule
        (``diagnosis.pick_sets``: params string, ``triton_tileir`` log ≙ ``triton`` records)."""
        from cutile_workbench.services.timeline import pick_sets

        return pick_sets(self.launch_sets, row, self.candidate_backend)

    def sets_of_test(self, nodeid: str) -> list[LaunchSet]:
        """Every launch set of one test node id (its forward and backward measurements), decoding no other."""
        from cutile_workbench.services.session import LaunchStore

        if isinstance(self.launch_sets, LaunchStore):
            return self.launch_sets.for_nodeid(nodeid)
        return [s for s in self.launch_sets if s.nodeid == nodeid]


def read_existing_files(plan: ReportPlan) -> dict[str, str | None]:
    """Current text of each planned target (None = not there yet); undecodable bytes replaced."""
    out: dict[str, str | None] = {}
    for f in plan.files:
        p = Path(plan.kernel_dir) / f.relpath
        try:
            out[f.relpath] = p.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            out[f.relpath] = None
        except OSError as e:  # unreadable target: show it in the diff rather than crash
            out[f.relpath] = f"<unreadable: {e}>"
    return out
