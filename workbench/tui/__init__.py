"""The Textual app: the only part of ``workbench`` that imports Textual.

Entry points: :func:`workbench.tui.app.run_app` (what ``cutile-workbench <kernel>`` calls) and
:func:`workbench.tui.app.make_app` (a factory with injected data sources, used by the tests,
snapshots and ``bench/tui_start.py``). Data arrives as an :class:`workbench.tui.data.AppData`.
"""
