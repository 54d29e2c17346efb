"""What the ``history`` command and the TUI's history view read: per-config series with flags.

Contract of :func:`load_history`: every run in the store, oldest first, and per config (func key,
params, backend, phase) the series of its medians across runs, with, between each two consecutive
points, a :class:`~cutile_workbench.history.regress.ChangeFlag` (decided on the raw samples,
``inconclusive`` without them) and the :class:`~cutile_workbench.history.compat.Comparability` of the two
runs' conditions (a flag across a driver change is reported as such, not silently trusted).
``config`` selects one config by exact params or node id; an unknown one raises ``InputError``
(key ``--config``) with close matches, as ``timeline --config`` does.

:func:`open_history` is the "import when opened" step, read-only by default (issue 33 §2): the
kernel dir's store, when there is one, is read into memory (migrated there when older; nothing
under the out root changes) and the artifact tree is imported into that copy idempotently; the
recorded sessions shipped in the package are always read this way (also when
``--out-root``/``$CUTILE_KERNEL_OUT_ROOT`` or a link names them). ``persist=True`` (what records
runs: the runner, tests that append runs) opens the kernel dir's own store for writing (created on
first use) instead. A store that resolves outside the kernel's ``workbench/`` is refused
(:func:`cutile_workbench.artifacts.confine.confine_read`/``confine_write`` first, then the descriptor
walk of :meth:`HistoryStore.open`).
:func:`history_to_dict` / :func:`history_csv` are the ``--json`` / ``--csv`` forms.
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import io
import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.errors import InputError
from cutile_workbench.history.compat import Comparability, compare_provenance
from cutile_workbench.history.entries import ConfigResult
from cutile_workbench.history.importer import ImportReport, import_kernel_dir
from cutile_workbench.history.regress import (
    DEFAULT_POLICY,
    ChangeFlag,
    RegressionPolicy,
    compare_results,
    comparison_key,
    flag_from_json,
    flag_to_json,
)
from cutile_workbench.history.store import HISTORY_FILE, HistoryStore, StoredRun
from cutile_workbench.model import PerfLog

_BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float], *, min_span: float = 0.0) -> str:
    """One block character per value, scaled between the series' min and max (flat: all ``▄``).

    ``min_span`` widens a narrower range around its middle, so that noise smaller than it does
    not fill the eight levels (a 0.1 % wobble drawn ``▁▁█`` reads as a jump)."""
    if not values:
        return ""
    lo, hi = min(values), max(values)
    if hi <= lo:
        return _BARS[3] * len(values)
    if hi - lo < min_span:
        lo = (lo + hi - min_span) / 2
        hi = lo + min_span
    return "".join(_BARS[min(len(_BARS) - 1, int((v - lo) / (hi - lo) * len(_BARS)))] for v in values)


@dataclass(frozen=True)
class SeriesPoint:
    run_id: int
    run_key: str
    when: float
    result: ConfigResult


@dataclass(frozen=True)
class ConfigSeries:
    """One config's medians across runs; ``changes[i]`` / ``conditions[i]`` are points[i] → points[i+1]."""

    func_key: str
    params: str
    backend: str
    phase: str
    points: tuple[SeriesPoint, ...]
    changes: tuple[ChangeFlag, ...]
    conditions: tuple[Comparability, ...]

    @property
    def medians_ms(self) -> tuple[float, ...]:
        return tuple(p.result.median_ms for p in self.points)

    @property
    def trend(self) -> str:
        return sparkline(self.medians_ms)

    @property
    def latest(self) -> ChangeFlag | None:
        return self.changes[-1] if self.changes else None


@dataclass(frozen=True)
class KernelHistory:
    kernel: str
    store: str
    runs: tuple[StoredRun, ...]
    series: tuple[ConfigSeries, ...]
    policy: RegressionPolicy


