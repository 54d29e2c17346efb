"""Per-launch captures summarised for F: launch classes, the main kernel, one source of launch evidence.

Contract:
- :func:`summarize_launch_set` summarises one backend's :class:`~cutile_workbench.model.LaunchSet` for one
  config over the calls with the most common launch signature (medians over those calls): launches
  per call, the main kernel (largest device time among non-helper kernels), its per-launch time and
  resources (registers, static+dynamic smem, grid, block), and every launch class
  (:func:`classify_kernel`: memset | copy | fill | elementwise <op> | native | kernel).
- :func:`summarize_columns` is :func:`summarize_launch_set` of a set given by the store's columns
  (equal field for field; no object per launch), :func:`config_facts` one config's :class:`SetFacts`
  (what trust reads: summaries and kernel symbols), from the columns where the store has them.
- :func:`extra_launches` names the candidate's extra launch classes vs the reference.
- :func:`launch_evidence` returns ONE :class:`LaunchEvidence` per config: the captures when both
  sides have a set (``source`` "cupti"/"kineto"), else the perf logs' ``kernel_times`` counts and the
  main kernel's per-launch time (``source`` "kernel_times"), else ``source`` "none". Reports render
  launch evidence only from this object, so one report never cites two sources.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cutile_workbench.artifacts.kernel_names import short_kernel_name
from cutile_workbench.artifacts.launch_store import KINDS
from cutile_workbench.artifacts.testids import id_token
from cutile_workbench.model import AttributedLaunch, LaunchSet, PerfRecord, RatioRow


@dataclass(frozen=True)
class KernelGroup:
    """Launches of one (kind, name) within one call, summarised over the calls used."""

    name: str
    kind: str
    count: int  # per call
    median_us: float  # median per-launch duration
    cls: str  # main | fill | copy | memset | elementwise <op> | kernel


@dataclass(frozen=True)
class LaunchSummary:
    """One backend's launch behaviour for one config (what F's launch table shows)."""

    backend: str
    params: str
    calls_used: int
    calls_total: int
    launches_per_call: int
    main_kernel: str
    main_count: int
    main_per_launch_us: float
    measured_sum_us: float
    groups: tuple[KernelGroup, ...]
    registers_per_thread: int | None = None
    smem_bytes: int | None = None
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    source: str = "cupti"
    static_smem: int | None = None
    dynamic_smem: int | None = None
    #: the main kernel's per-launch durations over the calls used (for the gap's bootstrap CI)
    main_durations_ns: tuple[int, ...] = field(default=(), compare=False)
    main_name: str = ""  # the main kernel's name as CUPTI reports it (mangled where compilers mangle)
    nodeid: str = ""
    #: the main kernel's CUPTI cluster dims (F pins num_ctas from them; None: not captured)
    cluster: tuple[int, int, int] | None = None
    #: the set's attributed un-timed call (issue 32), kept with the summary so that F reads which line
    #: issued each launch without decoding the set again (issue 31)
    attribution: tuple[AttributedLaunch, ...] = field(default=(), compare=False)


def is_native(name: str) -> bool:
    """A PyTorch ATen kernel (demangled ``at::native::…`` or Itanium-mangled ``_ZN2at6native…``)."""
    return "at::native" in name or name.startswith(("_ZN2at6native", "void at::"))


def classify_kernel(name: str, kind: str) -> str:
    """Launch class of a GPU activity (names as CUPTI reports them, mangled or demangled):
    memset | copy | fill | elementwise <op> | native (other ATen kernel) | kernel."""
    low = name.lower()
    if kind == "memset":
        return "memset"
    if kind == "memcpy":
        return "copy"
    if "fillfunctor" in low or "fill_kernel" in low or re.search(r"\bfill\b", low):
        return "fill"
    if "copy" in low:
        return "copy"
    if "elementwise" in low:
        m = re.search(r"CUDAFunctor_([a-z]+)|([A-Z][A-Za-z]*?)Functor", name)
        op = (m.group(1) or m.group(2) or "").lower() if m else ""
        return f"elementwise {op}".strip()
    if is_native(name):
        return "native"
    return "kernel"


def summarize_launch_set(ls: LaunchSet) -> LaunchSummary | None:
    """Summary over the calls with the most common launch signature (None without kernel launches)."""
    if not ls.calls:
        return None
    sigs = [tuple((x.kind, x.name) for x in c.launches) for c in ls.calls]
    common, _ = Counter(sigs).most_common(1)[0]
    calls = [c for c, s in zip(ls.calls, sigs, strict=True) if s == common]
    if not any(k == "kernel" for k, _ in common):
        return None
    per: dict[tuple[Any, str], list[int]] = {}
    for c in calls:
        for x in c.launches:
            per.setdefault((x.kind, x.name), []).append(x.duration_ns)
    counts: Counter[tuple[Any, str]] = Counter(common)
    # main kernel: the largest non-helper kernel (an elementwise add can outlast the real kernel);
    # only when every kernel is an ATen helper is the largest one "main" (a fallback, see below)
    kernels = [k for k in per if k[0] == "kernel"]
    own = [k for k in kernels if classify_kernel(k[1], "kernel") == "kernel"]
    main_key = max(own or kernels, key=lambda k: sum(per[k]))
    groups = []
    for key, durs in per.items():
        groups.append(
            KernelGroup(
                key[1],
                key[0],
                counts[key],
                statistics.median(durs) / 1000.0,
                "main" if key == main_key else classify_kernel(key[1], key[0]),
            )
        )
    main = next(x for x in calls[0].launches if (x.kind, x.name) == main_key)
    smem = None
    if main.static_smem is not None or main.dynamic_smem is not None:
        smem = (main.static_smem or 0) + (main.dynamic_smem or 0)
    return LaunchSummary(
        backend=ls.backend,
        params=ls.params,
        calls_used=len(calls),
        calls_total=len(ls.calls),
        launches_per_call=len(common),
        main_kernel=main.display_name,
        main_count=counts[main_key],
        main_per_launch_us=statistics.median(per[main_key]) / 1000.0,
        measured_sum_us=statistics.median(c.device_time_ns for c in calls) / 1000.0,
        groups=tuple(sorted(groups, key=lambda g: (g.cls != "main", -g.count * g.median_us))),
        registers_per_thread=main.registers_per_thread,
        smem_bytes=smem,
        grid=main.grid,
        block=main.block,
        source=ls.source,
        static_smem=main.static_smem,
        dynamic_smem=main.dynamic_smem,
        main_durations_ns=tuple(per[main_key]),
        main_name=main_key[1],
        nodeid=ls.nodeid,
        attribution=ls.attribution,
        cluster=next(
            (x.cluster for c in calls for x in c.launches if (x.kind, x.name) == main_key and x.cluster), None
        ),
    )


def summarize_columns(
    cols: Any, *, backend: str, params: str, source: str, nodeid: str
) -> LaunchSummary | None:
    """:func:`summarize_launch_set` of a set given as its
    :class:`~cutile_workbench.artifacts.launch_store.SetColumns` (issue 31: no object per launch), equal
    to it field for field: the same most common signature (first seen among ties), the same main
    kernel, medians over the same integers in the same order."""
    n = cols.n_calls
    if n == 0:
        return None
    width = len(cols.name_table)
    keys = cols.kinds.astype(np.int64) * width + cols.names  # (kind, name) as one integer
    counts = cols.call_counts
    k = int(counts[0])
    if int(counts.min()) == k == int(counts.max()) and k > 0 and bool((keys.reshape(n, k) == keys[:k]).all()):
        used = np.arange(n)  # the common case: every call has one signature
        common = keys[:k]
    else:
        ends = np.cumsum(counts)
        starts = ends - counts
        sigs = [tuple(keys[a:b].tolist()) for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
        top, _ = Counter(sigs).most_common(1)[0]
        used = np.array([i for i, sg in enumerate(sigs) if sg == top], dtype=np.int64)
        k = len(top)
        common = np.array(top, dtype=np.int64)
        if k:
            sel = (starts[used][:, None] + np.arange(k)[None, :]).reshape(-1)
            durs, res = cols.durations[sel], cols.resources[sel]
    kinds_common = [int(c) // width for c in common.tolist()]
    if k == 0 or 0 not in kinds_common:
        return None
    if len(used) == n:
        durs, res = cols.durations, cols.resources
    dmat = durs.reshape(len(used), k)
    rmat = res.reshape(len(used), k)
    order: list[int] = []  # the distinct keys, first-seen order (as the dict of the object form)
    for c in common.tolist():
        if c not in order:
            order.append(c)
    names = cols.name_table
    per: dict[int, list[int]] = {}
    for c in order:
        cols_of = [j for j, x in enumerate(common.tolist()) if x == c]
        per[c] = dmat[:, cols_of].reshape(-1).tolist()  # call-major, as the object form appends
    counts_in = Counter(common.tolist())
    kind_name = {c: (KINDS[c // width], names[c % width]) for c in order}
    kernels = [c for c in per if kind_name[c][0] == "kernel"]
    own = [c for c in kernels if classify_kernel(kind_name[c][1], "kernel") == "kernel"]
    main_key = max(own or kernels, key=lambda c: sum(per[c]))
    groups = [
        KernelGroup(
            kind_name[c][1],
            kind_name[c][0],
            counts_in[c],
            statistics.median(per[c]) / 1000.0,
            "main" if c == main_key else classify_kernel(kind_name[c][1], kind_name[c][0]),
        )
        for c in per
    ]
    main_pos = [j for j, x in enumerate(common.tolist()) if x == main_key]
    demangled, regs, static, dynamic, grid, block, _cl = cols.resource_table[int(rmat[0, main_pos[0]])]
    smem = None
    if static is not None or dynamic is not None:
        smem = (static or 0) + (dynamic or 0)
    cluster = next(
        (cl for r in rmat[:, main_pos].reshape(-1).tolist() for cl in (cols.resource_table[r][6],) if cl),
        None,
    )
    main_name = kind_name[main_key][1]
    return LaunchSummary(
        backend=backend,
        params=params,
        calls_used=len(used),
        calls_total=n,
        launches_per_call=k,
        main_kernel=demangled or main_name,
        main_count=counts_in[main_key],
        main_per_launch_us=statistics.median(per[main_key]) / 1000.0,
        measured_sum_us=statistics.median(dmat.sum(axis=1).tolist()) / 1000.0,
        groups=tuple(sorted(groups, key=lambda g: (g.cls != "main", -g.count * g.median_us))),
        registers_per_thread=regs,
        smem_bytes=smem,
        grid=grid,
        block=block,
        source=source,
        static_smem=static,
        dynamic_smem=dynamic,
        main_durations_ns=tuple(per[main_key]),
        main_name=main_name,
        nodeid=nodeid,
        attribution=cols.attribution,
        cluster=cluster,
    )


@dataclass(frozen=True)
class SetFacts:
    """What trust reads of one launch set (issue 31): its index fields, its summary and the kernel
    symbols it launched — from the store's columns, or from the decoded set where there are none."""

    nodeid: str
    backend: str
    params: str
    source: str
    n_calls: int
    kernel_names: tuple[str, ...]
    summary: LaunchSummary | None


