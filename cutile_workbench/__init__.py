"""cutile-workbench: TileGym E (benchmark) and F (residual perf) stages, headless core + Textual app.

Design card (keep in sync with README.md "Architecture"), top to bottom; each layer imports only
the ones below it (import-linter contracts in ``pyproject.toml``, no cycles):
- ``cutile_workbench/cli/``: the headless CLI, one module per command group; nothing imports it.
- ``cutile_workbench/tui/``: the Textual app (App, screens, .tcss); the only part that imports Textual.
- ``cutile_workbench/services/``: the stage layer both faces call (E, F, runs, timeline, checks, IR diff).
- the core: ``errors`` / ``model`` (typed dataclasses), ``testids`` (TileGym id rules),
  ``workspace`` (artifact layout + gaps), ``analysis`` (analysis.json), ``perflog/`` (printer
  plugin, parser, sanitizer), ``stats`` (ratios, geomean, severity, bootstrap CIs), ``validators``
  (in-process twins of the skill's shell validators), ``report_e`` / ``report_f`` + ``writer``
  (guarded atomic writes), ``capture/`` (CUPTI engine, harness, clock check, self-check),
  ``history/`` (run provenance, SQLite store, import, regression statistics, comparability),
  ``runner`` (pytest child + JSON-lines events), ``scaleout/`` (shards over GPUs and SLURM array
  tasks, merge + provenance), ``ir/`` (lexer, canonicalizer, line diff, op graph + structural diff, audit, dumped-IR filing),
  ``diagnosis`` + ``f_inputs`` / ``f_render`` / ``f_evidence/`` (F procedure and its evidence),
  ``tilegym_checks/``.
- ``cutile_workbench/tui/widgets/``: reusable Textual widgets, fed models only (no file or GPU I/O).
- ``cutile_workbench/profiles/``: built-in kernel profiles (TileGym-convention perf suites) + recorded H200 sessions.
"""

__version__ = "0.1.0"
