"""E's per-row bootstraps, kept between processes: one binary file per kernel dir (issue 31 item 1).

Why: each row of E's table draws its bootstrap from its own stream (:mod:`cutile_workbench.stages.e.stats`),
so a row's CI and replicates depend on that row's samples alone; after a re-run of one config the
table's whole-input key misses, and this file gives every other row's result back instead of
drawing it again. The geomean's CI is combined from the rows' ``ln ratio`` replicates, so they are
kept too: ``n_boot`` float32 values a row (8 KB at 2,000: 8 MB for 1,000 configs).

Contract:
- :meth:`RowBootFile.open` ``(kernel_dir, seed, n_boot, code)``: the file of that kernel dir, seed,
  ``n_boot`` and deriving code (its name hashes all four), under ``<user cache>/e_rows/`` — never in
  the kernel dir. :meth:`get` ``(key)`` (:func:`~cutile_workbench.stages.e.stats.row_boot_key`: the
  row's key, its two samples, seed and n_boot) gives the stored :class:`~cutile_workbench.stages.e.stats.RowBoot`
  or None; :meth:`put` keeps a new one; :meth:`flush` writes the rows asked for by the build (got or
  put) when any was put or a stored one was not asked for: the file holds the current table's rows,
  never more.
- Format: numpy's ``.npz`` of plain arrays read with ``allow_pickle=False`` (no code, no pickle):
  ``keys`` (N, ``S64`` hex digests), ``ci`` (N x 2 float64), ``ok`` (N bool: False = a replicate
  over- or underflowed, no CI), ``logs`` (N x n_boot float32). A file that is absent, a link, not a
  regular file, over :data:`MAX_FILE_BYTES`, not such arrays, of other shapes or dtypes, or holding a
  non-finite number where ``ok`` is a miss: every row drawn again and the file rewritten, never trusted.
- Written atomically (a temp file beside it, then renamed; stray temp files are pruned); at most :data:`KEEP_FILES` files, least recently used pruned.
"""

from __future__ import annotations

import hashlib
import os
import stat
import zipfile
from pathlib import Path

import numpy as np

from cutile_workbench.infra.atomicio import atomic_writer
from cutile_workbench.stages.e.stats import RowBoot

VERSION = 1
KEEP_FILES = 32
#: a 10,000-config table at n_boot = 2,000 is 80 MB; past this the rows are drawn again, not read
MAX_FILE_BYTES = 512 * 1024 * 1024
_FIELDS = {"keys", "ci", "ok", "logs"}


def _dir() -> Path:
    from cutile_workbench.artifacts.derive_cache import cache_path

    return cache_path("e_rows", "x").parent


class RowBootFile:
    """One kernel's per-row bootstraps (see the module contract)."""

    def __init__(self, path: Path, n_boot: int) -> None:
        self.path, self.n_boot = path, n_boot
        self._index: dict[str, int] | None = None
        self._ci = np.zeros((0, 2))
        self._ok = np.zeros(0, dtype=bool)
        self._logs = np.zeros((0, n_boot), dtype=np.float32)
        self._new: dict[str, RowBoot] = {}
        self._asked: list[str] = []

    @classmethod
    def open(cls, kernel_dir: Path | str, *, seed: int, n_boot: int, code: str) -> RowBootFile:
        name = hashlib.sha256(
            f"e-rows v{VERSION}\0{kernel_dir}\0{seed}\0{n_boot}\0{code}".encode()
        ).hexdigest()
        return cls(_dir() / f"{name[:32]}.npz", n_boot)

    # ------------------------------------------------------------------ reading
    def _load(self) -> dict[str, int]:
        if self._index is None:
            self._index = {}
            try:
                arrays = self._read()
            except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError, MemoryError):
                arrays = None  # absent, unreadable or not ours: every row is drawn again
            if arrays is not None:
                keys, ci, ok, logs = arrays
                self._index = {k.decode("ascii"): i for i, k in enumerate(keys.tolist())}
                self._ci, self._ok, self._logs = ci, ok, logs
        return self._index

    def _read(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.path, flags)
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
                return None
            with np.load(fh, allow_pickle=False) as z:  # read member by member: no second copy
                if set(z.files) != _FIELDS:
                    return None
                keys, ci, ok, logs = z["keys"], z["ci"], z["ok"], z["logs"]
        n = keys.shape[0] if keys.ndim == 1 else -1
        if (
            keys.dtype != np.dtype("S64")
            or ci.dtype != np.float64
            or ci.shape != (n, 2)
            or ok.dtype != np.bool_
            or ok.shape != (n,)
            or logs.dtype != np.float32
            or logs.shape != (n, self.n_boot)
            or not bool(np.all(np.isfinite(ci[ok])))
            or not bool(np.all(np.isfinite(logs[ok])))
        ):
            return None
        try:
            os.utime(self.path)  # least recently used is pruned first
        except OSError:
            pass
        return keys, ci, ok, logs

    def get(self, key: str) -> RowBoot | None:
        self._asked.append(key)
        return self._lookup(key)

    def _lookup(self, key: str) -> RowBoot | None:
        if key in self._new:
            return self._new[key]
        i = self._load().get(key)
        if i is None:
            return None
        if not self._ok[i]:
            return RowBoot(None, None)
        return RowBoot((float(self._ci[i, 0]), float(self._ci[i, 1])), self._logs[i])

    def put(self, key: str, value: RowBoot) -> None:
        if value.logs is not None and value.logs.shape != (self.n_boot,):
            return  # not this file's n_boot: drawn again next time
        self._new[key] = value

    # ------------------------------------------------------------------ writing
    def flush(self) -> None:
        """Write the rows the build asked for when the file would change (module contract)."""
        index = self._load()
        asked = list(dict.fromkeys(self._asked))
        if not self._new and set(asked) == set(index):
            return
        n = len(asked)
        keys = np.array([k.encode("ascii") for k in asked], dtype="S64")
        ci = np.zeros((n, 2))
        ok = np.zeros(n, dtype=bool)
        logs = np.zeros((n, self.n_boot), dtype=np.float32)
        for j, k in enumerate(asked):
            got = self._lookup(k)
            if got is None or got.ci is None or got.logs is None:
                continue
            ci[j], ok[j], logs[j] = got.ci, True, got.logs
        self._ci, self._ok, self._logs = np.zeros((0, 2)), np.zeros(0, dtype=bool), logs[:0]  # free the old
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # written straight to a temp file beside it, then renamed (no in-memory copy of the file)
            with atomic_writer(self.path, durable=False) as fh:
                np.savez(fh, keys=keys, ci=ci, ok=ok, logs=logs)
            _prune(self.path.parent)
        except OSError:  # a cache that cannot be written is only a slower next run (the temp removed)
            pass
        self._new.clear()
        self._asked.clear()
        self._index = None


def _prune(directory: Path) -> None:
    entries = []
    for p in directory.iterdir():
        if p.suffix == ".npz" or ".npz.tmp-" in p.name:  # a row file or a stray temp of atomic_writer
            try:
                entries.append((p.lstat().st_mtime_ns, p))
            except OSError:
                continue
    entries.sort(reverse=True)
    for _m, p in entries[KEEP_FILES:]:
        p.unlink(missing_ok=True)