def set_facts(ls: LaunchSet, summary: LaunchSummary | bool | None = False) -> SetFacts:
    """A decoded set's :class:`SetFacts` (``summary``: its summary when the caller has it)."""
    names: dict[str, None] = {}
    for c in ls.calls:
        for x in c.launches:
            if x.kind == "kernel":
                names.setdefault(x.name, None)
    summ = summarize_launch_set(ls) if summary is False or summary is True else summary
    return SetFacts(ls.nodeid, ls.backend, ls.params, ls.source, len(ls.calls), tuple(names), summ)


def config_facts(store: Any, params: str) -> list[SetFacts]:
    """One config's :class:`SetFacts`, store order: from the columns where the store has them for every
    set of the config (nothing decoded), else from one decode of its sets; the summaries are kept per
    config (:func:`config_summaries`)."""
    idx = store.indices_for_params(params)
    columns = [store.columns(i) for i in idx]
    if all(c is not None for c in columns):
        summaries = config_summaries(store, params, columns=columns)
        names = [c.kernel_names() for c in columns]
    else:
        sets = [store[i] for i in idx]
        summaries = config_summaries(store, params, sets)
        names = [set_facts(s, None).kernel_names for s in sets]
    out = []
    for i, nm in zip(idx, names, strict=True):
        e = store.entries[i]
        out.append(SetFacts(e.nodeid, e.backend, e.params, e.source, e.calls, nm, summaries[i]))
    return out


