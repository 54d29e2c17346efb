"""Agent E's Step 2: is ``test_perf`` wired for cutile-rs, and the one test edit the workbench may make.

Contract:
- :func:`collect_cutile_rs` runs ``python -m pytest <test>::<Class>::test_perf -k cutile_rs
  --collect-only -q`` in the TileGym environment and counts the cutile-rs cases.
- :func:`analyse_wiring` reads the test file with ``ast`` and classifies ``test_perf``'s backend
  axis: ``wired`` (cutile-rs listed), ``wired_conditional`` (listed behind
  ``is_backend_available("cutile-rs")`` — zero collected cases then mean the backend is
  unavailable, not a wiring gap), ``missing`` (with a :class:`WiringEdit`), ``no_style`` (neither
  the correctness test nor the wrapper's ``@register_impl`` spells cutile-rs: nothing to copy),
  ``no_backend_axis`` or ``unresolvable``.
- The edit inserts the cutile-rs literal, spelled exactly as the correctness test spells it
  (copied source span: ``"cutile-rs"`` vs ``'cutile_rs'``) — or, when the correctness test has no
  cutile-rs entry, as the wrapper ``src/tilegym/ops/cutile_rs/<kernel>.py`` registers itself
  (``@register_impl(..., backend="cutile-rs")``: the name TileGym's dispatch knows it by) — into
  the list test_perf's backend axis resolves to, using exact ``ast`` source spans; it is verified by re-parsing: only that axis
  gains one value, every other test, tolerance, shape and assertion is byte-for-byte unchanged.
- :func:`apply_wiring` is the only source edit the workbench makes: refuses if the file changed
  since the proposal, keeps a backup, writes atomically, re-collects to prove ≥ 1 cutile-rs case,
  and restores the original when it cannot.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from cutile_workbench.artifacts.testids import split_nodeid
from cutile_workbench.checks.childproc import CollectResult, run_child, tilegym_env
from cutile_workbench.checks.static_eval import Assumptions, Unresolvable
from cutile_workbench.checks.testfile import TestFunction, TestModule, load_test_module
from cutile_workbench.errors import InputError
from cutile_workbench.infra.atomicio import atomic_write_bytes
from cutile_workbench.proc.collect import parse_collect_output

CUTILE_RS_VALUES = ("cutile-rs", "cutile_rs")
WiringState = Literal["wired", "wired_conditional", "missing", "no_style", "no_backend_axis", "unresolvable"]


@dataclass(frozen=True)
class WiringEdit:
    """The minimal edit adding cutile-rs to one test_perf backend axis."""

    path: Path
    line: int  # 1-based line of the inserted literal
    literal: str  # the copied source spelling, e.g. "cutile-rs" with its quotes
    where: str  # human description of the edited list
    old_source: str
    new_source: str

    @property
    def old_sha256(self) -> str:
        return hashlib.sha256(self.old_source.encode("utf-8")).hexdigest()

    def diff(self, relpath: str | None = None) -> str:
        name = relpath or self.path.name
        return "".join(
            difflib.unified_diff(
                self.old_source.splitlines(keepends=True),
                self.new_source.splitlines(keepends=True),
                fromfile=f"a/{name}",
                tofile=f"b/{name}",
            )
        )


@dataclass(frozen=True)
class WiringStatus:
    """Static classification of one test_perf function's backend axis."""

    target: str  # tests/ops/test_x.py::Class::test_perf
    state: WiringState
    message: str
    values: tuple[str, ...] = ()  # backend values with every backend assumed available
    edit: WiringEdit | None = None
    line: int | None = None


# ---------------------------------------------------------------------------- source spans


