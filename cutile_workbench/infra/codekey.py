"""The code a derived value depends on, as one key: the import closure of the modules that derive it.

Contract:
- :func:`import_closure` returns, sorted, every module of this package reachable from ``roots``
  through its import statements — at the top, inside functions (lazy imports) and under
  ``TYPE_CHECKING`` alike (conservative: a module too many only costs a recompute, one too few a
  stale value) — plus the ``__init__`` of every package on the way (it runs on import). Found
  statically (``ast``, on the files; nothing is imported). ``from pkg import name`` counts
  ``pkg.name`` when that is a module of the package, else ``pkg`` itself.
- :func:`code_key` is the SHA-256 of each module's name and source bytes in that closure: editing
  any module the value's code can reach is a different key (a cache miss), editing one it cannot
  reach is not. A module named but absent counts by its name and a marker, never raises.
- ``package_dir`` (default: this installed package) lets a test key a copy of the tree.
  Keys are memoized per process and ``package_dir`` (the source does not change under a running
  process); :func:`clear` forgets them.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable
from pathlib import Path

PACKAGE = __name__.split(".", 1)[0]
_HERE = Path(__file__).resolve().parents[1]
_KEYS: dict[tuple[str, tuple[str, ...]], str] = {}


def _file_of(name: str, package_dir: Path) -> Path | None:
    """The source file of module ``name`` of this package under ``package_dir`` (None if absent)."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = package_dir.joinpath(*parts[1:])
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _imports(name: str, path: Path, package_dir: Path) -> set[str]:
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return set()
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's package (the package itself for __init__)
                anchor = name.split(".")
                anchor = anchor if is_pkg else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)] if node.level > 1 else anchor
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if _file_of(sub, package_dir) is not None:
                    found.add(sub)
    return {m for m in found if m == PACKAGE or m.startswith(PACKAGE + ".")}


def import_closure(roots: Iterable[str], package_dir: Path | None = None) -> tuple[str, ...]:
    """Every package module ``roots`` can reach by import, the roots included (see the contract)."""
    pkg = package_dir or _HERE
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # parents' __init__ run first
        path = _file_of(name, pkg)
        if path is not None:
            todo.extend(_imports(name, path, pkg) - seen)
    return tuple(sorted(seen))


def code_key(roots: Iterable[str], package_dir: Path | None = None) -> str:
    """SHA-256 of the source of every module in :func:`import_closure` of ``roots``."""
    pkg = package_dir or _HERE
    memo = (str(pkg), tuple(sorted(set(roots))))
    if memo not in _KEYS:
        h = hashlib.sha256()
        for name in import_closure(memo[1], pkg):
            path = _file_of(name, pkg)
            try:
                data = path.read_bytes() if path is not None else b"\0absent"
            except OSError:
                data = b"\0unreadable"
            h.update(f"{name} {len(data)}\0".encode())
            h.update(data)
        _KEYS[memo] = h.hexdigest()
    return _KEYS[memo]


def clear() -> None:
    """Forget the memoized keys (a test that edits a tree between two keys)."""
    _KEYS.clear()