def _backend_key(name: str) -> str:
    # E names the Triton baseline after its log (``triton_tileir``); its records say ``triton``
    key = id_token(name).lower()
    return key[: -len("_tileir")] if key.endswith("_tileir") else key


def same_backend(a: str | None, b: str | None) -> bool:
    """Same backend across spellings: a ``triton_tileir`` log row ≙ ``triton`` launch records."""
    return a is not None and b is not None and _backend_key(a) == _backend_key(b)


def pick_sets(
    sets: Sequence[LaunchSet], row: RatioRow, candidate: str
) -> tuple[LaunchSet | None, LaunchSet | None]:
    """(candidate set, baseline set) for a row's params; candidate = the non-baseline backend.

    A per-config store (:class:`~cutile_workbench.artifacts.launch_store.LaunchStore`) decodes only this row's sets."""
    from cutile_workbench.artifacts.launch_store import LaunchStore

    candidates = sets.for_params(row.params) if isinstance(sets, LaunchStore) else sets
    same = [s for s in candidates if s.params == row.params and s.calls]
    base = next((s for s in same if same_backend(s.backend, row.baseline_backend)), None)
    cand = next((s for s in same if same_backend(s.backend, candidate)), None)
    if cand is None:
        others = [s for s in same if not same_backend(s.backend, row.baseline_backend)]
        cand = others[0] if len(others) == 1 else None
    return cand, base


