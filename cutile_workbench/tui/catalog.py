"""Every key binding of the workbench's Textual faces, from static imports (issue #34).

Contract: :func:`known_bindings` maps each ``Binding`` id declared by the app, its screens, modals,
widgets and the overview app (the apps' own from :mod:`cutile_workbench.tui.app_bindings`) to a :class:`~cutile_workbench.tui.keymap.BindingInfo`, whatever was
imported before (the modules are imported here, at the top). It is what the keymap validates a
user's file against: :mod:`cutile_workbench.tui.keymap` is a leaf that takes ``known`` from its
callers (the app, the overview, ``cutile-workbench keys``) and imports none of this.
:func:`describe_bindings` is the keymap's listing of them (``cutile-workbench keys``).
"""

from __future__ import annotations

from textual.binding import Binding
from textual.dom import DOMNode

import cutile_workbench.tui.modals
import cutile_workbench.tui.screens.checks
import cutile_workbench.tui.screens.history
import cutile_workbench.tui.screens.irdiff
import cutile_workbench.tui.screens.ratios
import cutile_workbench.tui.screens.report
import cutile_workbench.tui.screens.sharded
import cutile_workbench.tui.screens.timeline
import cutile_workbench.tui.widgets.audit_panel
import cutile_workbench.tui.widgets.checks_panel
import cutile_workbench.tui.widgets.history_view
import cutile_workbench.tui.widgets.ir_diff_view
import cutile_workbench.tui.widgets.launch_timeline
import cutile_workbench.tui.widgets.overview_table
import cutile_workbench.tui.widgets.ratio_chart
import cutile_workbench.tui.widgets.ratio_table
import cutile_workbench.tui.widgets.report_preview
import cutile_workbench.tui.widgets.severity_bar
import cutile_workbench.tui.widgets.shard_panel
from cutile_workbench.tui import keymap
from cutile_workbench.tui.app_bindings import APP_BINDINGS, OVERVIEW_BINDINGS
from cutile_workbench.tui.keymap import BindingInfo

#: the apps' own bindings, by the class that declares them (the apps import this module: no import back)
APP_OWNERS = (("WorkbenchApp", APP_BINDINGS), ("OverviewApp", OVERVIEW_BINDINGS))

#: the modules whose classes declare the bindings (imported above; named here so none is "unused")
MODULES = (
    cutile_workbench.tui.modals,
    cutile_workbench.tui.screens.checks,
    cutile_workbench.tui.screens.history,
    cutile_workbench.tui.screens.irdiff,
    cutile_workbench.tui.screens.ratios,
    cutile_workbench.tui.screens.report,
    cutile_workbench.tui.screens.sharded,
    cutile_workbench.tui.screens.timeline,
    cutile_workbench.tui.widgets.audit_panel,
    cutile_workbench.tui.widgets.checks_panel,
    cutile_workbench.tui.widgets.history_view,
    cutile_workbench.tui.widgets.ir_diff_view,
    cutile_workbench.tui.widgets.launch_timeline,
    cutile_workbench.tui.widgets.overview_table,
    cutile_workbench.tui.widgets.ratio_chart,
    cutile_workbench.tui.widgets.ratio_table,
    cutile_workbench.tui.widgets.report_preview,
    cutile_workbench.tui.widgets.severity_bar,
    cutile_workbench.tui.widgets.shard_panel,
)


def known_bindings() -> dict[str, BindingInfo]:
    """Binding id → where it is declared and its default keys, for every workbench class."""
    found: dict[str, BindingInfo] = {}
    for owner, bindings in APP_OWNERS:
        for b in bindings:
            if isinstance(b, Binding) and b.id:
                found.setdefault(b.id, BindingInfo(b.id, b.key, b.action, b.description, owner))
    stack: list[type] = [DOMNode]
    seen: set[type] = set()
    while stack:
        cls = stack.pop()
        if cls in seen:
            continue
        seen.add(cls)
        stack.extend(cls.__subclasses__())
        if not cls.__module__.startswith("cutile_workbench."):
            continue
        for b in cls.__dict__.get("BINDINGS", ()):
            if isinstance(b, Binding) and b.id:
                found.setdefault(b.id, BindingInfo(b.id, b.key, b.action, b.description, cls.__name__))
    return found


def describe_bindings() -> str:
    """Every binding id with its default keys, owner and description (a keymap file's vocabulary)."""
    return keymap.describe_bindings(known_bindings())
