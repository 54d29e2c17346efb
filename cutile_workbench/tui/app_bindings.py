"""The key bindings of the two Textual apps (the kernel app and the out root's overview), as data.

Contract: :data:`APP_BINDINGS` is ``WorkbenchApp.BINDINGS`` and :data:`OVERVIEW_BINDINGS` is
``OverviewApp.BINDINGS``. They live here, apart from the apps, so that
:mod:`cutile_workbench.tui.catalog` can list every binding id without importing the apps (which
import the catalog to validate a user's keymap: no cycle). Each binding carries an ``id``.
"""

from __future__ import annotations

from textual.binding import Binding, BindingType

APP_BINDINGS: list[BindingType] = [
    Binding("ctrl+q", "quit", "Quit", priority=True, tooltip="Quit from anywhere", id="app-quit"),
    Binding("f1", "help", "Help", tooltip="Keys and purpose of this screen", id="app-help"),
    Binding(
        "question_mark", "help", "Help", show=False, tooltip="Keys of this screen", id="app-help-question"
    ),
    Binding(
        "q", "quit_asking", "Quit", show=False, tooltip="Quit (asks while a GPU run is live)", id="app-q"
    ),
    Binding(
        "i",
        "info",
        "Info",
        show=False,
        tooltip="The whole header: session, GPU, out root, comparability of the ratios",
        id="app-info",
    ),
    # 1-6 share one footer entry ("1-6 Screens"); each still has its own id for keymaps.
    Binding(
        "1",
        "mode('ratios')",
        "Screens",
        key_display="1-6",
        tooltip="1 Ratios · 2 Timeline · 3 IR diff · 4 Report · 5 Checks · 6 History",
        id="app-ratios",
    ),
    Binding("2", "mode('timeline')", "Timeline", show=False, tooltip="Launch timeline", id="app-timeline"),
    Binding(
        "3", "mode('irdiff')", "IR diff", show=False, tooltip="Reference vs generated IR", id="app-irdiff"
    ),
    Binding(
        "4", "mode('report')", "Report", show=False, tooltip="Plan and write E/F reports", id="app-report"
    ),
    Binding(
        "5",
        "mode('checks')",
        "Checks",
        show=False,
        tooltip="TileGym checks: import, wiring, -k, audit",
        id="app-checks",
    ),
    Binding(
        "6",
        "mode('history')",
        "History",
        show=False,
        tooltip="Run history of the selected config",
        id="app-history",
    ),
    Binding(
        "escape",
        "go_back",
        "Back",
        tooltip="Back one level: the screen this one was reached from; on the first, the overview",
        id="app-back",
    ),
]

OVERVIEW_BINDINGS: list[BindingType] = [
    Binding("ctrl+q,q", "quit_overview", "Quit", id="overview-quit"),
    Binding("f1", "help", "Help", tooltip="Keys of the overview", id="overview-help"),
    Binding(
        "question_mark",
        "help",
        "Help",
        show=False,
        tooltip="Keys of the overview",
        id="overview-help-question",
    ),
    Binding(
        "enter",
        "open_kernel",
        "Open",
        tooltip="Open the kernel's Ratios screen (Escape there returns)",
        id="overview-open",
    ),
    Binding("s", "cycle_sort", "Sort", tooltip="geomean → kernel → severity → last run", id="overview-sort"),
    Binding("slash", "filter", "Filter", key_display="/", id="overview-filter"),
    Binding("escape", "clear_filter", "Clear filter", show=False, id="overview-clear-filter"),
    Binding("r", "reload", "Reload", tooltip="Read the out root again", id="overview-reload"),
]