def _pick_entries(store: Any, row: RatioRow, candidate: str) -> tuple[int | None, int | None]:
    """:func:`pick_sets`' rule on a store's index (entries with calls), decoding nothing."""
    same = [i for i in store.indices_for_params(row.params) if store.entries[i].calls]
    base = next((i for i in same if same_backend(store.entries[i].backend, row.baseline_backend)), None)
    cand = next((i for i in same if same_backend(store.entries[i].backend, candidate)), None)
    if cand is None:
        others = [i for i in same if not same_backend(store.entries[i].backend, row.baseline_backend)]
        cand = others[0] if len(others) == 1 else None
    return cand, base


_SUMMARY_CODE: list[str] = []


def _summary_code() -> str:
    if not _SUMMARY_CODE:
        import hashlib

        from cutile_workbench.artifacts.derive_cache import module_source

        h = hashlib.sha256(b"launch-summaries-config v1\0")
        for name in (
            "cutile_workbench.evidence.launches",
            "cutile_workbench.artifacts.launch_store",
            "cutile_workbench.artifacts.launches_io",
            "cutile_workbench.model",
        ):
            h.update(name.encode() + b"\0" + module_source(name))
        _SUMMARY_CODE.append(h.hexdigest())
    return _SUMMARY_CODE[0]