def _line_starts(source: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(source):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def _offset(source: str, starts: list[int], line: int, col_bytes: int) -> int:
    """Absolute char offset of an ast (line, utf-8 byte column) position."""
    begin = starts[line - 1]
    end = starts[line] if line < len(starts) else len(source)
    text = source[begin:end]
    return begin + len(text.encode("utf-8")[:col_bytes].decode("utf-8", errors="ignore"))


def _span(source: str, starts: list[int], node: ast.AST) -> tuple[int, int]:
    return (
        _offset(source, starts, node.lineno, node.col_offset),  # type: ignore[attr-defined]
        _offset(source, starts, node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
    )


def _segment(source: str, starts: list[int], node: ast.AST) -> str:
    a, b = _span(source, starts, node)
    return source[a:b]


# ---------------------------------------------------------------------------- analysis


def _style_literal(module: TestModule, fn: TestFunction) -> ast.Constant | None:
    """The cutile-rs string literal the correctness side already uses (same class first)."""
    perf_nodes = [f.node for f in module.functions if f.name.startswith("test_perf")]

    def in_perf(node: ast.AST) -> bool:
        return any(node is sub for p in perf_nodes for sub in ast.walk(p))

    scopes: list[list[ast.stmt]] = []
    if fn.class_node is not None:
        scopes.append(fn.class_node.body)
    scopes.append(module.tree.body)
    # first pass: a list/tuple element (a backend list); second: any literal, e.g. the argument
    # of is_backend_available("cutile-rs") — TileGym spells both the same way
    for want_element in (True, False):
        for body in scopes:
            for stmt in body:
                for node in ast.walk(stmt):
                    if not isinstance(node, (ast.List, ast.Tuple)) and want_element:
                        continue
                    candidates = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
                    for elt in candidates:
                        if (
                            isinstance(elt, ast.Constant)
                            and elt.value in CUTILE_RS_VALUES
                            and not in_perf(elt)
                        ):
                            return elt
    return None


def wrapper_style(wrapper: Path) -> tuple[str, int] | None:
    """``(literal as spelled, line)`` of the ``backend=`` value of the wrapper's ``register_impl`` call
    for cutile-rs, or None (no file, unparsable, or no such registration)."""
    try:
        source = wrapper.read_text(encoding="utf-8")
        tree = ast.parse(source, filename=str(wrapper))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    starts = _line_starts(source)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name != "register_impl":
            continue
        for kw in node.keywords:
            if (
                kw.arg == "backend"
                and isinstance(kw.value, ast.Constant)
                and kw.value.value in CUTILE_RS_VALUES
            ):
                return _segment(source, starts, kw.value), kw.value.lineno
    return None


def _names_used_by_non_perf(module: TestModule, name: str) -> bool:
    for other in module.functions:
        if other.name.startswith("test_perf"):
            continue
        for deco in other.parametrize:
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(deco.values_node)):
                return True
    return False


def _definition(module: TestModule, fn: TestFunction, name: str) -> ast.Assign | None:
    """The last plain (unconditional) assignment of ``name`` visible to ``fn``'s decorators."""
    bodies: list[list[ast.stmt]] = []
    if fn.class_node is not None:
        bodies.append([s for s in fn.class_node.body if s.lineno < fn.node.lineno])
    bodies.append([s for s in module.tree.body if s.lineno < (fn.class_node or fn.node).lineno])
    for body in bodies:
        found = [
            s
            for s in body
            if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in s.targets)
        ]
        conditional = any(
            isinstance(s, (ast.If, ast.For, ast.While, ast.Try, ast.With))
            and any(
                isinstance(t, ast.Name) and t.id == name
                for sub in ast.walk(s)
                if isinstance(sub, (ast.Assign, ast.AugAssign))
                for t in (sub.targets if isinstance(sub, ast.Assign) else [sub.target])
            )
            for s in body
        )
        if found:
            return (
                None
                if conditional and not isinstance(found[-1].value, (ast.List, ast.Tuple, ast.BinOp))
                else found[-1]
            )
    return None


def _last_list_literal(node: ast.expr) -> ast.List | ast.Tuple | None:
    if isinstance(node, (ast.List, ast.Tuple)):
        return node
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _last_list_literal(node.right) or _last_list_literal(node.left)
    return None


def _insert_into_list(
    source: str, starts: list[int], lst: ast.List | ast.Tuple, literal: str
) -> tuple[str, int]:
    """Insert ``literal`` before a "pytorch" element, else at the end; returns (new source, line)."""
    elts = lst.elts
    list_start, list_end = _span(source, starts, lst)
    if not elts:
        close = source.rindex("]" if isinstance(lst, ast.List) else ")", list_start, list_end)
        return source[:close] + literal + source[close:], lst.end_lineno or lst.lineno
    multiline = any(e.lineno != lst.lineno for e in elts)
    pytorch = next(
        (i for i, e in enumerate(elts) if isinstance(e, ast.Constant) and e.value == "pytorch"), None
    )
    if pytorch is not None:
        target = elts[pytorch]
        at, _ = _span(source, starts, target)
        if multiline and (pytorch == 0 or elts[pytorch - 1].end_lineno != target.lineno):
            indent = " " * (at - starts[target.lineno - 1])
            return source[:at] + literal + ",\n" + indent + source[at:], target.lineno
        return source[:at] + literal + ", " + source[at:], target.lineno
    last = elts[-1]
    _, end = _span(source, starts, last)
    rest = source[end:list_end]
    stripped = rest.lstrip(" \t")
    has_comma = stripped.startswith(",")
    if multiline and last.lineno != lst.lineno:
        indent = " " * (_offset(source, starts, last.lineno, last.col_offset) - starts[last.lineno - 1])
        at = end + (len(rest) - len(stripped) + 1 if has_comma else 0)
        text = f"\n{indent}{literal}," if has_comma else f",\n{indent}{literal}"
        return source[:at] + text + source[at:], (last.end_lineno or last.lineno) + 1
    if has_comma:
        at = end + len(rest) - len(stripped) + 1
        return source[:at] + f" {literal}," + source[at:], last.lineno
    if isinstance(lst, ast.Tuple) and len(elts) == 1:
        return source[:end] + f", {literal}" + source[end:], last.lineno
    return source[:end] + f", {literal}" + source[end:], last.lineno


