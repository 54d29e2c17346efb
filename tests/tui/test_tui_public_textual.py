"""Issue #34: the TUI uses only Textual's public API (an AST scan of ``cutile_workbench/tui``).

Textual is pinned exactly (``textual==8.2.8``), but a private name (``textual._x`` modules,
``DataTable._row_locations``, an override of ``DataTable._render_cell``) is no contract: it changes
without notice and breaks on the next upgrade. The scan fails on:

- an import of a private Textual module (any dotted part starting with ``_``: ``textual._types``,
  ``textual.widgets._tabs``);
- inside a class deriving from a Textual class, ``self._x`` / ``cls._x`` or ``def _x`` where a
  Textual class of its MRO owns ``_x`` (defines it, or assigns ``self._x``): reading, writing or
  overriding Textual's private state;
- anywhere else, ``obj._x`` where Textual owns ``_x`` and no class of ours that is not a Textual
  subclass defines it (``Tabs._on_resize``).

Our own private names (``self._shown`` of RatioTable, a helper's ``_lock``) pass. Dunders pass.
No module is let through: :data:`DECLARED` is empty since the ``Tabs._on_resize`` patch
(``textual_fixes.py``) was removed in session 7 (the bug it hid needed the start-up pre-warm, which
is gone: tests/tui/test_tui_teardown_resize.py). A module added there must say why in its docstring.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pathlib
import textwrap
from functools import cache

import textual

import cutile_workbench.tui as tui_pkg

TUI = pathlib.Path(tui_pkg.__file__).parent
#: modules whose private use is their declared purpose (a work-around of a pinned Textual's bug)
DECLARED: frozenset[str] = frozenset()
TEXTUAL = pathlib.Path(textual.__file__).parent


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@cache
def _textual_private_names() -> frozenset[str]:
    """Every ``_x`` Textual's own source defines or reads (methods, attributes, module names)."""
    names: set[str] = set()
    for path in TEXTUAL.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                names.add(node.attr)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(node.name):
                names.add(node.name)
    return frozenset(names)


@cache
def _owned_by(cls: type) -> frozenset[str]:
    """The private names a Textual class owns: its ``__dict__`` and its ``self._x`` attributes."""
    names = {n for n in vars(cls) if _private(n)}
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return frozenset(names)
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
            and _private(node.attr)
        ):
            names.add(node.attr)
    return frozenset(names)


def _textual_owned(cls: type) -> frozenset[str]:
    out: set[str] = set()
    for base in cls.__mro__:
        if base.__module__.split(".")[0] in ("textual", "rich"):
            out |= _owned_by(base)
    return frozenset(out)


def _module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(TUI.parent.parent).with_suffix("")
    return ".".join(rel.parts)


def _is_textual_subclass(cls: object) -> bool:
    return isinstance(cls, type) and any(b.__module__.split(".")[0] == "textual" for b in cls.__mro__[1:])


def violations(paths: list[pathlib.Path]) -> list[str]:
    textual_names = _textual_private_names()
    parsed = {p: ast.parse(p.read_text(encoding="utf-8")) for p in paths}
    modules = {p: importlib.import_module(_module_name(p)) for p in paths}
    # private names our own (non-Textual) classes define: other objects' ``._x`` of these are ours
    ours: set[str] = set()
    textual_classes: dict[int, frozenset[str]] = {}  # id(ClassDef node) -> names Textual owns there
    for path, tree in parsed.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            cls = _lookup(modules[path], node)
            if cls is not None and _is_textual_subclass(cls):
                textual_classes[id(node)] = _textual_owned(cls)
                continue
            for sub in ast.walk(node):
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(sub.name):
                    ours.add(sub.name)
                elif isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store) and _private(sub.attr):
                    ours.add(sub.attr)
                elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and _private(sub.id):
                    ours.add(sub.id)
    found: list[str] = []
    for path, tree in parsed.items():
        rel = path.relative_to(TUI.parent.parent)
        inside = _enclosing_textual_class(tree, textual_classes)
        for node in ast.walk(tree):
            where = f"{rel}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                found += [f"{where} import {a.name}" for a in node.names if _private_module(a.name)]
            elif isinstance(node, ast.ImportFrom) and _private_module(node.module or ""):
                found.append(f"{where} from {node.module} import")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(node.name):
                owned = inside.get(id(node))
                if owned is not None and node.name in owned:
                    found.append(f"{where} overrides Textual's {node.name}")
            elif isinstance(node, ast.Attribute) and _private(node.attr):
                owned = inside.get(id(node))
                is_self = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
                if is_self and owned is not None:
                    if node.attr in owned:
                        found.append(f"{where} touches Textual's {node.attr}")
                elif node.attr in textual_names and node.attr not in ours:
                    found.append(f"{where} touches Textual's {node.attr}")
    return found


def _private_module(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "textual" and any(_private(p) for p in parts[1:])


def _lookup(module: object, node: ast.ClassDef) -> type | None:
    cls = getattr(module, node.name, None)
    return cls if isinstance(cls, type) else None


def _enclosing_textual_class(
    tree: ast.AST, textual_classes: dict[int, frozenset[str]]
) -> dict[int, frozenset[str]]:
    """id(node) -> the names Textual owns in the Textual subclass whose body holds ``node``
    (a method defined directly in the class body counts as inside it)."""
    out: dict[int, frozenset[str]] = {}
    for node in ast.walk(tree):
        owned = textual_classes.get(id(node))
        if owned is None:
            continue
        for sub in ast.walk(node):
            if sub is not node:
                out[id(sub)] = owned
    return out


def test_the_tui_uses_only_public_textual_api() -> None:
    """Before: ratio_table.py imported ``textual._two_way_dict``/``textual._types`` and wrote
    DataTable's ``_row_locations``, ``_data``, ``_new_rows``, ``_update_count``; report_preview.py
    read MarkdownFence's ``_content``/``_highlighted_code``."""
    paths = sorted(p for p in TUI.rglob("*.py") if p.name not in DECLARED)
    assert violations(paths) == []


def test_the_scan_sees_each_kind_of_private_use(tmp_path: pathlib.Path) -> None:
    """The scan is not blind: each kind of use, in a module of the package, is reported; our own
    private names on a Textual subclass and on a plain class are not."""
    probe = TUI / "_probe_private_scan.py"
    probe.write_text(
        textwrap.dedent(
            """
            from textual._two_way_dict import TwoWayDict
            from textual.widgets import DataTable, Tabs

            class Mine(DataTable):
                def _render_cell(self, *a):
                    return self._row_locations

                def _ours(self):
                    self._shown_here = 1
                    return self._shown_here

            class Plain:
                def __init__(self):
                    self._lock = None

            def patch():
                return Tabs._on_resize, Plain()._lock
            """
        ),
        encoding="utf-8",
    )
    try:
        found = violations([probe])
    finally:
        probe.unlink()
    text = "\n".join(found)
    assert "from textual._two_way_dict import" in text
    assert "overrides Textual's _render_cell" in text
    assert "touches Textual's _row_locations" in text
    assert "touches Textual's _on_resize" in text
    assert "_shown_here" not in text and "_ours" not in text and "_lock" not in text