def config_summaries(
    store: Any, params: str, sets: Sequence[LaunchSet] | None = None, *, columns: Sequence[Any] | None = None
) -> dict[int, LaunchSummary | None]:
    """``{store position: summary}`` of one config's sets. From the store's columns where it has them
    for every set of the config (``columns``: the caller's copy of them): computed, not cached — a
    summary from columns costs less than decoding a cached one (issue 31, fourth wave: ~0.1 vs
    ~0.5 ms). Else from one decode (``sets``: already decoded by the caller), kept per content of the
    config's members (a re-run of one config re-summarises that config alone)."""
    idx = store.indices_for_params(params)
    cols = list(columns) if columns is not None else None
    if cols is None and sets is None:
        cols = [store.columns(i) for i in idx]
    if cols is not None and all(c is not None for c in cols):
        done: dict[str, dict[int, LaunchSummary | None]] = store.memo.setdefault("column_summaries", {})
        out = done.get(params)  # trust and F ask for the same config's summaries in one process
        if out is None:
            out = {}
            for i, c in zip(idx, cols, strict=True):
                e = store.entries[i]
                out[i] = summarize_columns(
                    c, backend=e.backend, params=e.params, source=e.source, nodeid=e.nodeid
                )
            done[params] = out
        return out

    def compute() -> dict[int, LaunchSummary | None]:
        decoded = list(sets) if sets is not None else [store[i] for i in idx]
        return {i: summarize_launch_set(s) for i, s in zip(idx, decoded, strict=True)}

    if store.data_path is None:  # a conversion kept in memory: nothing to key a file cache on
        return compute()
    digest = f"{_summary_code()}\0{store.member_digests().get(params, '')}"
    cache = summaries_cache(store)
    hit = cache.get(params, digest)
    if isinstance(hit, dict):
        return hit
    got = compute()
    cache.put(params, digest, got)  # written by the caller's flush (once per kernel, not per config)
    return got


def summaries_cache(store: Any) -> Any:
    """The per-config file of a store's launch summaries (:mod:`cutile_workbench.artifacts.config_cache`)."""
    from cutile_workbench.artifacts.config_cache import ConfigCache

    return ConfigCache.open("launch-summaries-config", str(store.source))


def store_summaries(store: Any) -> dict[int, LaunchSummary | None]:
    """:func:`summarize_launch_set` of every set of a per-config store, assembled from the per-config
    entries of :func:`config_summaries` (each decoded one config at a time, or not at all when trust
    already summarised it); kept on the store for the process."""
    memo: dict[int, LaunchSummary | None] | None = store.memo.get("summaries")
    if memo is not None:
        return memo
    memo = {}
    for params in store.params():
        memo.update(config_summaries(store, params))
    if store.data_path is not None:
        summaries_cache(store).flush()
    store.memo["summaries"] = memo
    return memo


def pick_summaries(
    sets: Sequence[LaunchSet], row: RatioRow, candidate: str
) -> tuple[LaunchSummary | None, LaunchSummary | None]:
    """``(summarize(candidate set), summarize(baseline set))`` of :func:`pick_sets`; a per-config store's
    summaries are computed once for all rows (F reads every row twice)."""
    from cutile_workbench.artifacts.launch_store import LaunchStore

    if isinstance(sets, LaunchStore):
        ci, bi = _pick_entries(sets, row, candidate)
        summaries = store_summaries(sets)
        return (summaries.get(ci) if ci is not None else None, summaries.get(bi) if bi is not None else None)
    cset, bset = pick_sets(sets, row, candidate)
    return (summarize_launch_set(cset) if cset else None, summarize_launch_set(bset) if bset else None)


def candidate_attribution(sets: Sequence[LaunchSet], row: RatioRow, candidate: str) -> Any:
    """The candidate's side of a row as something with ``.attribution`` (its summary on a per-config
    store: no decode of a set trust already summarised; else :func:`pick_sets`' set), None without one."""
    from cutile_workbench.artifacts.launch_store import LaunchStore

    if isinstance(sets, LaunchStore):
        cand, _base = pick_summaries(sets, row, candidate)
        if cand is not None:
            return cand
    return pick_sets(sets, row, candidate)[0]


def extra_launches(cand: LaunchSummary, base: LaunchSummary) -> list[str]:
    """Named extra launch classes of the candidate relative to the reference (e.g. 'fill x1')."""

    def classes(s: LaunchSummary) -> Counter[str]:
        c: Counter[str] = Counter()
        for g in s.groups:
            c[g.cls] += g.count
        return c

    cc, bc = classes(cand), classes(base)
    out: list[str] = []
    if is_native(cand.main_kernel) and not is_native(base.main_kernel):
        out.append(
            f"fallback (main kernel is `{short_kernel_name(cand.main_kernel)}`, not a {cand.backend} kernel)"
        )
    if cc["main"] > max(bc["main"], 1):
        out.append(f"canary (main kernel `{short_kernel_name(cand.main_kernel)}` x{cc['main']} per call)")
    for cls in sorted(k for k in cc if k != "main"):
        n = cc[cls] - bc.get(cls, 0)
        if n > 0:
            names = sorted({g.name for g in cand.groups if g.cls == cls})
            shown = ", ".join(short_kernel_name(x) for x in names[:2]) + (" …" if len(names) > 2 else "")
            out.append(f"{cls} x{n} (`{shown}`)")
    return out