def analyse_wiring(module: TestModule, fn: TestFunction, *, wrapper: Path | None = None) -> WiringStatus:
    """Classify ``fn``'s backend axis and, when cutile-rs is missing, compute the edit.

    ``wrapper`` is the cutile-rs wrapper source: its ``@register_impl`` spelling is used when the
    correctness test has no cutile-rs entry to copy."""
    target = module.func_key(fn)
    axis = fn.backend_axis
    if axis is None:
        return WiringStatus(
            target, "no_backend_axis", "test_perf has no framework/backend parametrize", line=fn.line
        )
    everything = Assumptions(frozenset({"cutile", "cutile-rs", "triton", "pytorch", "tilecpp"}))
    without = Assumptions(frozenset({"cutile", "triton", "pytorch", "tilecpp"}))
    try:
        values = tuple(str(v) for v in module.backend_values(fn, everything))
        values_without = tuple(str(v) for v in module.backend_values(fn, without))
    except Unresolvable as exc:
        return WiringStatus(
            target,
            "unresolvable",
            f"backend list not statically known: {exc} (line {exc.line})",
            line=axis.line,
        )
    if any(v in CUTILE_RS_VALUES for v in values_without):
        return WiringStatus(
            target, "wired", "cutile-rs is in test_perf's backend list", values, line=axis.line
        )
    if any(v in CUTILE_RS_VALUES for v in values):
        return WiringStatus(
            target,
            "wired_conditional",
            'cutile-rs is listed behind is_backend_available("cutile-rs"): zero collected cases mean the '
            "backend is unavailable here (libcutile_kernels.so not built / cffi missing), not a wiring gap",
            values,
            line=axis.line,
        )
    style = _style_literal(module, fn)
    source_note = ""
    if style is not None:
        literal = _segment(module.source, _line_starts(module.source), style)
    else:
        registered = wrapper_style(wrapper) if wrapper is not None else None
        if registered is None:
            return WiringStatus(
                target,
                "no_style",
                "the correctness test has no cutile-rs backend either and no cutile-rs wrapper registers one "
                '(@register_impl(..., backend="cutile-rs")), so there is no string style to copy '
                "(Agent D's wiring is missing); the workbench will not invent one",
                values,
                line=axis.line,
            )
        literal, wrapper_line = registered
        source_note = (
            f" (spelled {literal} as the wrapper registers it: "
            f"src/tilegym/ops/cutile_rs/{wrapper.name if wrapper else '?'}:{wrapper_line}, "
            "@register_impl; the correctness test has no cutile-rs entry)"
        )
    try:
        edit = _propose(module, fn, literal)
    except Unresolvable as exc:
        return WiringStatus(target, "unresolvable", str(exc), values, line=axis.line)
    return WiringStatus(
        target,
        "missing",
        f"test_perf lacks cutile-rs; proposed edit: {edit.where}{source_note}",
        values,
        edit,
        axis.line,
    )


def _propose(module: TestModule, fn: TestFunction, literal: str) -> WiringEdit:
    source = module.source
    starts = _line_starts(source)
    axis = fn.backend_axis
    assert axis is not None
    node = axis.values_node
    lst: ast.List | ast.Tuple | None = None
    where = ""
    if isinstance(node, (ast.List, ast.Tuple)):
        lst, where = node, f"the backend list of @parametrize at line {axis.line}"
    elif isinstance(node, ast.Name) and not _names_used_by_non_perf(module, node.id):
        definition = _definition(module, fn, node.id)
        if definition is not None:
            lst = _last_list_literal(definition.value)
            where = f"`{node.id}` defined at line {definition.lineno}"
    if lst is not None:
        new_source, line = _insert_into_list(source, starts, lst, literal)
    else:
        # decorator-level edit: the name is shared with correctness tests or not a plain list
        a, b = _span(source, starts, node)
        new_source = source[:a] + f"{source[a:b]} + [{literal}]" + source[b:]
        line, where = (
            node.lineno,
            f"the @parametrize argument at line {axis.line} (`{source[a:b]}` + [{literal}])",
        )
    edit = WiringEdit(module.path, line, literal, where, source, new_source)
    _verify(module, fn, edit)
    return edit


