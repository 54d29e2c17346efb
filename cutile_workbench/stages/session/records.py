"""The perf records behind E's table, by row, with no log parsed when they are cached (issue 31 item 4).

Why: F's rules read each row's candidate and baseline records (forward stats, kernel times, samples);
a warm ``report f`` at 1,000 configs parsed both perf logs whole on every run for them (~1 CPU-s),
though E's table, the captures and trust were all cached.

Contract:
- :func:`row_records` ``(etable)`` gives :class:`RowRecords`: the candidate log's records by
  ``(func_key, params)`` (first kept: :func:`~cutile_workbench.evidence.identity.index_records`), the
  records E takes from each baseline log present (:func:`~cutile_workbench.stages.e.stats.baseline_records`;
  a log without one still named, with none) and the candidate records' frameworks in log order
  (first occurrences: what :func:`~cutile_workbench.artifacts.candidate.resolve_candidate_backend`
  reads).
- Kept by :func:`~cutile_workbench.artifacts.derive_cache.cached_derivation` (kind ``row_records``)
  keyed on E's table key (every log's bytes, analysis.json, E's code: ``ETable.key``) and the code of
  the modules that pick the records; a hit parses nothing. The records are kept without their
  ``raw`` JSON (a field outside equality; no F rule reads it; the history import parses the logs
  itself), so a cached record equals the parsed one.
- Size: ~7.8 MB per 1,000 configs (the samples dominate); past ~8,000 configs the file exceeds
  derive_cache's :data:`~cutile_workbench.artifacts.derive_cache.MAX_FILE_BYTES` and every load is a
  miss: the logs are parsed as before (slower, never a wrong value).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cutile_workbench.model import PerfRecord

if TYPE_CHECKING:
    from cutile_workbench.stages.e.e_table import ETable

#: the modules whose code picks the records (with their import closure: the parser, E's stats)
_MODULES = ["cutile_workbench.stages.session.records", "cutile_workbench.evidence.identity"]


@dataclass(frozen=True)
class RowRecords:
    """The records behind E's rows (see the module contract)."""

    candidate: dict[tuple[str, str], PerfRecord]
    baselines: dict[str, dict[tuple[str, str], PerfRecord]]
    frameworks: tuple[str, ...]  # the candidate records' frameworks, first occurrences in log order


def _slim(rec: PerfRecord) -> PerfRecord:
    return dataclasses.replace(rec, raw={}) if rec.raw else rec


def _derive(etable: ETable) -> RowRecords:
    from cutile_workbench.evidence.identity import index_records
    from cutile_workbench.stages.e.stats import baseline_records

    cand = etable.candidate
    in_order = tuple(dict.fromkeys(r.framework for r in cand.records))
    frameworks = set(in_order)
    return RowRecords(
        candidate={k: _slim(r) for k, r in index_records(cand).items()},
        baselines={
            name: {k: _slim(r) for k, r in baseline_records(name, log, frameworks).items()}
            for name, log in etable.baselines.items()
        },
        frameworks=in_order,
    )


def row_records(etable: ETable) -> RowRecords:
    """The records behind ``etable``'s rows, cached on its key (module contract)."""
    from cutile_workbench.artifacts.derive_cache import cached_derivation

    if not etable.key:  # a table built without a key (never cached): derive it here
        return _derive(etable)
    # the session keeps it (one per command): not kept again in derive_cache's memory
    return cached_derivation("row_records", [], etable.key, _MODULES, lambda: _derive(etable), remember=False)
