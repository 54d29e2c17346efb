"""cutile-workbench: TileGym E (benchmark) and F (residual perf) stages, headless core + Textual app.

Design card (keep in sync with README.md "Architecture"):
- ``workbench/`` core modules import no Textual (``tests/test_architecture.py`` enforces it):
  ``errors`` / ``model`` (typed dataclasses), ``testids`` (TileGym id rules), ``workspace``
  (artifact layout + gaps), ``analysis`` (analysis.json), ``perflog/`` (printer plugin, parser,
  sanitizer), ``stats`` (ratios, geomean, severity, bootstrap CIs), ``validators`` (in-process
  twins of the skill's shell validators), ``report_e`` / ``report_f`` + ``writer`` (guarded atomic
  writes), ``capture/`` (CUPTI engine, harness), ``history/`` (run provenance, SQLite store,
  import, regression statistics, comparability), ``runner`` (pytest child + JSON-lines events),
  ``scaleout/`` (shards over GPUs and SLURM array tasks, merge + provenance),
  ``ir/`` (lexer, canonicalizer, diff, audit), ``diagnosis`` (F procedure), ``cli``.
- ``workbench/tui/`` is the only place that imports Textual (App, screens, .tcss).
- ``widgets/``: reusable Textual widgets, fed models only (no file or GPU I/O).
- ``profiles/``: built-in kernel profiles (TileGym-convention perf suites) + recorded H200 sessions.
"""

__version__ = "0.1.0"
