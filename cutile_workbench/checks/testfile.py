"""Static view of a TileGym ``tests/ops/test_<kernel>.py``: test functions, parametrize, test ids.

Contract: parses with ``ast`` only (the test file is never imported, so no torch is needed).
:func:`load_test_module` raises :class:`~cutile_workbench.errors.InputError` naming the file (and line for
syntax errors). :meth:`TestModule.derive_nodeids` reproduces pytest's ids for a test function —
stacked decorators joined with ``-`` bottom-first, TileGym's ``pytest_make_parametrize_id`` rule
(``str(v).replace("-", "_")`` for primitives, ``repr`` for the rest) when the checkout's
``tests/conftest.py`` defines it, ``ids=`` lists and callables, ``pytest.param(id=...)`` and
pytest's duplicate-id suffixes — under explicit :class:`Assumptions`.
"""

from __future__ import annotations

import ast
import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cutile_workbench.checks.static_eval import Assumptions, Closure, Param, StaticEvaluator, Unresolvable
from cutile_workbench.errors import InputError
from cutile_workbench.pystatic.pysource import parse_python_source

#: argument names TileGym uses for the framework/backend axis (contract §3.4)
BACKEND_ARGNAMES: tuple[str, ...] = ("framework", "backend")


@dataclass(frozen=True)
class Parametrize:
    """One ``@pytest.mark.parametrize(argnames, argvalues, ids=...)`` decorator."""

    argnames: tuple[str, ...]
    values_node: ast.expr = field(compare=False, hash=False)
    ids_node: ast.expr | None = field(compare=False, hash=False)
    call: ast.Call = field(compare=False, hash=False)
    line: int = 0

    @property
    def is_backend_axis(self) -> bool:
        return len(self.argnames) == 1 and self.argnames[0] in BACKEND_ARGNAMES


@dataclass(frozen=True)
class DerivedCase:
    """One statically derived test case: its node id and the parametrize values behind it."""

    nodeid: str
    values: dict[str, Any] = field(compare=False, hash=False)


@dataclass(frozen=True)
class TestFunction:
    """A test function (or method) and its parametrize decorators in source (top-to-bottom) order."""

    __test__ = False  # not a pytest test class, despite the name

    cls: str | None
    name: str
    line: int
    parametrize: tuple[Parametrize, ...]
    node: ast.FunctionDef = field(compare=False, hash=False)
    class_node: ast.ClassDef | None = field(default=None, compare=False, hash=False)

    @property
    def qualname(self) -> str:
        return f"{self.cls}::{self.name}" if self.cls else self.name

    @property
    def backend_axis(self) -> Parametrize | None:
        """The framework/backend decorator (TileGym puts it at the bottom, so it is the first id token)."""
        for deco in reversed(self.parametrize):
            if deco.is_backend_axis:
                return deco
        return None

    @property
    def param_argnames(self) -> tuple[str, ...]:
        """Argument names in id order (bottom decorator first), backend axis excluded."""
        names: list[str] = []
        for deco in reversed(self.parametrize):
            if not deco.is_backend_axis:
                names.extend(deco.argnames)
        return tuple(names)


def _parametrize_of(deco: ast.expr) -> Parametrize | None:
    if not isinstance(deco, ast.Call):
        return None
    func = deco.func
    if not (isinstance(func, ast.Attribute) and func.attr == "parametrize"):
        return None
    args = list(deco.args)
    kw = {k.arg: k.value for k in deco.keywords if k.arg}
    names_node = args[0] if args else kw.get("argnames")
    values_node = args[1] if len(args) > 1 else kw.get("argvalues")
    if names_node is None or values_node is None:
        return None
    if isinstance(names_node, ast.Constant) and isinstance(names_node.value, str):
        argnames = tuple(n.strip() for n in names_node.value.split(",") if n.strip())
    elif isinstance(names_node, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in names_node.elts
    ):
        argnames = tuple(str(e.value) for e in names_node.elts if isinstance(e, ast.Constant))
    else:
        return None
    ids_node = args[3] if len(args) > 3 else kw.get("ids")
    return Parametrize(argnames, values_node, ids_node, deco, deco.lineno)


