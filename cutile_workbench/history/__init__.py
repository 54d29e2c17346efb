"""Run history: provenance per run, a SQLite store, import of artifact trees, regression statistics.

Modules (all core: no Textual, no torch at import time):
- provenance lives in :mod:`cutile_workbench.history.provenance` (its own core package, so the pytest plugin can
  emit it without importing the history store): the :class:`~cutile_workbench.history.provenance.Provenance` of a
  run, ``emit_provenance``, merging a run's ``provenance`` events; ``cutile_workbench.history.provenance.gpu``:
  NVML facts (lazy ``pynvml``): identity, clocks, decoded clock-event/throttle reasons.
- ``entries``: :class:`~cutile_workbench.history.entries.RunEntry` (one measured pytest session of one
  log) built from a parsed perf log, keyed on a content hash.
- ``store``: ``<kernel>/workbench/history.sqlite`` with versioned migrations, atomic writes and
  readers that refuse a corrupt/locked/newer file with an ``InputError`` naming it.
- ``importer``: artifact trees (recorded sessions, TileGym out roots) → history entries, idempotently.
- ``regress``: Mann-Whitney U + bootstrap CI of the median ratio → regression/improvement/same/
  inconclusive between consecutive runs.
- ``compat``: candidate-vs-baseline (or run-vs-run) comparability from two provenances, and the
  performance.md section that states it.
- ``query``: what the ``history`` command and the TUI view read (per-config series, trends, flags).
- ``record``: the runner's entry point (``write_results`` appends one entry per run).
"""