@dataclass(frozen=True)
class SideLaunches:
    """One side's launch facts for one config, whatever the source."""

    backend: str
    launches_per_call: int | None
    main_kernel: str | None
    per_launch_us: float | None
    measured_sum_us: float | None
    summary: LaunchSummary | None = None  # captures only


@dataclass(frozen=True)
class LaunchEvidence:
    """The one source of launch evidence for one config (see the module docstring)."""

    params: str
    source: str  # "cupti" | "kineto" | "kernel_times" | "none"
    path: str  # evidence file it came from ("" for none)
    candidate: SideLaunches | None
    baseline: SideLaunches | None

    @property
    def has_counts(self) -> bool:
        return (
            self.candidate is not None
            and self.baseline is not None
            and self.candidate.launches_per_call is not None
            and self.baseline.launches_per_call is not None
        )

    @property
    def summaries(self) -> list[LaunchSummary]:
        """Capture summaries, reference first (empty unless the source is a capture)."""
        return [s.summary for s in (self.baseline, self.candidate) if s is not None and s.summary is not None]

    @property
    def describe(self) -> str:
        return {
            "cupti": "per-launch CUPTI capture",
            "kineto": "per-launch torch.profiler capture",
            "kernel_times": "the perf logs' kernel_times (one profiled call per config)",
            "none": "none",
        }.get(self.source, self.source)


def _side_from_record(backend: str, rec: PerfRecord | None) -> SideLaunches | None:
    fwd = rec.forward if rec is not None else None
    if fwd is None:
        return None
    main = max(fwd.kernel_times, key=lambda k: k.self_time_us) if fwd.kernel_times else None
    per = main.self_time_us / main.count if main is not None and main.count > 0 else None
    return SideLaunches(
        backend, fwd.launches_per_iter, (main.name if main else fwd.kernel_name), per, fwd.median_ms * 1000.0
    )


def launch_evidence(
    row: RatioRow,
    *,
    launch_sets: Sequence[LaunchSet],
    candidate_backend: str,
    candidate_record: PerfRecord | None,
    baseline_record: PerfRecord | None,
    launches_path: str,
    perf_log_path: str,
) -> LaunchEvidence:
    """The single launch-evidence source for ``row`` (captures, else kernel_times, else none)."""
    cs, bs = pick_summaries(launch_sets, row, candidate_backend)
    if cs is not None and bs is not None:

        def side(s: LaunchSummary) -> SideLaunches:
            return SideLaunches(
                s.backend, s.launches_per_call, s.main_kernel, s.main_per_launch_us, s.measured_sum_us, s
            )

        return LaunchEvidence(row.params, cs.source, launches_path, side(cs), side(bs))
    cand = _side_from_record(candidate_backend, candidate_record)
    base = _side_from_record(row.baseline_backend or "baseline", baseline_record)
    # without the records, the E row still carries the same kernel_times counts (no per-launch time)
    if cand is None and row.candidate_launches is not None:
        cand = SideLaunches(
            candidate_backend,
            row.candidate_launches,
            None,
            None,
            row.candidate_ms * 1000.0 if row.candidate_ms is not None else None,
        )
    if base is None and row.baseline_launches is not None:
        base = SideLaunches(
            row.baseline_backend or "baseline",
            row.baseline_launches,
            None,
            None,
            row.baseline_ms * 1000.0 if row.baseline_ms is not None else None,
        )
    if (
        cand is not None
        and base is not None
        and cand.launches_per_call is not None
        and base.launches_per_call is not None
    ):
        return LaunchEvidence(row.params, "kernel_times", perf_log_path, cand, base)
    return LaunchEvidence(row.params, "none", "", cand, base)