@dataclass
class TestModule:
    """A parsed test file plus the checkout-level id rule."""

    __test__ = False

    path: Path
    relpath: str  # as pytest prints it, relative to the TileGym root (e.g. tests/ops/test_bmm.py)
    source: str
    tree: ast.Module
    functions: list[TestFunction]
    tilegym_id_hook: bool  # tests/conftest.py defines pytest_make_parametrize_id

    def find(self, qualname: str) -> TestFunction:
        """``Class::func`` or ``func`` → the test function, or InputError listing what exists."""
        for fn in self.functions:
            if fn.qualname == qualname or (fn.cls is None and fn.name == qualname):
                return fn
        known = ", ".join(f.qualname for f in self.functions) or "none"
        raise InputError(f"no test '{qualname}' in this file (tests found: {known})", path=self.path)

    def perf_functions(self) -> list[TestFunction]:
        return [f for f in self.functions if f.name.startswith("test_perf")]

    def func_key(self, fn: TestFunction) -> str:
        return f"{self.relpath}::{fn.qualname}"

    # ------------------------------------------------------------------ evaluation
    def evaluator_for(self, fn: TestFunction, assumptions: Assumptions) -> StaticEvaluator:
        """Names visible to ``fn``'s decorators: module body, then its class body up to ``fn``."""
        ev = StaticEvaluator(assumptions)
        ev.run_body(self.tree.body, stop_at=fn.class_node or fn.node)
        if fn.class_node is not None:
            ev.run_body(fn.class_node.body, stop_at=fn.node)
        return ev

    def backend_values(self, fn: TestFunction, assumptions: Assumptions) -> list[str]:
        """The framework/backend values of ``fn`` under ``assumptions`` (raises Unresolvable)."""
        axis = fn.backend_axis
        if axis is None:
            return []
        ev = self.evaluator_for(fn, assumptions)
        try:
            values = ev.eval(axis.values_node)
        except RecursionError as exc:
            raise Unresolvable("expression nested too deeply", axis.line) from exc
        if not isinstance(values, (list, tuple)):
            raise Unresolvable("backend argvalues is not a list", axis.line)
        return [v.values[0] if isinstance(v, Param) and v.values else v for v in values]

    def derive_nodeids(self, fn: TestFunction, assumptions: Assumptions | None = None) -> list[str]:
        """pytest node ids of ``fn`` as collection would produce them (raises Unresolvable)."""
        return [case.nodeid for case in self.derive_cases(fn, assumptions)]

    def derive_cases(self, fn: TestFunction, assumptions: Assumptions | None = None) -> list[DerivedCase]:
        """Every parametrized case of ``fn``: node id plus the argument values behind it."""
        assumptions = assumptions or Assumptions()
        ev = self.evaluator_for(fn, assumptions)
        # pytest applies the bottom decorator first, and its ids come first in the joined id.
        try:
            per_decorator = [self._decorator_cases(deco, ev) for deco in reversed(fn.parametrize)]
        except RecursionError as exc:
            raise Unresolvable("expression nested too deeply", fn.line) from exc
        size = 1
        for part in per_decorator:
            size *= max(len(part), 1)
        if size > 1_000_000:
            raise Unresolvable(f"{size} parametrized cases: too many to derive", fn.line)
        base = f"{self.relpath}::{fn.qualname}"
        if not per_decorator:
            return [DerivedCase(base, {})]
        combos = list(itertools.product(*per_decorator))
        ids = _dedupe(["-".join(part[0] for part in combo) for combo in combos])
        cases: list[DerivedCase] = []
        for ident, combo in zip(ids, combos, strict=True):
            values: dict[str, Any] = {}
            for _, part_values in combo:
                values.update(part_values)
            cases.append(DerivedCase(f"{base}[{ident}]", values))
        return cases

    def _decorator_cases(self, deco: Parametrize, ev: StaticEvaluator) -> list[tuple[str, dict[str, Any]]]:
        values = ev.eval(deco.values_node)
        if not isinstance(values, (list, tuple)):
            raise Unresolvable("parametrize argvalues is not a list", deco.line)
        ids_value: Any = ev.eval(deco.ids_node) if deco.ids_node is not None else None
        ids: list[str] = []
        rows: list[dict[str, Any]] = []
        for index, item in enumerate(values):
            explicit = item.id if isinstance(item, Param) else None
            raw = item.values if isinstance(item, Param) else item
            try:
                if len(deco.argnames) == 1:
                    row = (raw[0],) if isinstance(item, Param) else (raw,)
                else:
                    row = tuple(raw)
            except (IndexError, TypeError) as exc:
                raise Unresolvable(f"case {index} is not a parameter set: {exc}", deco.line) from exc
            if len(row) != len(deco.argnames):
                raise Unresolvable(
                    f"case {index} has {len(row)} values for {len(deco.argnames)} names", deco.line
                )
            rows.append(dict(zip(deco.argnames, row, strict=True)))
            if explicit is not None:
                ids.append(str(explicit))
            elif (
                isinstance(ids_value, (list, tuple))
                and index < len(ids_value)
                and ids_value[index] is not None
            ):
                ids.append(str(ids_value[index]))
            else:
                idfn = ids_value if callable(ids_value) else None
                ids.append(
                    "-".join(self._idval(v, n, index, idfn) for v, n in zip(row, deco.argnames, strict=True))
                )
        # pytest makes one decorator's ids unique before combining decorators
        return list(zip(_dedupe(ids), rows, strict=True))

    def _idval(self, value: Any, argname: str, index: int, idfn: Any) -> str:
        if idfn is not None:
            result = idfn(value) if isinstance(idfn, Closure) else None
            if result is not None:
                return _idval_from_value(result) or f"{argname}{index}"
        if self.tilegym_id_hook:
            if isinstance(value, (int, float, str, bool, type(None))):
                return str(value).replace("-", "_")
            text = repr(value)
            if not (text.startswith("<") and " at 0x" in text):
                return text.replace("-", "_")
        return _idval_from_value(value) or f"{argname}{index}"


