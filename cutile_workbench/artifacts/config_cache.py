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
- Each entry is kept in the file as the text it was encoded to (issue 31): loading the file decodes
  no entry, :meth:`get` decodes the one asked for (a bad entry is a miss, recomputed), and
  :meth:`flush` encodes only the entries put since the load — a re-run of one config encodes one.
- Kept in memory for the process (one map per file), so a second reader in the process reads nothing.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

#: bump when the map's shape changes (old files are ignored)
VERSION = 3
_OPEN: dict[str, ConfigCache] = {}
_LOCK = threading.Lock()


class _Stored:
    """An entry as read from the file: its encoded text, decoded on first :meth:`ConfigCache.get`."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _decode_entry(text: str) -> Any:
    """An entry's value from its text (derive_cache's format); CacheMiss when it is not one."""
    import json

    from cutile_workbench.artifacts.derive_cache import CacheMiss, _finite, _no_constant, decode

    try:
        doc = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except (ValueError, RecursionError):
        raise CacheMiss("entry not JSON of finite numbers") from None
    return decode(doc)


def _encode_entry(value: Any) -> str | None:
    """``value``'s text (derive_cache's format); None when the format does not hold it."""
    import json

    from cutile_workbench.artifacts.derive_cache import encode

    try:
        return json.dumps(encode(value), sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (ValueError, TypeError, RecursionError):
        return None


class ConfigCache:
    """One kernel's per-config facts of one kind (see the module docstring)."""

    def __init__(self, kind: str, name: str) -> None:
        self.kind, self.name = kind, name
        self._entries: dict[str, tuple[str, Any]] | None = None  # value, or _Stored until decoded
        self._texts: dict[str, str] = {}  # the encoded text of each entry not put since the load
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
                        and isinstance(item.get("text"), str)
                    ):
                        entries[params] = (item["digest"], _Stored(item["text"]))
                        self._texts[params] = item["text"]
            self._entries = entries
        return self._entries

    def get(self, params: str, digest: str) -> Any | None:
        from cutile_workbench.artifacts.derive_cache import CacheMiss

        with self._lock:
            entries = self._load()
            item = entries.get(params)
            if item is None or item[0] != digest:
                return None
            if isinstance(item[1], _Stored):
                try:
                    value = _decode_entry(item[1].text)
                except CacheMiss:  # a bad entry: recomputed (and replaced by the caller's put)
                    return None
                entries[params] = (digest, value)
                return value
            return item[1]

    def put(self, params: str, digest: str, value: Any) -> None:
        with self._lock:
            self._load()[params] = (digest, value)
            self._texts.pop(params, None)
            self._dirty = True

    def flush(self) -> None:
        """Write the map (one file, atomically) when an entry changed since the last flush."""
        from cutile_workbench.artifacts.derive_cache import store_value

        with self._lock:
            if not self._dirty or self._entries is None:
                return
            out: dict[str, dict[str, str]] = {}
            for p, (d, v) in self._entries.items():
                text = self._texts.get(p)
                if text is None:
                    text = v.text if isinstance(v, _Stored) else _encode_entry(v)
                    if text is None:  # not storable: recomputed next time
                        continue
                    self._texts[p] = text
                out[p] = {"digest": d, "text": text}
            doc = {"version": VERSION, "entries": out}
            self._dirty = False
        store_value(self.kind, self.name, doc)


def forget() -> None:
    """Drop the in-memory maps (tests: what a new process starts with)."""
    with _LOCK:
        _OPEN.clear()
