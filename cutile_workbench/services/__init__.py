"""The stage layer: what both faces (the CLI in :mod:`cutile_workbench.cli`, the TUI in :mod:`cutile_workbench.tui`) call.

Every fact of a kernel dir comes from its :class:`~cutile_workbench.stages.session.kernel.KernelSession`
(:mod:`.session`: opened once per command, one per workspace; each input read once, each derived fact
computed once). Each module is one service with typed inputs and outputs; none parses arguments, prints, or
imports Textual, argparse or a face (``pyproject.toml``'s import-linter contracts and
``tests/unit/test_architecture.py`` enforce it):

- :mod:`.session` — open a kernel dir's session; the one config naming (``resolve_config``).
- :mod:`.process` — what a face does first, once per process (numpy's BLAS pool one thread).
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

The faces import nothing but this package, the model and the errors (the contracts allow no
exception): a value type or a pure helper of the core a face names is re-exported by the service it
belongs to, spelled ``from … import X as X``.

Errors are :class:`~cutile_workbench.errors.WorkbenchError` subclasses (the faces turn them into exit
codes or notifications); nothing here writes except the ``write`` functions, through
:mod:`cutile_workbench.artifacts.writer`.
"""
