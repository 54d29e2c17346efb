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
  process), each module's imports per its source bytes (one ``ast`` parse per module and process,
  whatever the number of keys); :func:`clear` forgets them.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Iterable
from pathlib import Path

PACKAGE = __name__.split(".", 1)[0]
_HERE = Path(__file__).resolve().parents[1]
_KEYS: dict[tuple[str, tuple[str, ...]], str] = {}
_PARSED: dict[tuple[str, str, bytes], frozenset[str]] = {}


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
        data = path.read_bytes()
    except OSError:
        return set()
    # one parse per module source per process: the keys of E's table, trust and each derived value
    # share most of their closures (three closures a fresh `table` parsed ~290 modules)
    memo = (name, str(package_dir), hashlib.sha256(data).digest())
    hit = _PARSED.get(memo)
    if hit is None:
        hit = _PARSED[memo] = frozenset(_scan_imports(name, data, path, package_dir))
    return set(hit)


# every `from X import names` / `import names` anywhere in the text (strings and comments too: a
# module too many only costs a recompute); names run to the end of the line, over `\` continuations,
# or to the closing parenthesis
_FROM = re.compile(rb"\bfrom[ \t]+(\.*)[ \t]*([\w.]*)[ \t]+import[ \t]*(\([^)]*\)?|(?:[^\n]*\\\r?\n)*[^\n]*)")
_IMPORT = re.compile(rb"\bimport[ \t]+((?:[^\n]*\\\r?\n)*[^\n]*)")
_NAME = re.compile(rb"[A-Za-z_][\w.]*")


def _scan_imports(name: str, data: bytes, path: Path, package_dir: Path) -> set[str]:
    """:func:`_parse_imports`' modules without a parse: a regex over the source, a superset of the
    parser's (``tests/unit/test_cost_fresh.py`` checks it on every module of the package); ~50x
    cheaper than ``ast.parse`` + ``ast.walk``."""
    if PACKAGE.encode() not in data and b"from ." not in data:
        return set()  # no import of this package (absolute or relative) can be in it
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for m in _IMPORT.finditer(data):
        for word in _NAME.findall(m.group(1)):
            found.add(word.decode())  # `as` aliases and stray words fall outside the package
    for m in _FROM.finditer(data):
        level = len(m.group(1))
        module = m.group(2).decode()
        if level:
            anchor = name.split(".")
            anchor = anchor if is_pkg else anchor[:-1]
            anchor = anchor[: len(anchor) - (level - 1)] if level > 1 else anchor
            base = ".".join(anchor + ([module] if module else []))
        else:
            base = module
        if not base:
            continue
        found.add(base)
        for word in _NAME.findall(m.group(3)):
            sub = f"{base}.{word.decode()}"
            if _file_of(sub, package_dir) is not None:
                found.add(sub)
    return {m for m in found if m == PACKAGE or m.startswith(PACKAGE + ".")}


def _parse_imports(name: str, data: bytes, path: Path, package_dir: Path) -> set[str]:
    try:
        tree = ast.parse(data, filename=str(path))
    except (SyntaxError, ValueError):
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
    _PARSED.clear()
