"""The stage layer: what both faces (the CLI in :mod:`cutile_workbench.cli`, the TUI in :mod:`cutile_workbench.tui`) call.

Each module is one service with typed inputs and outputs; none parses arguments, prints, or
imports Textual, argparse or a face (``pyproject.toml``'s import-linter contracts and
``tests/unit/test_architecture.py`` enforce it):

- :mod:`.stage_e` — E: open the workspace, build the ratio table, plan the report set, write it.
- :mod:`.stage_f` — F: collect the evidence, diagnose, plan the reports, write them.
- :mod:`.runs` — the live runner: which suite a kernel runs (TileGym or a built-in profile,
  resolved the same way everywhere), one ``RunSpec`` per backend, the GPU probe, re-runs of
  chosen configs.
- :mod:`.timeline` — per-launch captures of one config: where they are, roles, summaries.
- :mod:`.checks` — the TileGym-side checks (precondition, wiring, ``-k`` selection, wrapper
  audit) and the rows of the TUI's Checks screen.
- :mod:`.ir_diff` — reference vs generated Tile IR: pairs, canonical diff, ``diff_ir.sh`` audit.
- :mod:`.history` — the run history (open, import, per-config series with regression flags) and
  the comparability of E's ratios (were candidate and baselines measured under the same
  conditions); the faces read :mod:`cutile_workbench.history` only through it.

Errors are :class:`~cutile_workbench.errors.WorkbenchError` subclasses (the faces turn them into exit
codes or notifications); nothing here writes except the ``write`` functions, through
:mod:`cutile_workbench.artifacts.writer`.
"""