def _verify(module: TestModule, fn: TestFunction, edit: WiringEdit) -> None:
    """Prove the edit only adds cutile-rs to this axis (raises Unresolvable otherwise)."""
    try:
        new_tree = ast.parse(edit.new_source)
    except SyntaxError as exc:
        raise Unresolvable(f"proposed edit does not parse: {exc.msg}", exc.lineno) from exc
    tmp = TestModule(module.path, module.relpath, edit.new_source, new_tree, [], module.tilegym_id_hook)
    from cutile_workbench.checks.testfile import _function  # same construction as load_test_module

    for node in new_tree.body:
        if isinstance(node, ast.ClassDef):
            tmp.functions += [
                _function(s, node)
                for s in node.body
                if isinstance(s, ast.FunctionDef) and s.name.startswith("test")
            ]
        elif isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            tmp.functions.append(_function(node, None))
    new_fn = tmp.find(fn.qualname)
    everything = Assumptions(frozenset({"cutile", "cutile-rs", "triton", "pytorch", "tilecpp"}))
    before = module.backend_values(fn, everything)
    after = tmp.backend_values(new_fn, everything)
    added = list(after)
    for v in before:
        if v in added:
            added.remove(v)
    if len(added) != 1 or added[0] not in CUTILE_RS_VALUES:
        raise Unresolvable(f"edit would change the backend list from {before} to {after}")
    # every function body, every correctness backend list and every other decorator must be unchanged
    old_funcs = {f.qualname: f for f in module.functions}
    if set(old_funcs) != {f.qualname for f in tmp.functions}:
        raise Unresolvable("edit would add or remove a test function")
    for new in tmp.functions:
        old = old_funcs[new.qualname]
        if [ast.dump(s) for s in old.node.body] != [ast.dump(s) for s in new.node.body]:
            raise Unresolvable(f"edit would change the body of {new.qualname}")
        if new.qualname == fn.qualname:
            continue
        if not old.name.startswith("test_perf"):
            if [ast.dump(d.call) for d in old.parametrize] != [ast.dump(d.call) for d in new.parametrize]:
                raise Unresolvable(f"edit would change a parametrize of {new.qualname}")
            if old.backend_axis is None:
                continue
            try:
                same = module.backend_values(old, everything) == tmp.backend_values(new, everything)
            except Unresolvable:
                # not statically known (e.g. built by a helper call): the decorator text is
                # unchanged (checked above) and the edited name is not used by it directly
                same = True
            if not same:
                raise Unresolvable(f"edit would change the backend list of {new.qualname}")
    for deco_old, deco_new in zip(fn.parametrize, new_fn.parametrize, strict=True):
        if not deco_old.is_backend_axis and ast.dump(deco_old.call) != ast.dump(deco_new.call):
            raise Unresolvable("edit would change a shape/dtype parametrize of test_perf")


# ---------------------------------------------------------------------------- collect + apply


def find_test_file(tilegym: Path, kernel: str) -> Path:
    """``tests/ops/**/test_<kernel>.py``; InputError listing similar names when unknown."""
    ops = Path(tilegym) / "tests" / "ops"
    hits = sorted(ops.rglob(f"test_{kernel}.py")) if ops.is_dir() else []
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise InputError(
            f"several test files for kernel '{kernel}': {', '.join(str(h) for h in hits)}", path=ops
        )
    known = sorted(p.stem[len("test_") :] for p in ops.rglob("test_*.py")) if ops.is_dir() else []
    close = difflib.get_close_matches(kernel, known, n=3)
    hint = f" (did you mean: {', '.join(close)}?)" if close else ""
    raise InputError(f"unknown kernel '{kernel}': no tests/ops/**/test_{kernel}.py{hint}", path=ops)


def perf_targets(module: TestModule) -> list[TestFunction]:
    """The ``test_perf`` functions (one per class) that E benchmarks."""
    return [f for f in module.functions if f.name == "test_perf"]


