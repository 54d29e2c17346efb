"""KernelSession: the facts of one kernel dir, each read once and computed once, on first use.

Contract:

- :meth:`KernelSession.of` wraps an opened :class:`~cutile_workbench.artifacts.workspace.Workspace`
  (opening — kernel-name check, confinement, recovery — stays :func:`open_workspace`'s; the services
  open it, the faces never do). One session per command; the TUI holds one per kernel it shows.
- Each fact is a method computed on first call and kept for the session's life (an error is kept
  too: asking again raises the same ``WorkbenchError``, never a different answer). The derived-facts
  cache (:mod:`cutile_workbench.artifacts.derive_cache`, E's table cache) stays underneath: a warm
  session decodes nothing it does not need.
- Facts: ``session_meta`` (session.json), ``e_table`` (E's table, :func:`load_e_table` — called once
  per (seed, n_boot)), ``candidate`` (the merged candidate log, parsed once), ``candidate_frameworks``,
  ``candidate_backend`` (the one rule, :func:`cutile_workbench.artifacts.candidate.resolve_candidate_backend`),
  ``row_records`` (the perf records behind E's rows, cached: no parse when warm),
  ``table`` (E's table as every face shows it: noise floors and baseline labels added),
  ``stand_ins``, ``trust`` (identity and the reference's config, cached on its inputs), ``config_trust``
  (one config's entry of it, derived or read alone), ``config_table`` (one config's rows of E's table), ``samples``,
  ``launches`` (the per-config launch store, index only), ``probes``, ``gpu``, ``configs`` (the
  config names of :mod:`cutile_workbench.stages.session.configs`).
- Reads only: nothing here writes under the kernel dir.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from cutile_workbench.artifacts.workspace import Workspace
from cutile_workbench.errors import WorkbenchError
from cutile_workbench.model import PerfLog, RatioTable

if TYPE_CHECKING:
    from cutile_workbench.artifacts.launch_store import LaunchStore
    from cutile_workbench.artifacts.layout import KernelPaths
    from cutile_workbench.artifacts.stand_ins import StandIns
    from cutile_workbench.evidence.gpu import GpuFacts
    from cutile_workbench.evidence.ncu import ProbeResult
    from cutile_workbench.evidence.trust import ConfigTrust, KernelTrust
    from cutile_workbench.stages.e.e_table import ETable
    from cutile_workbench.stages.e.stats import RowSamples
    from cutile_workbench.stages.session.configs import ConfigNames
    from cutile_workbench.stages.session.records import RowRecords

T = TypeVar("T")


@dataclass
class KernelSession:
    """One kernel dir's facts (see the module contract)."""

    ws: Workspace
    _memo: dict[Any, tuple[bool, Any]] = field(default_factory=dict, repr=False)
    #: the TUI asks from its worker threads too: a fact is computed once, not once per thread
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    @classmethod
    def of(cls, ws: Workspace | KernelSession) -> KernelSession:
        """The session of ``ws``: one per opened workspace (kept with its lazily parsed logs), so every
        service called with the same workspace shares its facts; a session is returned as it is."""
        if isinstance(ws, KernelSession):
            return ws
        found = ws._cache.get("kernel_session")
        if not isinstance(found, KernelSession):
            found = ws._cache["kernel_session"] = cls(ws)
        return found

    # ------------------------------------------------------------------ what it is
    @property
    def kernel(self) -> str:
        return self.ws.kernel

    @property
    def paths(self) -> KernelPaths:
        return self.ws.paths

    @property
    def kernel_dir(self) -> Path:
        return self.ws.paths.root

    @property
    def source(self) -> str:
        return self.ws.source

    @property
    def tilegym(self) -> Path | None:
        return self.ws.tilegym

    def _once(self, key: Any, compute: Callable[[], T]) -> T:
        with self._lock:
            if key not in self._memo:
                try:
                    self._memo[key] = (True, compute())
                except WorkbenchError as exc:
                    self._memo[key] = (False, exc)
            ok, value = self._memo[key]
        if not ok:
            raise value
        return cast(T, value)

    def _facts(self) -> list[tuple[Any, tuple[bool, Any]]]:
        with self._lock:
            return list(self._memo.items())

    def forget_table(self, *, seed: int = 0, n_boot: int) -> None:
        """Drop the (seed, n_boot) table and its E table: the quick first screen's ``n_boot=0`` one once
        the whole session's is in (each holds its own read of the candidate log's text)."""
        with self._lock:
            self._memo.pop(("e_table", seed, n_boot), None)
            self._memo.pop(("table", seed, n_boot), None)

    def forget(self, *keys: str) -> None:
        """Drop the named facts (a command that just wrote their file reads it again: ``probes`` after
        filing a probe); nothing else is recomputed."""
        with self._lock:
            for key in keys:
                self._memo.pop(key, None)

    # ------------------------------------------------------------------ inputs
    def session_meta(self) -> dict[str, Any] | None:
        """``workbench/session.json`` or None; InputError (kept) when malformed."""
        return self._once("session_meta", self.ws.session_meta)

    def session_meta_or_none(self) -> dict[str, Any] | None:
        """session.json, None when absent or malformed (the loaders report a malformed one)."""
        try:
            return self.session_meta()
        except WorkbenchError:
            return None

    def e_table(self, *, seed: int = 0, n_boot: int = 2000) -> ETable:
        """E's table (:func:`cutile_workbench.stages.e.e_table.load_e_table`), once per (seed, n_boot);
        ``Blocked`` without a candidate log, ``InputError`` for a malformed one."""
        from cutile_workbench.stages.e import e_table

        return self._once(
            ("e_table", seed, n_boot), lambda: e_table.load_e_table(self.ws, seed=seed, n_boot=n_boot)
        )

    def any_e_table(self) -> ETable:
        """An E table already built in this session (the default one first, then any seed), else the
        default one: for facts that depend on the logs only (the candidate log, its frameworks), not on
        the bootstrap. The default first: what is keyed on the table's key (the row records' cache
        entry) is then the one every face finds, though a quick first screen built ``n_boot=0``'s first."""
        facts = self._facts()
        for key, (ok, value) in facts:
            if ok and key == ("e_table", 0, 2000):
                return cast("ETable", value)
        for key, (ok, value) in facts:
            if ok and isinstance(key, tuple) and key[0] == "e_table":
                return cast("ETable", value)
        return self.e_table()

    def candidate(self) -> PerfLog:
        """The merged candidate log E's table is built from (parsed once)."""
        return self._once("candidate", lambda: self.any_e_table().candidate)

    def candidate_frameworks(self) -> tuple[str, ...]:
        """The candidate records' frameworks (kept with the cached table: no parse on a hit)."""
        from cutile_workbench.stages.e.e_table import cheap_frameworks

        def compute() -> tuple[str, ...]:  # an E table at hand, else the logs' index (no parse), else parse
            at_hand = any(ok and isinstance(k, tuple) and k[0] == "e_table" for k, (ok, _v) in self._facts())
            return (None if at_hand else cheap_frameworks(self.ws)) or self.any_e_table().candidate_frameworks

        return self._once("frameworks", compute)

    def candidate_backend(self) -> str | None:
        """The candidate backend in the one order every face uses (:mod:`cutile_workbench.artifacts.candidate`)."""
        from cutile_workbench.artifacts.candidate import resolve_candidate_backend

        def frameworks() -> PerfLog | tuple[str, ...]:
            # the candidate log when this process parsed it already (the quick first screen: not the
            # row records, whose first derivation encodes every record into the cache, ~1 s at 1,000
            # configs), else the row records' (cached: no parse); the same frameworks in log order
            for key, (ok, value) in self._facts():
                if ok and isinstance(key, tuple) and key[0] == "e_table" and value.loaded_logs():
                    return cast("ETable", value).candidate
            # one framework (the usual case): the rule reads no order, and the cached table kept it
            at_hand = any(ok and isinstance(k, tuple) and k[0] == "e_table" for k, (ok, _v) in self._facts())
            if at_hand and len(one := self.candidate_frameworks()) == 1:
                return one
            return self.row_records().frameworks

        return self._once(
            "candidate_backend", lambda: resolve_candidate_backend(self.session_meta(), frameworks())
        )

    def row_records(self) -> RowRecords:
        """The perf records behind E's rows, by row (:mod:`cutile_workbench.stages.session.records`:
        cached on E's table key, so a warm session parses no log for them)."""
        from cutile_workbench.stages.session.records import row_records

        return self._once("row_records", lambda: row_records(self.any_e_table()))

    def baseline_logs(self) -> dict[str, PerfLog]:
        """The baseline logs present (``cutile``, ``triton_tileir``), parsed once (the workspace keeps them)."""
        return {k: v for k, v in self.ws.baseline_logs().items() if not k.startswith("cutile_rs")}

    def parsed_logs(self) -> dict[str, PerfLog]:
        """Every perf log this session has parsed so far, by path string (nothing is parsed here): a
        reader of the same files (the history import) takes them instead of parsing them again."""
        out: dict[str, PerfLog] = {}
        for key, (ok, value) in self._facts():
            if ok and isinstance(key, tuple) and key[0] == "e_table":
                out.update(value.loaded_logs())
        paths = self.paths
        for name, path in (
            ("cutile", paths.baseline_cutile),
            ("triton_tileir", paths.baseline_triton_tileir),
        ):
            log = self.ws._cache.get(name)  # the workspace's strict parse, when it was made
            if isinstance(log, PerfLog):
                out[str(path)] = log
        return out

    # ------------------------------------------------------------------ E's table as shown
    def table(self, *, seed: int = 0, n_boot: int = 2000) -> RatioTable:
        """E's table as every face shows it: the noise floor per row (the run history) and the baseline
        labels (session.json) added to :meth:`e_table`'s (outside its cache: their inputs are not the logs)."""

        return self._once(("table", seed, n_boot), lambda: self.shown(self.e_table(seed=seed, n_boot=n_boot)))

    def shown(self, et: ETable) -> RatioTable:
        """``et``'s table as every face shows it (noise floors, baseline labels): :meth:`table`'s rule."""
        import dataclasses

        from cutile_workbench.history.noise import table_with_noise

        frameworks = set(et.candidate_frameworks)
        table = table_with_noise(et.table, self.paths, frameworks)  # issue 18 §4
        labels = self._stand_ins_for(frameworks, table)
        rows = [
            dataclasses.replace(r, baseline_label=label)
            if r.baseline_backend
            and (label := labels.baseline_label(r.baseline_backend)) != r.baseline_backend
            else r
            for r in table.rows
        ]
        return dataclasses.replace(table, rows=rows)

    def is_shown(self, table: RatioTable) -> bool:
        """``table`` is one this session built (:meth:`table`): its facts are the session's."""
        return any(
            ok and isinstance(k, tuple) and k[0] == "table" and v is table for k, (ok, v) in self._facts()
        )

    def _stand_ins_for(self, frameworks: set[str] | None, table: RatioTable | None) -> StandIns:
        from cutile_workbench.artifacts.stand_ins import stand_ins_of

        if table is not None:
            keys = {r.baseline_backend for r in table.matched if r.baseline_backend}
        else:
            keys = {"triton_tileir"} if Path(self.paths.baseline_triton_tileir).is_file() else set()
        return stand_ins_of(frameworks, self.session_meta_or_none(), keys)

    def stand_ins(self, table: RatioTable | None = None) -> StandIns:
        """What is a stand-in here (:mod:`cutile_workbench.artifacts.stand_ins`); never raises on file content:
        an unreadable candidate log or session.json leaves that source out."""
        try:
            frameworks: set[str] | None = set(self.candidate_frameworks())
        except WorkbenchError:
            frameworks = None
        return self._stand_ins_for(frameworks, table)

    def samples(self, table: RatioTable | None = None) -> dict[tuple[str, str], RowSamples]:
        """The raw forward samples behind each ``OK`` row (candidate's, and the chosen baseline's)."""
        from cutile_workbench.stages.e.stats import RowSamples, baseline_records

        def compute() -> dict[tuple[str, str], RowSamples]:
            shown = table if table is not None else self.table()
            candidate = self.candidate()
            cand_frameworks = {r.framework for r in candidate.records}
            cand = {r.row_key: r for r in candidate.records}
            indexes = {
                name: baseline_records(name, log, cand_frameworks)
                for name, log in self.ws.baseline_logs().items()
            }
            out: dict[tuple[str, str], RowSamples] = {}
            for row in shown.rows:
                key = (row.func_key, row.params)
                c = cand.get(key)
                b = indexes.get(row.baseline_backend or "", {}).get(key)
                cs = c.forward.samples_ms if c is not None and c.forward is not None else None
                bs = b.forward.samples_ms if b is not None and b.forward is not None else None
                if row.status == "OK" and cs and bs:
                    out[key] = RowSamples(tuple(cs), tuple(bs))
            return out

        return compute() if table is not None else self._once("samples", compute)

    # ------------------------------------------------------------------ evidence
    def trust(self, table: RatioTable | None = None) -> KernelTrust:
        """Candidate identity per row and the reference's config per matched row, computed once per
        content of their inputs (the derived-facts cache); InputError for malformed captures."""
        if table is not None:
            return self._trust(table)
        return self._once("trust", lambda: self._trust(self.table()))

    def _trust(self, table: RatioTable) -> KernelTrust:
        """The one cached path (:func:`cutile_workbench.evidence.trust.cached_kernel_trust`: once per
        content of its inputs, per config on a miss), fed the session's launch store and the candidate
        records' frameworks (kept with the cached E table: no log parse on a hit)."""
        from cutile_workbench.evidence.trust import cached_kernel_trust
        from cutile_workbench.stages.e.report import framework_of

        try:
            store = self.launches()
        except WorkbenchError:
            store = None  # trust reads the file itself and says why identity is unknown (file named)
        return cached_kernel_trust(
            self.ws, table, candidate_framework=framework_of(self.candidate_frameworks()), launch_sets=store
        )

    def config_trust(self, params: str) -> ConfigTrust | None:
        """One config's identity and reference config, the same answer as :meth:`trust`'s entry: taken
        from it when this session has it, else derived or read for that config alone
        (:func:`cutile_workbench.evidence.trust.kernel_config_trust`); None: no row of the table."""
        from cutile_workbench.evidence.trust import ConfigTrust, kernel_config_trust
        from cutile_workbench.stages.e.report import framework_of

        with self._lock:
            whole = self._memo.get("trust")
        if whole is not None and whole[0]:
            kt = cast("KernelTrust", whole[1])
            ident = kt.identities.get(params)
            return None if ident is None else ConfigTrust(ident, kt.reference_configs.get(params))

        def compute() -> ConfigTrust | None:
            try:
                store = self.launches()
            except WorkbenchError:
                store = None
            return kernel_config_trust(
                self.ws,
                self.config_table(params),
                params,
                candidate_framework=framework_of(self.candidate_frameworks()),
                launch_sets=store,
            )

        return self._once(("config_trust", params), compute)

    def config_table(self, params: str) -> RatioTable:
        """E's table reduced to one config's rows (:func:`cutile_workbench.stages.e.e_table.load_config_table`:
        the whole table's when at hand, else that config's log sections alone, seeked): what a
        one-config question (``timeline --config``) reads instead of every config's blocks."""
        from cutile_workbench.stages.e.e_table import load_config_table

        with self._lock:
            whole = self._memo.get(("table", 0, 2000))
        if whole is not None and whole[0]:
            return cast(RatioTable, whole[1])
        return self._once(("config_table", params), lambda: load_config_table(self.ws, params))

    def launches(self) -> LaunchStore | None:
        """``workbench/launches.json.gz`` as a per-config store (index only; sets decoded per config
        asked), None when absent; InputError (kept) when malformed."""

        def compute() -> LaunchStore | None:
            if not self.paths.launches_json.is_file():
                return None
            from cutile_workbench.artifacts.launch_store import open_store

            return open_store(self.paths.launches_json, kernel_dir=self.paths.root)

        return self._once("launches", compute)

    def probes(self) -> Mapping[tuple[str, str], ProbeResult]:
        """The ncu probes filed under ``workbench/probes/``."""
        from cutile_workbench.evidence.ncu import load_probes

        return self._once("probes", lambda: load_probes(self.paths))

    def gpu(self) -> GpuFacts:
        """The session's GPU (session.json; InputError when malformed)."""
        from cutile_workbench.evidence.gpu import gpu_facts

        return self._once("gpu", lambda: gpu_facts(self.session_meta()))

    # ------------------------------------------------------------------ configs
    def configs(self, *, with_logs: bool = False) -> ConfigNames:
        """Every config of this kernel dir and the names it goes by (:mod:`cutile_workbench.stages.session.configs`):
        the rows of E's table when there is one, plus the configs the launch captures and the IR index name;
        ``with_logs`` adds the node ids of every record of the perf logs (they are parsed for it)."""
        from cutile_workbench.stages.session.configs import config_names

        def compute() -> ConfigNames:
            entries: list[tuple[str, str]] = []
            labelled: list[str] | None = None
            try:
                rows = self.table().rows
                labelled = [r.params for r in rows]  # the Ratios screen labels these
                entries += [(r.params, f"{r.func_key}[{r.params}]") for r in rows]
                if with_logs:
                    entries += [(rec.params, rec.nodeid) for rec in self.candidate().records]
            except WorkbenchError:
                pass  # no candidate log: the other sources still name configs
            for log in self._baselines_or_empty().values() if with_logs else ():
                entries += [(rec.params, rec.nodeid) for rec in log.records]
            try:
                store = self.launches()
            except WorkbenchError:
                store = None
            if store is not None:
                entries += [(e.params, e.nodeid) for e in store.entries]
            entries += [(p, "") for p in self._ir_index_configs()]
            return config_names(entries, labelled)

        return self._once(("configs", with_logs), compute)

    def resolve_config(self, spelling: str, *, key: str = "--config") -> str:
        """The params string of the one config ``spelling`` names (see :mod:`cutile_workbench.stages.session.configs`);
        the perf logs' node ids are read only for a spelling the table, captures and IR index do not name."""
        names = self.configs()
        if not names.lookup(spelling):
            names = self.configs(with_logs=True)
        return names.resolve(spelling, path=self.kernel_dir, key=key)

    def _baselines_or_empty(self) -> dict[str, PerfLog]:
        try:
            return self.baseline_logs()
        except WorkbenchError:
            return {}

    def _ir_index_configs(self) -> list[str]:
        from cutile_workbench.ir.filing import read_index

        try:
            return [str(p) for p in read_index(self.paths.root)["configs"]]
        except WorkbenchError:
            return []