def _idval_from_value(value: Any) -> str | None:
    if isinstance(value, str):
        return value.encode("unicode_escape").decode("ascii")
    if value is None or isinstance(value, (float, int, bool, complex)):
        return str(value)
    return None


def _dedupe(ids: list[str]) -> list[str]:
    """pytest's suffixing of non-unique ids (``_pytest.python.IdMaker.make_unique_parameterset_ids``)."""
    if len(ids) == len(set(ids)):
        return ids
    counts = Counter(ids)
    suffixes: dict[str, int] = defaultdict(int)
    out = list(ids)
    for index, ident in enumerate(ids):
        if counts[ident] > 1:
            sep = "_" if ident and ident[-1].isdigit() else ""
            new = f"{ident}{sep}{suffixes[ident]}"
            while new in set(out):
                suffixes[ident] += 1
                new = f"{ident}{sep}{suffixes[ident]}"
            out[index] = new
            suffixes[ident] += 1
    return out


def load_test_module(path: Path, tilegym_root: Path | None = None) -> TestModule:
    """Parse ``path``; ``tilegym_root`` (default: two levels above ``tests/ops``) anchors ``relpath``."""
    path = Path(path)
    source, tree = parse_python_source(path, "test file")
    root = tilegym_root or _guess_root(path)
    try:
        relpath = path.resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        relpath = path.name
    functions: list[TestFunction] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef) and sub.name.startswith("test"):
                    functions.append(_function(sub, node))
        elif isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            functions.append(_function(node, None))
    hook = _conftest_has_id_hook(Path(root), path)
    return TestModule(path, relpath, source, tree, functions, hook)


def _function(node: ast.FunctionDef, cls: ast.ClassDef | None) -> TestFunction:
    decos = tuple(p for p in (_parametrize_of(d) for d in node.decorator_list) if p is not None)
    return TestFunction(cls.name if cls else None, node.name, node.lineno, decos, node, cls)


def _guess_root(path: Path) -> Path:
    for parent in path.resolve().parents:
        if parent.name == "tests":
            return parent.parent
    return path.resolve().parent


def _conftest_has_id_hook(root: Path, test_path: Path) -> bool:
    """True when a conftest between the root and the test defines ``pytest_make_parametrize_id``."""
    directory = test_path.resolve().parent
    root = root.resolve()
    while True:
        conftest = directory / "conftest.py"
        if conftest.is_file():
            try:
                tree = ast.parse(conftest.read_text(encoding="utf-8"))
            except (OSError, SyntaxError, UnicodeDecodeError):
                tree = None
            if tree is not None and any(
                isinstance(n, ast.FunctionDef) and n.name == "pytest_make_parametrize_id" for n in tree.body
            ):
                return True
        if directory == root or directory.parent == directory:
            return False
        directory = directory.parent