@dataclass(frozen=True)
class WiringCheck:
    """Collect-only counts plus the static classification, for every test_perf of one file."""

    test_path: Path
    relpath: str
    statuses: tuple[WiringStatus, ...]
    collect: CollectResult | None
    cutile_rs_cases: tuple[str, ...]

    @property
    def selected(self) -> int:
        return len(self.cutile_rs_cases)


def count_cutile_rs(collect: CollectResult) -> tuple[str, ...]:
    return tuple(n for n in collect.nodeids if split_nodeid(n)[1] == "cutile_rs")


def collect_cutile_rs(
    tilegym: Path,
    targets: list[str],
    *,
    python: str,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 300.0,
    cancelled: Callable[[], bool] | None = None,
) -> CollectResult:
    """``pytest <targets> -k cutile_rs --collect-only -q`` (several targets in one child)."""
    args = ["-m", "pytest", *targets, "-k", "cutile_rs", "--collect-only", "-q", "-p", "no:cacheprovider"]
    child = run_child(
        python,
        args,
        cwd=Path(tilegym),
        env=tilegym_env(Path(tilegym), env),
        timeout_s=timeout_s,
        cancelled=cancelled,
    )
    return CollectResult(tuple(parse_collect_output(child.stdout)), child)


def check_wiring(
    tilegym: Path,
    kernel: str,
    *,
    python: str,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 300.0,
    collect: bool = True,
    cancelled: Callable[[], bool] | None = None,
) -> WiringCheck:
    """Collect (unless ``collect`` is False) and classify every test_perf of the kernel's test file.

    ``cancelled`` is polled while the collect-only child runs; when it fires, ``collect.child.cancelled``
    is True and ``collect.ok`` False."""
    path = find_test_file(tilegym, kernel)
    module = load_test_module(path, tilegym)
    funcs = perf_targets(module)
    if not funcs:
        raise InputError("no test_perf function in the test file", path=path)
    wrapper = tilegym / "src" / "tilegym" / "ops" / "cutile_rs" / f"{kernel}.py"
    statuses = tuple(analyse_wiring(module, f, wrapper=wrapper) for f in funcs)
    result = None
    cases: tuple[str, ...] = ()
    if collect:
        result = collect_cutile_rs(
            tilegym,
            [s.target for s in statuses],
            python=python,
            env=env,
            timeout_s=timeout_s,
            cancelled=cancelled,
        )
        cases = count_cutile_rs(result)
    return WiringCheck(path, module.relpath, statuses, result, cases)


@dataclass(frozen=True)
class ApplyResult:
    """What :func:`apply_wiring` did."""

    applied: bool  # the edit is in place now
    reverted: bool  # it was written, then restored
    backup: Path | None
    selected: int  # cutile-rs cases collected after the edit
    message: str
    collect: CollectResult | None = None


def apply_wiring(
    edit: WiringEdit,
    tilegym: Path,
    targets: list[str],
    *,
    python: str,
    backup_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 300.0,
) -> ApplyResult:
    """Guarded edit: check unchanged, back up, write atomically, re-collect, revert unless ≥ 1 case."""
    path = Path(edit.path)
    try:
        current = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read test file: {exc}", path=path) from exc
    if hashlib.sha256(current.encode("utf-8")).hexdigest() != edit.old_sha256:
        raise InputError("test file changed since the edit was proposed; re-run the check", path=path)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    backup_root = (
        Path(backup_dir) if backup_dir else Path(tempfile.mkdtemp(prefix="cutile-workbench-wiring-"))
    )
    backup_root.mkdir(parents=True, exist_ok=True)
    backup = backup_root / f"{path.name}.{stamp}.orig"
    shutil.copy2(path, backup)
    _atomic_write(path, edit.new_source)
    result = collect_cutile_rs(tilegym, targets, python=python, env=env, timeout_s=timeout_s)
    cases = count_cutile_rs(result)
    if cases and result.ok:
        return ApplyResult(
            True, False, backup, len(cases), f"wired: {len(cases)} cutile-rs perf case(s) collected", result
        )
    _atomic_write(path, current)
    why = "; ".join(result.errors) or f"pytest exit {result.child.rc}, 0 cutile-rs cases"
    return ApplyResult(
        False,
        True,
        backup,
        len(cases),
        f"re-collect did not select a cutile-rs case ({why}); original restored",
        result,
    )


def _atomic_write(path: Path, text: str) -> None:
    """The TileGym test file, replaced atomically with its permission bits (written as given: no newline translation)."""
    atomic_write_bytes(path, text.encode("utf-8"), None, keep_mode=True)
