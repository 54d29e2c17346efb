"""Parse a Python source file of the user's TileGym checkout with ``ast`` — never importing it.

Contract: ``parse_python_source(path, what)`` returns ``(source, tree)`` or raises ``InputError``
naming the file (and line for syntax errors); it never lets SyntaxError/ValueError/RecursionError
escape, whatever the bytes. :func:`walk_no_nested` and :func:`enclosing_function` are the two tree
walks the static checks share; :func:`call_name`, :func:`dotted_name` and :func:`display_path` the
small helpers of the checks (static_eval, wrapper_audit) and the evidence (search_space) — written
here once.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator
from pathlib import Path

from cutile_workbench.errors import InputError


def parse_python_source(path: Path, what: str) -> tuple[str, ast.Module]:
    """Read and parse ``path``; ``what`` names the file's role in errors ("test file", "wrapper")."""
    if not path.is_file():
        raise InputError(f"{what} not found", path=path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {what}: {exc}", path=path) from exc
    try:
        with warnings.catch_warnings():  # e.g. SyntaxWarning for odd literals: not ours to print
            warnings.simplefilter("ignore")
            tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise InputError(f"syntax error: {exc.msg}", path=path, line=exc.lineno) from exc
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, absurd nesting
        raise InputError(f"cannot parse: {type(exc).__name__}: {exc}", path=path) from exc
    return source, tree


def walk_no_nested(node: ast.AST) -> Iterator[ast.AST]:
    """Walk a function body without entering nested defs/lambdas (they run only when called)."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        sub = stack.pop()
        yield sub
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(sub))


def enclosing_function(tree: ast.Module, target: ast.AST) -> ast.FunctionDef | None:
    """The innermost function definition of ``tree`` that contains ``target``."""
    best: ast.FunctionDef | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(sub is target for sub in ast.walk(node)):
            if best is None or node.lineno >= best.lineno:
                best = node
    return best


def call_name(node: ast.Call) -> str:
    """The called name: ``f(…)`` → ``f``, ``a.b.f(…)`` → ``f``, anything else → ``""``."""
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def dotted_name(node: ast.AST) -> str | None:
    """``a.b.c`` → ``"a.b.c"`` for Name/Attribute chains, else None (``f().y``)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def display_path(path: Path) -> str:
    """A checkout file as TileGym names it (from its last ``src/`` on), else the path as given."""
    parts = Path(path).resolve().parts
    if "src" in parts:
        return "/".join(parts[len(parts) - 1 - parts[::-1].index("src") :])
    return str(path)
