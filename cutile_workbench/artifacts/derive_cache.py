"""A cache of facts derived from files, kept in memory and in the user's cache dir (never in a kernel dir).

Contract:
- :func:`cached_derivation` runs ``compute()`` once per content of ``inputs`` plus an ``extra`` text and
  the source of the ``modules`` whose code decides the value and of every module they import
  (:func:`cutile_workbench.infra.codekey.code_key`; a changed rule is a miss, never a stale hit); the value is kept in memory and pickled to ``<user cache>/<kind>/<key>.pickle``.
- A cache file is data, never code: it is loaded with :class:`_DataclassesOnly` (this package's
  dataclasses and builtin containers only); a file that is unreadable, foreign or corrupt is
  recomputed, never trusted. Inputs are hashed as regular files only (:func:`_read`: a FIFO or
  device planted at an input must not hang or flood the key).
- The user cache dir is :mod:`cutile_workbench.artifacts.launch_store`'s (``$CUTILE_WORKBENCH_CACHE``, else
  ``$XDG_CACHE_HOME``/``~/.cache`` + ``cutile-workbench``); at most :data:`KEEP_FILES` files per kind.
Used by E's table (:mod:`cutile_workbench.stages.e.e_table`), the ratios' conditions and F's launch summaries.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import pickle
from collections.abc import Callable
from dataclasses import is_dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from cutile_workbench.infra.codekey import code_key

T = TypeVar("T")
#: bump when the pickled shapes change (old caches become misses)
CACHE_VERSION = 1
#: this package's top-level name: the only module prefix a cache file may name
_PACKAGE = __name__.split(".", 1)[0]


def _read(path: Path) -> bytes:
    """The bytes an input key hashes: regular files only (a FIFO or device planted at a baseline
    log must not hang or flood the key; the parser then refuses it with the located error)."""
    import stat as stat_mod

    try:
        if not stat_mod.S_ISREG(path.stat().st_mode):
            return b"\0not a regular file"
        return path.read_bytes()
    except FileNotFoundError:
        return b""
    except OSError:
        return b"\0unreadable"  # the parser raises the located error on a miss


def module_source(name: str) -> bytes:
    """The source bytes of module ``name`` (b"" when it has none): part of a cache key."""
    spec = importlib.util.find_spec(name)
    origin = spec.origin if spec is not None else None
    return _read(Path(origin)) if origin else b""


class _DataclassesOnly(pickle.Unpickler):
    """Loads only workbench dataclasses and builtin containers: a cache file is data, never code."""

    def find_class(self, module: str, name: str) -> Any:
        if module.split(".", 1)[0] == _PACKAGE:
            obj = super().find_class(module, name)
            if isinstance(obj, type) and is_dataclass(obj):
                return obj
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a cache file")


def _user_cache_dir() -> Path:
    from cutile_workbench.artifacts.launch_store import _user_cache_dir as user_cache

    return user_cache()


#: cache files kept in the user cache dir (oldest pruned): a year of kernels × log versions stays small
KEEP_FILES = 256


def _store(path: Path, data: bytes) -> None:
    from cutile_workbench.artifacts.launch_store import _write_atomic

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(path, data)
        files = sorted(path.parent.glob("*.pickle"), key=lambda p: p.stat().st_mtime_ns)
        for old in files[:-KEEP_FILES]:
            old.unlink(missing_ok=True)
    except OSError:  # a cache that cannot be written is only a slower next run
        pass


_DERIVED: dict[str, bytes] = {}


def cached_derivation(
    kind: str, inputs: list[Path], extra: str, modules: list[str], compute: Callable[[], T]
) -> T:
    """``compute()`` once per content of ``inputs`` (+ ``extra`` text + the source of ``modules``):
    kept in memory and in ``<user cache>/<kind>/<key>.pickle`` like E's table (workbench dataclasses
    only; a bad file is recomputed). For facts derived from E's inputs, e.g. the ratios' measurement
    conditions, that every command would otherwise re-parse the logs for."""
    h = hashlib.sha256(f"{kind} v{CACHE_VERSION}\0{extra}\0".encode())
    h.update(code_key(modules).encode())  # the modules and their whole import closure
    for path in inputs:
        data = _read(path)
        h.update(f"{path} {len(data)}\0".encode())
        h.update(data)
    key = h.hexdigest()
    if key in _DERIVED:
        return cast(T, _DataclassesOnly(io.BytesIO(_DERIVED[key])).load())
    path = _user_cache_dir() / kind / f"{key}.pickle"
    try:
        value = _DataclassesOnly(io.BytesIO(path.read_bytes())).load()
        _DERIVED[key] = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        return cast(T, value)
    except Exception:  # absent or not ours: compute it
        pass
    value = compute()
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    _store(path, data)
    if len(_DERIVED) >= 16:
        _DERIVED.clear()
    _DERIVED[key] = data
    return value