def load_history(
    store: HistoryStore,
    kernel: str,
    *,
    config: str | None = None,
    backend: str | None = None,
    phase: str | None = "forward",
    policy: RegressionPolicy = DEFAULT_POLICY,
) -> KernelHistory:
    """The kernel's history (see module doc)."""
    runs = [r for r in store.runs() if r.kernel == kernel]
    order = {r.run_id: i for i, r in enumerate(runs)}
    by_id = {r.run_id: r for r in runs}
    rows = [(rid, c) for rid, c in store.configs(backend=backend, phase=phase) if rid in order]
    if config is not None:
        chosen = [(rid, c) for rid, c in rows if config in (c.params, c.nodeid)]
        if not chosen:
            known = sorted({c.params for _rid, c in rows})
            close = difflib.get_close_matches(config, known, n=6, cutoff=0.4)
            close += [k for k in known if config in k and k not in close][:6]
            raise InputError(
                f"unknown config {config!r}"
                + (f"; close matches: {', '.join(close)}" if close else "")
                + f" ({len(known)} configs in the history)",
                path=store.label,
                key="--config",
            )
        rows = chosen
    grouped: dict[tuple[str, str, str, str], list[SeriesPoint]] = {}
    for rid, c in rows:
        run = by_id[rid]
        grouped.setdefault(c.series_key, []).append(SeriesPoint(rid, run.run_key, run.when, c))
    ordered = []
    for skey, points in sorted(grouped.items()):
        points.sort(key=lambda p: order[p.run_id])
        ordered.append((skey, points, list(itertools.pairwise(points))))
    # each pair is decided once: cached in the store, keyed on both results, the policy and the code
    digests: dict[int, bytes] = {}
    keys = {
        id(pair): comparison_key(pair[0].result, pair[1].result, policy, digests=digests)
        for _k, _p, pairs in ordered
        for pair in pairs
    }
    cached = store.cached_comparisons(sorted(set(keys.values())))
    fresh: dict[str, str] = {}
    series = []
    for (func_key, params, be, ph), points, pairs in ordered:
        flags = []
        for pair in pairs:
            ckey = keys[id(pair)]
            flag = flag_from_json(cached[ckey]) if ckey in cached else None
            if flag is None:
                flag = compare_results(pair[0].result, pair[1].result, policy)
                fresh[ckey] = flag_to_json(flag)
            flags.append(flag)
        changes = tuple(flags)
        conds = tuple(
            compare_provenance(
                by_id[b.run_id].provenance,
                by_id[a.run_id].provenance,
                a_label="newer run",
                b_label="older run",
            )
            for a, b in pairs
        )
        series.append(ConfigSeries(func_key, params, be, ph, tuple(points), changes, conds))
    store.cache_comparisons(sorted(fresh.items()))
    return KernelHistory(kernel, store.label, tuple(runs), tuple(series), policy)


def open_history(
    paths: KernelPaths,
    *,
    source: Literal["recorded", "out_root"],
    variants: Sequence[str] = (),
    parsed: dict[str, PerfLog] | None = None,
    persist: bool = False,
) -> tuple[HistoryStore, ImportReport]:
    """Open the kernel's store and import its artifact tree into it (see module doc)."""
    from cutile_workbench.artifacts.confine import confine_read, confine_write, in_recorded_sessions

    notes: tuple[str, ...] = ()
    target = paths.workbench_dir / HISTORY_FILE
    # the recorded sessions are read-only however they are named (default, --out-root, env, a link to them)
    recorded = source == "recorded" or in_recorded_sessions(paths.root)
    if not recorded and paths.root.is_dir() and (target.exists() or target.is_symlink() or persist):
        # a link that takes the store (or SQLite's side files) out is refused with where it goes
        check = confine_write if persist else confine_read
        for p in (target, *(target.with_name(HISTORY_FILE + s) for s in ("-journal", "-wal", "-shm"))):
            check(paths.root, p)
    writable = (
        persist
        and not recorded
        and paths.root.is_dir()
        and os.access(paths.workbench_dir if paths.workbench_dir.is_dir() else paths.root, os.W_OK)
    )
    created = False
    if writable:
        created = not (target.exists() or target.is_symlink())
        try:
            store = HistoryStore.open(target, root=paths.root)
        except BaseException:
            if created:
                _remove_created_store(target)
            raise
    elif not recorded and (target.exists() or target.is_symlink()):
        store = HistoryStore.open(target, read_only=True, root=paths.root)  # a copy in memory
        store.path = None  # nothing is persisted
    else:
        store = HistoryStore.in_memory()
        if recorded or persist:
            why = "a recorded session shipped with cutile-workbench" if recorded else "not writable"
            notes = (f"{paths.root}: {why}; its history is imported into memory, nothing is written",)
    try:
        report = import_kernel_dir(store, paths, variants=variants, parsed=parsed)
    except BaseException:
        store.close()
        if created:  # a refused import leaves no trace: the store this call created goes again
            _remove_created_store(target)
        raise
    return store, ImportReport(report.added, report.known, report.skipped, report.notes + notes)


