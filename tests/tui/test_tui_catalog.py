"""Issue #34 item 4 (second wave): the keymap is a leaf; the catalog names every binding.

- ``tui/keymap.py`` imports no part of the TUI (no app, screen, widget, modal; no importlib walk)
  and no core module directly (its file read goes through a service): its callers hand it the
  binding ids (``known``), which ``tui/catalog.py`` lists from static imports.
- In a fresh interpreter (nothing imported before) the catalog knows the keys of every screen,
  the modals and the overview — the old walk knew only what happened to be imported.

The first test failed before (keymap imported ``cutile_workbench.tui.screens``/``widgets`` through
importlib and ``artifacts.confine``); the second before there was a catalog.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import cutile_workbench.tui.keymap as keymap_module


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_the_keymap_is_a_leaf() -> None:
    names = _imports(Path(keymap_module.__file__))
    ours = sorted(
        n for n in names if n.startswith("cutile_workbench.") and not n.startswith("cutile_workbench.errors")
    )
    tui = [n for n in ours if n.startswith("cutile_workbench.tui")]
    core = [n for n in ours if not n.startswith(("cutile_workbench.services", "cutile_workbench.tui"))]
    assert tui == [] and core == [] and "importlib" not in names, (tui, core)


def test_the_catalog_knows_every_screens_keys_in_a_fresh_process() -> None:
    code = (
        "from cutile_workbench.tui.catalog import known_bindings\nprint(' '.join(sorted(known_bindings())))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    ids = set(out.split())
    for wanted in (
        "app-quit",
        "app-back",
        "ratios-filter",
        "ratios-sort",
        "timeline-live",
        "timeline-pan-left",
        "irdiff-pair",
        "irdiff-next-match",
        "report-write",
        "checks-cancel",
        "sharded-start",
        "help-close",
        "confirm-yes",
        "overview-quit",
    ):
        assert wanted in ids, (wanted, sorted(ids))


def test_load_keymap_takes_the_ids_from_its_caller(tmp_path: Path) -> None:
    from cutile_workbench.tui.catalog import known_bindings

    path = tmp_path / "keymap.toml"  # SYNTHETIC keymap file
    path.write_text('[keymap]\napp-help = "f2"\nno-such-id = "f3"\n', encoding="utf-8")
    loaded = keymap_module.load_keymap(path, environ={}, known=known_bindings())
    assert loaded.bindings == {"app-help": "f2"}
    assert [p.key for p in loaded.problems] == ["no-such-id"]
