"""The Textual app: the only part of ``workbench`` that imports Textual.

Entry points: :func:`cutile_workbench.tui.app.run_app` (what ``cutile-workbench <kernel>`` calls) and
:func:`cutile_workbench.tui.app.make_app` (a factory with injected data sources, used by the tests,
snapshots and ``bench/tui_start.py``). Data arrives as an :class:`cutile_workbench.tui.data.AppData`.
"""