def _remove_created_store(target: Path) -> None:
    """Remove a store file (and SQLite's side files) this call created, when opening or importing failed."""
    for p in (target, *(target.with_name(HISTORY_FILE + s) for s in ("-journal", "-wal", "-shm"))):
        with contextlib.suppress(OSError):
            if p.is_file() and not p.is_symlink():
                p.unlink()


# --------------------------------------------------------------------------- --json / --csv


def _flag_dict(flag: ChangeFlag, cond: Comparability) -> dict[str, Any]:
    return {
        "change": flag.change,
        "ratio": flag.ratio,
        "ci": list(flag.ci) if flag.ci else None,
        "p_value": flag.test.p_value if flag.test else None,
        "test": flag.test.method_text if flag.test else None,
        "reason": flag.reason,
        "notes": list(flag.notes),
        "conditions": {
            "comparable": cond.comparable,
            "differences": [d.text for d in cond.differences],
            "unknown": list(cond.unknown),
        },
    }


def history_to_dict(history: KernelHistory) -> dict[str, Any]:
    """The ``--json`` document: runs with provenance, series with medians, trend and flags."""
    return {
        "kernel": history.kernel,
        "store": history.store,
        "policy": {
            "alpha": history.policy.alpha,
            "min_effect": history.policy.min_effect,
            "ci_level": history.policy.ci_level,
            "n_boot": history.policy.n_boot,
            "seed": history.policy.seed,
        },
        "runs": [
            {
                "run_key": r.run_key,
                "when": r.when,
                "recorded_at": r.recorded_at,
                "recorded_at_origin": r.recorded_at_origin,
                "roles": list(r.roles),
                "source": r.source,
                "configs": r.n_configs,
                "notes": list(r.notes),
                "provenance": r.provenance.to_dict(),
            }
            for r in history.runs
        ],
        "series": [
            {
                "func_key": s.func_key,
                "params": s.params,
                "backend": s.backend,
                "phase": s.phase,
                "trend": s.trend,
                "points": [
                    {
                        "run_key": p.run_key,
                        "when": p.when,
                        "median_ms": p.result.median_ms,
                        "n_samples": len(p.result.samples_ms) if p.result.samples_ms else 0,
                        "launches_per_call": p.result.launches_per_call,
                        "kernel_name": p.result.kernel_name,
                        "capture_source": p.result.capture_source,
                    }
                    for p in s.points
                ],
                "changes": [_flag_dict(f, c) for f, c in zip(s.changes, s.conditions, strict=True)],
            }
            for s in history.series
        ],
    }


def history_csv(history: KernelHistory) -> str:
    """The ``--csv`` table: one row per (config, run) with the change from the previous run."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(
        [
            "func_key",
            "params",
            "backend",
            "phase",
            "run_key",
            "when",
            "median_ms",
            "n_samples",
            "launches_per_call",
            "change",
            "ratio",
            "ci_low",
            "ci_high",
            "p_value",
            "comparable",
            "differences",
        ]
    )
    for s in history.series:
        for i, p in enumerate(s.points):
            flag = s.changes[i - 1] if i else None
            cond = s.conditions[i - 1] if i else None
            w.writerow(
                [
                    s.func_key,
                    s.params,
                    s.backend,
                    s.phase,
                    p.run_key,
                    f"{p.when:.3f}",
                    repr(p.result.median_ms),
                    len(p.result.samples_ms) if p.result.samples_ms else 0,
                    p.result.launches_per_call if p.result.launches_per_call is not None else "",
                    flag.change if flag else "",
                    f"{flag.ratio:.6f}" if flag else "",
                    f"{flag.ci[0]:.6f}" if flag and flag.ci else "",
                    f"{flag.ci[1]:.6f}" if flag and flag.ci else "",
                    f"{flag.test.p_value:.3g}" if flag and flag.test else "",
                    "" if cond is None else int(cond.comparable),
                    "; ".join(d.text for d in cond.differences) if cond else "",
                ]
            )
    return buf.getvalue()
