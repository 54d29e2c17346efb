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
- Each module's file is read once and parsed for its imports at most once per process, whatever
  closures are asked: the names its import statements spell are memoized by the digest of its name
  and bytes. ``store`` (a JSON file in the user cache:
  :func:`cutile_workbench.artifacts.derive_cache.code_key_cached`) keeps those names across
  processes, keyed the same way, so a later process reads the bytes (the key needs them anyway) and
  parses only a module whose bytes it has not seen. Kept are the names as spelled; whether
  ``pkg.name`` of ``from pkg import name`` is a module is checked on the tree every time. A store
  that is absent, a link, too large or not of :data:`STORE_SCHEMA` is ignored (and rewritten).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path

PACKAGE = __name__.split(".", 1)[0]
_HERE = Path(__file__).resolve().parents[1]
_KEYS: dict[tuple[str, tuple[str, ...]], str] = {}
#: the store's schema: ``{"schema": …, "imports": {digest: [[module, …], [pkg.name, …]]}}``
STORE_SCHEMA = "cutile-workbench.codekey/1"
#: a store larger than this is ignored (the whole package's entries are ~100 KiB)
STORE_MAX_BYTES = 8 * 1024 * 1024
#: entries a store keeps beyond those of the modules this process keyed (old sources age out)
STORE_KEEP = 4096
#: (modules spelled as such, ``pkg.name`` spelled by ``from pkg import name``: counted only where a
#: module of the tree holds it)
Spelled = tuple[tuple[str, ...], tuple[str, ...]]
#: per process: digest of (module name, bytes) -> what its import statements spell
_SPELLED: dict[str, Spelled] = {}
#: per process: each module file's bytes (read once: the closure and the key both need them)
_BYTES: dict[Path, bytes | None] = {}
#: per process: each store read (path -> entries), and the digests this process added to it
_STORES: dict[str, dict[str, Spelled]] = {}
_ADDED: dict[str, set[str]] = {}


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


def _source(path: Path) -> bytes | None:
    if path not in _BYTES:
        try:
            _BYTES[path] = path.read_bytes()
        except OSError:
            _BYTES[path] = None
    return _BYTES[path]


def _spell(name: str, data: bytes, is_pkg: bool) -> Spelled:
    """What the import statements of ``data`` (module ``name``) spell, relative imports resolved."""
    try:
        tree = ast.parse(data, filename=name)
    except (SyntaxError, ValueError):
        return ((), ())
    modules: set[str] = set()
    members: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's package (the package itself for __init__)
                anchor = name.split(".")
                anchor = anchor if is_pkg else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)] if node.level > 1 else anchor
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            modules.add(base)
            members.update(f"{base}.{alias.name}" for alias in node.names)
    return tuple(sorted(modules)), tuple(sorted(members))


def _digest(name: str, path: Path, data: bytes) -> str:
    """What a module's spelled imports are memoized by: its name, whether it is a package, its bytes."""
    return hashlib.sha256(f"{name}\0{int(path.name == '__init__.py')}\0".encode() + data).hexdigest()


def _imports(name: str, path: Path, package_dir: Path, store: Path | None) -> set[str]:
    data = _source(path)
    if data is None:
        return set()
    is_pkg = path.name == "__init__.py"
    digest = _digest(name, path, data)
    spelled = _SPELLED.get(digest)
    if spelled is None and store is not None:
        spelled = _store(store).get(digest)
    if spelled is None:
        spelled = _spell(name, data, is_pkg)
        if store is not None:
            _store(store)[digest] = spelled
            _ADDED.setdefault(str(store), set()).add(digest)
    _SPELLED[digest] = spelled
    modules, members = spelled
    found = set(modules) | {m for m in members if _file_of(m, package_dir) is not None}
    return {m for m in found if m == PACKAGE or m.startswith(PACKAGE + ".")}


def _store(store: Path) -> dict[str, Spelled]:
    if str(store) not in _STORES:
        _STORES[str(store)] = _read_store(store)
    return _STORES[str(store)]


def _read_store(store: Path) -> dict[str, Spelled]:
    """The store's entries; {} for one that is absent, a link, not a regular file, too large or
    not of the schema (a bad entry is dropped alone)."""
    try:
        fd = os.open(store, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > STORE_MAX_BYTES:
            return {}
        data = os.read(fd, STORE_MAX_BYTES + 1)
        doc = json.loads(data)
    except (OSError, ValueError, RecursionError):
        return {}
    finally:
        os.close(fd)
    entries = doc.get("imports") if isinstance(doc, dict) and doc.get("schema") == STORE_SCHEMA else None
    out: dict[str, Spelled] = {}
    for digest, body in entries.items() if isinstance(entries, dict) else ():
        if (
            isinstance(body, list)
            and len(body) == 2
            and all(isinstance(part, list) and all(isinstance(n, str) for n in part) for part in body)
        ):
            out[digest] = (tuple(body[0]), tuple(body[1]))
    return out


def _save(store: Path, used: set[str]) -> None:
    """Write ``store`` when this process added entries to it: the entries of the modules it keyed,
    then the others read while within :data:`STORE_KEEP` (a store of an old source ages out)."""
    if not _ADDED.pop(str(store), None):
        return
    from cutile_workbench.infra.atomicio import atomic_write_bytes

    entries = _store(store)
    keep = {d: [list(entries[d][0]), list(entries[d][1])] for d in sorted(used) if d in entries}
    for d, (modules, members) in entries.items():
        if len(keep) >= len(used) + STORE_KEEP:
            break
        keep.setdefault(d, [list(modules), list(members)])
    body = json.dumps({"schema": STORE_SCHEMA, "imports": keep}, sort_keys=True, separators=(",", ":"))
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(store, body.encode(), None)
    except OSError:  # a store that cannot be written only costs a parse next time
        pass


def import_closure(
    roots: Iterable[str], package_dir: Path | None = None, *, store: Path | None = None
) -> tuple[str, ...]:
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
            todo.extend(_imports(name, path, pkg, store) - seen)
    return tuple(sorted(seen))


def code_key(roots: Iterable[str], package_dir: Path | None = None, *, store: Path | None = None) -> str:
    """SHA-256 of the source of every module in :func:`import_closure` of ``roots`` (``store``: the
    import names kept across processes, module contract)."""
    pkg = package_dir or _HERE
    memo = (str(pkg), tuple(sorted(set(roots))))
    if memo not in _KEYS:
        h = hashlib.sha256()
        used: set[str] = set()
        for name in import_closure(memo[1], pkg, store=store):
            path = _file_of(name, pkg)
            data = _source(path) if path is not None else b"\0absent"
            data = b"\0unreadable" if data is None else data
            if path is not None and store is not None:
                used.add(_digest(name, path, data))
            h.update(f"{name} {len(data)}\0".encode())
            h.update(data)
        if store is not None:
            _save(store, used)
        _KEYS[memo] = h.hexdigest()
    return _KEYS[memo]


def clear() -> None:
    """Forget what this process memoized (a test that edits a tree between two keys; a new process)."""
    _KEYS.clear()
    _SPELLED.clear()
    _BYTES.clear()
    _STORES.clear()
    _ADDED.clear()
