"""Per-config derived facts of one kernel: one file per (kind, kernel dir) in the user cache dir.

Why (issue 31): a 1,000-config session derives 1,000 configs' facts (identity, launch summaries); one
cache file each would cost a file write (and its fsync) per config and overflow
:mod:`cutile_workbench.artifacts.derive_cache`'s bounded file count per kind. Here the facts of every
config of one kernel live in one map, each entry keyed on that config's params and checked against
the digest of that config's own inputs, so a re-run of one config recomputes that entry alone and
writes the one file once.

Contract:
- :class:`ConfigCache` ``(kind, owner)``: ``owner`` names the kernel dir (its text is hashed into the
  file name). :meth:`get` ``(params, digest)`` gives the stored value when the entry of ``params`` was
  stored under the same ``digest`` (the caller's key of that config's inputs and deriving code), else
  None; :meth:`put` replaces the entry of ``params``; :meth:`flush` writes the map when it changed.
  One entry per params: the file never grows past the session's configs.
- Storage is derive_cache's (:func:`~cutile_workbench.artifacts.derive_cache.store_value` /
  :func:`~cutile_workbench.artifacts.derive_cache.load_value`: plain JSON with a schema, a payload
  digest, finite numbers and this package's dataclasses checked field by field on read; atomic,
  pruned per kind). A file that is unreadable, foreign, changed or of another shape is ignored (every
  entry recomputed), never trusted.
- Kept in memory for the process (one map per file), so a second reader in the process reads nothing.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

#: bump when the map's shape changes (old files are ignored)
VERSION = 2
_OPEN: dict[str, ConfigCache] = {}
_LOCK = threading.Lock()


class ConfigCache:
    """One kernel's per-config facts of one kind (see the module docstring)."""

    def __init__(self, kind: str, name: str) -> None:
        self.kind, self.name = kind, name
        self._entries: dict[str, tuple[str, Any]] | None = None
        self._dirty = False
        self._lock = threading.Lock()

    @classmethod
    def open(cls, kind: str, owner: str) -> ConfigCache:
        from cutile_workbench.artifacts.derive_cache import cache_path

        name = hashlib.sha256(f"{kind} v{VERSION}\0{owner}".encode()).hexdigest()[:32]
        path = str(cache_path(kind, name))  # the user cache dir of now (tests move it)
        with _LOCK:
            if path not in _OPEN:
                _OPEN[path] = cls(kind, name)
            return _OPEN[path]

    def _load(self) -> dict[str, tuple[str, Any]]:
        if self._entries is None:
            from cutile_workbench.artifacts.derive_cache import CacheMiss, load_value

            entries: dict[str, tuple[str, Any]] = {}
            try:
                doc = load_value(self.kind, self.name)
            except CacheMiss:  # absent, unreadable, foreign, changed or corrupt: every entry is recomputed
                doc = None
            if (
                isinstance(doc, dict)
                and doc.get("version") == VERSION
                and isinstance(doc.get("entries"), dict)
            ):
                for params, item in doc["entries"].items():
                    if (
                        isinstance(params, str)
                        and isinstance(item, dict)
                        and isinstance(item.get("digest"), str)
                    ):
                        entries[params] = (item["digest"], item.get("value"))
            self._entries = entries
        return self._entries

    def get(self, params: str, digest: str) -> Any | None:
        with self._lock:
            item = self._load().get(params)
        return item[1] if item is not None and item[0] == digest else None

    def put(self, params: str, digest: str, value: Any) -> None:
        with self._lock:
            self._load()[params] = (digest, value)
            self._dirty = True

    def flush(self) -> None:
        """Write the map (one file, atomically) when an entry changed since the last flush."""
        from cutile_workbench.artifacts.derive_cache import store_value

        with self._lock:
            if not self._dirty or self._entries is None:
                return
            doc = {
                "version": VERSION,
                "entries": {p: {"digest": d, "value": v} for p, (d, v) in self._entries.items()},
            }
            self._dirty = False
        store_value(self.kind, self.name, doc)


def forget() -> None:
    """Drop the in-memory maps (tests: what a new process starts with)."""
    with _LOCK:
        _OPEN.clear()
