"""The history store: ``<kernel>/workbench/history.sqlite`` (SQLite from the standard library).

Contract:
- Schema = :data:`MIGRATIONS`, applied in order and recorded in ``schema_migrations(version,
  description, applied_at)``; ``PRAGMA application_id`` marks the file as ours. Opening a file
  whose newest applied migration is above :data:`SCHEMA_VERSION`, a SQLite file of another
  application, a non-SQLite/corrupt file, or one locked longer than ``timeout_s`` raises
  :class:`~cutile_workbench.errors.InputError` naming the file (exit 2 in the CLI); no reader method lets
  a ``sqlite3.Error`` escape.
- The file is reached by descriptor (:mod:`cutile_workbench.infra.paths`): the kernel dir opened
  once, ``workbench/`` and the store opened with ``O_NOFOLLOW`` (a link anywhere is refused, never
  followed), ``fstat``-checked (a regular file, at most :data:`MAX_STORE_BYTES`), and read into
  memory under SQLite's SHARED lock (other programs' connections keep their semantics; a hot
  ``-journal`` of another program is refused, not read half-done). SQLite never opens the file by
  path, so no check-then-open window exists.
- ``read_only`` (every command that does not record a run: ``table``, ``report --dry-run``,
  ``overview``, ``diff``, ``timeline``, ``history``, ``calibrate`` without ``--run``, the TUI): the
  in-memory copy is migrated there when older and never written back: not a byte under the out
  root changes, also on a read-only mount.
- Recording stores (``read_only=False``: the runner's record, tests appending runs): one writer at a
  time (``flock`` on ``history.sqlite.lock`` beside it, threads included); the store must have
  ``st_nlink == 1``; every committed transaction writes the whole database back by temp file +
  fsync + rename inside the store's dir descriptor, under SQLite's EXCLUSIVE lock, so a run is
  stored with all its configs and its source row, or not at all, readers see the old file or the
  new one, and a file another program changed since it was read is refused, never overwritten.
- ``runs`` keeps the provenance as JSON plus the facts one filters on as columns (GPU, driver,
  MIG, throttling, harness, commits); ``configs`` one row per (run, func_key, params, backend,
  phase) with the median, raw samples as a JSON array (``json_each`` works on it), launches/call,
  kernel name, capture source and check; ``run_sources`` every (role, path, file sha256) a run was
  seen at, which makes re-imports of unchanged files free.
- ``comparisons`` caches each decided pair of runs (:meth:`HistoryStore.cached_comparisons`,
  :meth:`HistoryStore.cache_comparisons`), keyed on both results, the policy and the statistics' code.
- :meth:`HistoryStore.in_memory` is the same store in memory, for read-only artifact trees (the
  recorded sessions shipped in the package are never written to).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import re
import sqlite3
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cutile_workbench.errors import InputError, UnsafePath, WorkbenchError
from cutile_workbench.history.entries import ConfigResult, RunEntry
from cutile_workbench.history.provenance import Provenance, provenance_from_dict
from cutile_workbench.infra.paths import file_type, open_kernel_dir, replace_at, walk_at

HISTORY_FILE = "history.sqlite"
APPLICATION_ID = 0x43574248  # "CWBH"


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "runs, run_sources and configs",
        (
            """CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            run_key TEXT NOT NULL UNIQUE,
            kernel TEXT NOT NULL,
            source TEXT NOT NULL CHECK (source IN ('live', 'import')),
            recorded_at REAL,
            recorded_at_origin TEXT NOT NULL,
            added_at REAL NOT NULL,
            gpu_name TEXT, gpu_uuid TEXT, driver_version TEXT, cuda_driver_version TEXT, mig_mode TEXT,
            throttled INTEGER,
            harness TEXT, tilegym_commit TEXT, cutile_rs_lib_sha256 TEXT, workbench_version TEXT, host TEXT,
            provenance_json TEXT NOT NULL,
            notes_json TEXT NOT NULL DEFAULT '[]'
        )""",
            """CREATE TABLE run_sources (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            role TEXT NOT NULL,
            path TEXT NOT NULL,
            file_sha256 TEXT NOT NULL,
            seen_at REAL NOT NULL,
            PRIMARY KEY (run_id, role, path, file_sha256)
        )""",
            "CREATE INDEX run_sources_by_file ON run_sources(file_sha256)",
            """CREATE TABLE configs (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            func_key TEXT NOT NULL, params TEXT NOT NULL, backend TEXT NOT NULL, phase TEXT NOT NULL,
            nodeid TEXT NOT NULL,
            median_ms REAL NOT NULL CHECK (median_ms > 0),
            nrep INTEGER, rel_std_pct REAL,
            n_samples INTEGER, samples_json TEXT,
            launches_per_call INTEGER, kernel_name TEXT, capture_source TEXT, capture_check TEXT,
            PRIMARY KEY (run_id, func_key, params, backend, phase)
        )""",
            "CREATE INDEX configs_by_series ON configs(params, backend, phase)",
        ),
    ),
    # issue 26: each comparison of two runs of a config is computed once (keyed on both results, the
    # policy and the statistics' code: cutile_workbench.history.regress.comparison_key)
    Migration(
        2,
        "comparisons cache",
        (
            """CREATE TABLE comparisons (
            key TEXT PRIMARY KEY,
            flag_json TEXT NOT NULL,
            computed_at REAL NOT NULL
        )""",
        ),
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


@dataclass(frozen=True)
class StoredRun:
    """A run as read back (configs are loaded separately: :meth:`HistoryStore.configs`)."""

    run_id: int
    run_key: str
    kernel: str
    source: str
    recorded_at: float | None
    recorded_at_origin: str
    added_at: float
    provenance: Provenance
    roles: tuple[str, ...]
    notes: tuple[str, ...]
    n_configs: int

    @property
    def when(self) -> float:
        """The time runs are ordered by: recorded_at, else when it was added."""
        return self.recorded_at if self.recorded_at is not None else self.added_at


class HistoryStore:
    """One open history database (use as a context manager, or call :meth:`close`)."""

    def __init__(self, conn: sqlite3.Connection, label: str, path: Path | None) -> None:
        self._conn = conn
        self.read_only = False  # opened with mode=ro (HistoryStore.open): never migrated nor written
        self.label = label  # the file name in messages (":memory:" for an in-memory store)
        self.path = path
        self._dir_fd: int | None = None  # the store's dir, by descriptor (files opened from it)
        self._lock_fd: int | None = None  # the writers' lock file (recording stores only)
        self._name = HISTORY_FILE
        self._image: _Image | None = None  # identity of the file as read (a write-back checks it)
        self._timeout_s = 5.0
        self._persist = False

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(
        cls,
        path: Path | str,
        *,
        create: bool = True,
        timeout_s: float = 5.0,
        read_only: bool = False,
        root: Path | str | None = None,
    ) -> HistoryStore:
        """Open the store at ``path`` (module contract: by descriptor, in memory); ``create=False``
        refuses a missing file. ``root`` is the kernel dir the walk starts from (default: the dir
        above ``workbench/``, else the store's own dir).

        ``read_only`` (every command that does not record a run): a copy read under SQLite's shared
        lock, migrated in memory when older, never written back (comparisons are not cached)."""
        p = Path(path)
        if read_only:
            create = False
        base, parts = _walk_parts(p, root)
        where = str(p)
        try:
            if create and not base.exists() and not base.is_symlink():
                base.mkdir(parents=True, exist_ok=True)
            root_fd = open_kernel_dir(base)
        except OSError as exc:
            raise InputError(
                f"cannot create the history store's dir: {exc.strerror or exc}", path=str(base)
            ) from None
        except InputError:
            if not create and not base.exists():
                raise InputError(
                    "no history store (no run has been recorded or imported here)", path=where
                ) from None
            raise
        try:
            try:
                dir_fd = walk_at(root_fd, parts[:-1], where=str(base), create=create)
            except InputError as exc:
                if not create and "no such directory" in exc.message:
                    raise InputError(
                        "no history store (no run has been recorded or imported here)", path=where
                    ) from None
                raise
        finally:
            os.close(root_fd)
        name = parts[-1]
        lock_fd: int | None = None
        try:
            if not read_only:
                lock_fd = _exclusive_writer_lock(dir_fd, name, where, timeout_s)
            image = _read_image(dir_fd, name, where, timeout_s, for_write=not read_only)
            if image is None and not create:
                raise InputError("no history store (no run has been recorded or imported here)", path=where)
            conn = sqlite3.connect(":memory:", isolation_level=None)
            if image is not None and image.data:  # a 0-byte file is an empty database
                try:
                    conn.deserialize(image.data)
                except sqlite3.Error as exc:
                    conn.close()
                    raise InputError(_describe(exc, "opening"), path=where) from None
        except BaseException:
            if lock_fd is not None:
                os.close(lock_fd)
            os.close(dir_fd)
            raise
        store = cls(conn, where, p)
        store.read_only = read_only
        store._dir_fd, store._lock_fd, store._name = dir_fd, lock_fd, name
        store._image = image
        store._timeout_s = timeout_s
        store._persist = not read_only and image is None  # a new store is written by its first migration
        try:
            store._prepare(timeout_s)
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def in_memory(cls) -> HistoryStore:
        store = cls(sqlite3.connect(":memory:", isolation_level=None), ":memory:", None)
        store._prepare(0.0)
        return store

    def close(self) -> None:
        self._conn.close()
        for fd in (self._lock_fd, self._dir_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._lock_fd = self._dir_fd = None

    def _write_back(self) -> None:
        """The in-memory database replaces the file (recording stores only): temp + rename in the
        store's dir descriptor, under SQLite's exclusive lock against other programs' connections;
        a file changed by another program since it was read is refused, never overwritten."""
        if self._dir_fd is None or self.read_only:
            return
        data = self._conn.serialize()
        with _foreign_exclusive(self._dir_fd, self._name, self.label, self._timeout_s) as now:
            if self._image is not None and now != self._image.identity:
                raise InputError(
                    "history store changed on disk while it was open (another program wrote it); "
                    "nothing written: run the command again",
                    path=self.label,
                )
            replace_at(self._dir_fd, self._name, data, where=self.label)
        ident = _identity_at(self._dir_fd, self._name)
        self._image = _Image(b"", ident) if ident is not None else None

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _guard(self, doing: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            column = re.search(r"decode to UTF-8 column '([^']{1,80})'", str(exc))
            raise InputError(
                _describe(exc, doing), path=self.label, key=column.group(1) if column else None
            ) from None
        except (UnicodeError, OverflowError, RecursionError, MemoryError) as exc:  # a tampered cell
            raise InputError(
                f"history store holds a value that cannot be read ({type(exc).__name__}: {exc}) while {doing}",
                path=self.label,
            ) from None

    def _prepare(self, timeout_s: float) -> None:
        with self._guard("opening"):
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._conn.execute("PRAGMA synchronous = FULL")
            app_id = int(self._conn.execute("PRAGMA application_id").fetchone()[0])
            tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if app_id not in (0, APPLICATION_ID) or (app_id == 0 and tables):
                raise InputError(
                    "not a cutile-workbench history store (another application's SQLite file)",
                    path=self.label,
                    key="application_id",
                )
            current = self.schema_version()
            if current > SCHEMA_VERSION:
                raise InputError(
                    f"history schema version {current} is newer than this cutile-workbench "
                    f"understands ({SCHEMA_VERSION}); upgrade cutile-workbench",
                    path=self.label,
                    key="schema_migrations",
                )
            migrated = False
            for migration in MIGRATIONS:
                if migration.version > current:  # in memory; written back only by a recording store
                    self._migrate(migration)
                    migrated = True
            if migrated or self._persist:
                self._persist = False
                self._write_back()

    def _migrate(self, migration: Migration) -> None:
        with self._transaction(write_back=False):
            if migration.version == 1:
                self._conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                    "description TEXT NOT NULL, applied_at TEXT NOT NULL)"
                )
            for stmt in migration.statements:
                self._conn.execute(stmt)
            self._conn.execute(
                "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                (
                    migration.version,
                    migration.description,
                    time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                ),
            )

    @contextmanager
    def _transaction(self, *, write_back: bool = True) -> Iterator[None]:
        with self._guard("writing"):
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        if write_back:
            try:
                self._write_back()
            except BaseException:
                # the file keeps the last committed image; memory must not claim more than it holds
                self._reload_image()
                raise

    def _reload_image(self) -> None:
        if self._dir_fd is None:
            return
        with contextlib.suppress(WorkbenchError, sqlite3.Error):
            image = _read_image(self._dir_fd, self._name, self.label, self._timeout_s, for_write=True)
            if image is not None and image.data:
                self._conn.deserialize(image.data)
                self._image = image

    def schema_version(self) -> int:
        with self._guard("reading the schema version"):
            exists = self._conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
            ).fetchone()
            if not exists:
                return 0
            row = self._conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
            return int(row[0] or 0)

    # ------------------------------------------------------------------ writing

    def run_for_file(self, file_sha256: str) -> str | None:
        """The run key a file with this content was already imported as, if any."""
        with self._guard("reading"):
            row = self._conn.execute(
                "SELECT r.run_key FROM run_sources s JOIN runs r ON r.id = s.run_id WHERE s.file_sha256 = ? LIMIT 1",
                (file_sha256,),
            ).fetchone()
        return str(row[0]) if row else None

    def add(self, entry: RunEntry, *, source_path: str | None = None) -> bool:
        """Store ``entry`` (True) or, if its run key is known, only record where it was seen (False)."""
        now = time.time()
        path = source_path if source_path is not None else entry.log_path
        prov = entry.provenance
        gpu = prov.gpu
        throttle = prov.throttling()
        with self._transaction():
            row = self._conn.execute("SELECT id FROM runs WHERE run_key = ?", (entry.run_key,)).fetchone()
            added = row is None
            if added:
                cur = self._conn.execute(
                    "INSERT INTO runs (run_key, kernel, source, recorded_at, recorded_at_origin, added_at, gpu_name, "
                    "gpu_uuid, driver_version, cuda_driver_version, mig_mode, throttled, harness, tilegym_commit, "
                    "cutile_rs_lib_sha256, workbench_version, host, provenance_json, notes_json) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        entry.run_key,
                        entry.kernel,
                        entry.source,
                        entry.recorded_at,
                        entry.recorded_at_origin,
                        now,
                        gpu.name if gpu else None,
                        gpu.uuid if gpu else None,
                        gpu.driver_version if gpu else None,
                        gpu.cuda_driver_version if gpu else None,
                        gpu.mig_mode if gpu else None,
                        None if throttle is None else int(bool(throttle)),
                        prov.harness.name if prov.harness else None,
                        prov.tilegym_commit,
                        prov.cutile_rs_lib_sha256,
                        prov.workbench_version,
                        prov.host,
                        json.dumps(prov.to_dict(), sort_keys=True),
                        json.dumps(list(entry.notes)),
                    ),
                )
                run_id = int(cur.lastrowid or 0)
                self._conn.executemany(
                    "INSERT INTO configs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            run_id,
                            c.func_key,
                            c.params,
                            c.backend,
                            c.phase,
                            c.nodeid,
                            c.median_ms,
                            c.nrep,
                            c.rel_std_pct,
                            len(c.samples_ms) if c.samples_ms is not None else None,
                            json.dumps(list(c.samples_ms)) if c.samples_ms is not None else None,
                            c.launches_per_call,
                            c.kernel_name,
                            c.capture_source,
                            c.capture_check,
                        )
                        for c in entry.configs
                    ],
                )
            else:
                run_id = int(row[0])
            self._conn.execute(
                "INSERT OR IGNORE INTO run_sources VALUES (?, ?, ?, ?, ?)",
                (run_id, entry.role, path, entry.log_sha256, now),
            )
        return added

    def note_source(self, run_key: str, role: str, path: str, file_sha256: str) -> None:
        """Record that a known run was seen again at ``path`` in ``role`` (a file imported before)."""
        with self._transaction():
            self._conn.execute(
                "INSERT OR IGNORE INTO run_sources SELECT id, ?, ?, ?, ? FROM runs WHERE run_key = ?",
                (role, path, file_sha256, time.time(), run_key),
            )

    # ------------------------------------------------------------------ reading

    def runs(self) -> list[StoredRun]:
        """Every run, oldest first (by recorded time, else time added; then insertion order)."""
        with self._guard("reading runs"):
            rows = self._conn.execute(
                "SELECT r.id, r.run_key, r.kernel, r.source, r.recorded_at, r.recorded_at_origin, r.added_at, "
                "r.provenance_json, r.notes_json, "
                "(SELECT group_concat(DISTINCT role) FROM run_sources s WHERE s.run_id = r.id), "
                "(SELECT COUNT(*) FROM configs c WHERE c.run_id = r.id) "
                "FROM runs r ORDER BY COALESCE(r.recorded_at, r.added_at), r.id"
            ).fetchall()
        out = []
        for run_id, key, kernel, source, rec_at, origin, added_at, prov_json, notes_json, roles, n in rows:
            where = f"{self.label}: runs.id={run_id!r:.40}"
            cell = _Cells(where)
            cell.integer("id", run_id, 1, 2**63 - 1)
            rec_at = cell.real("recorded_at", rec_at, 0.0, MAX_TIMESTAMP, nullable=True)
            added = cell.real("added_at", added_at, 0.0, MAX_TIMESTAMP)
            assert added is not None  # not nullable
            for name, value in (
                ("run_key", key),
                ("kernel", kernel),
                ("source", source),
                ("recorded_at_origin", origin),
                ("provenance_json", prov_json),
                ("notes_json", notes_json),
            ):
                cell.text(name, value)
            prov_doc = _json(prov_json, where, "provenance_json")
            if not isinstance(prov_doc, dict):
                raise InputError(
                    f"must hold a JSON object, got {type(prov_doc).__name__}",
                    path=where,
                    key="provenance_json",
                )
            try:
                prov = provenance_from_dict(prov_doc, source=where)
            except InputError as exc:
                raise InputError(exc.message, path=where, key=exc.key or "provenance_json") from None
            notes = _json(notes_json, where, "notes_json")
            out.append(
                StoredRun(
                    int(run_id),
                    str(key),
                    str(kernel),
                    str(source),
                    rec_at,
                    str(origin),
                    added,
                    prov,
                    tuple(sorted(str(roles).split(","))) if roles else (),
                    tuple(str(n) for n in notes) if isinstance(notes, list) else (),
                    int(n),
                )
            )
        return out

    def configs(
        self, *, params: str | None = None, backend: str | None = None, phase: str | None = None
    ) -> list[tuple[int, ConfigResult]]:
        """``(run_id, result)`` rows, optionally filtered (exact matches), in run-id order."""
        where, args = [], []
        for column, value in (("params", params), ("backend", backend), ("phase", phase)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = (
            "SELECT run_id, func_key, params, backend, phase, nodeid, median_ms, nrep, rel_std_pct, samples_json, "
            "launches_per_call, kernel_name, capture_source, capture_check FROM configs"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY run_id, func_key, params, backend"
        )
        with self._guard("reading configs"):
            rows = self._conn.execute(sql, args).fetchall()
            run_ids = {r[0] for r in self._conn.execute("SELECT id FROM runs")}
        out = []
        for (
            run_id,
            func_key,
            p,
            b,
            ph,
            nodeid,
            median,
            nrep,
            rel_std,
            samples_json,
            launches,
            kname,
            csrc,
            check,
        ) in rows:
            cell = _Cells(f"{self.label}: configs run_id={run_id!r:.40} {nodeid!r:.200}")
            cell.integer("run_id", run_id, 1, 2**63 - 1)
            if run_id not in run_ids:
                raise InputError(
                    f"the row names run_id={run_id}, which has no row in runs (orphaned)",
                    path=cell.where,
                    key="run_id",
                )
            for name, value in (
                ("func_key", func_key),
                ("params", p),
                ("backend", b),
                ("phase", ph),
                ("nodeid", nodeid),
            ):
                cell.text(name, value)
            for name, value in (
                ("samples_json", samples_json),
                ("kernel_name", kname),
                ("capture_source", csrc),
                ("capture_check", check),
            ):
                cell.text(name, value, nullable=True)
            median = cell.real("median_ms", median, MIN_POSITIVE, MAX_MS)
            assert median is not None  # not nullable
            rel_std = cell.real("rel_std_pct", rel_std, 0.0, MAX_REL_STD_PCT, nullable=True)
            nrep = cell.integer("nrep", nrep, 0, MAX_COUNT, nullable=True)
            launches = cell.integer("launches_per_call", launches, 0, MAX_COUNT, nullable=True)
            samples = None
            if samples_json is not None:
                loaded = _json(
                    samples_json, f"{self.label}: configs run_id={run_id} {nodeid}", "samples_json"
                )
                if not isinstance(loaded, list) or not all(
                    type(v) in (int, float) and math.isfinite(v) and 0 <= v <= MAX_MS for v in loaded
                ):
                    raise InputError(
                        f"samples of {nodeid} are not a list of finite times (0 to {MAX_MS:g} ms)",
                        path=cell.where,
                        key="samples_json",
                    )
                samples = tuple(float(v) for v in loaded)
            out.append(
                (
                    int(run_id),
                    ConfigResult(
                        func_key,
                        p,
                        b,
                        ph,
                        nodeid,
                        float(median),
                        samples,
                        nrep,
                        rel_std,
                        launches,
                        kname,
                        csrc,
                        check,
                    ),
                )
            )
        return out

    def cached_comparisons(self, keys: Sequence[str]) -> dict[str, str]:
        """The cached comparisons (``flag_json``) of ``keys`` that are stored."""
        out: dict[str, str] = {}
        if self.read_only and self.schema_version() < 2:  # an older store read as it is: no cache table
            return out
        with self._guard("reading cached comparisons"):
            for i in range(0, len(keys), 500):
                chunk = list(keys[i : i + 500])
                marks = ",".join("?" * len(chunk))
                out.update(
                    self._conn.execute(
                        f"SELECT key, flag_json FROM comparisons WHERE key IN ({marks})", chunk
                    ).fetchall()
                )
        return out

    def cache_comparisons(self, items: Sequence[tuple[str, str]]) -> bool:
        """Store ``(key, flag_json)`` pairs; False (nothing stored) when the store cannot be written."""
        if not items or self.read_only:
            return not items
        try:
            with self._transaction():
                now = time.time()
                self._conn.executemany(
                    "INSERT OR REPLACE INTO comparisons VALUES (?, ?, ?)", [(k, v, now) for k, v in items]
                )
        except InputError:  # a read-only store: the comparisons are recomputed next time
            return False
        return True

    def migrations(self) -> Sequence[tuple[int, str, str]]:
        with self._guard("reading migrations"):
            return [
                (int(v), str(d), str(a))
                for v, d, a in self._conn.execute(
                    "SELECT version, description, applied_at FROM schema_migrations ORDER BY version"
                )
            ]


#: bounds of the stored values (a cell outside them is a tampered or corrupt store, named as such)
MAX_TIMESTAMP = 7.3e9  # seconds since the epoch: year 2201
MAX_MS = 1e9  # a median of 11 days is not a kernel time
MIN_POSITIVE = 5e-324
MAX_REL_STD_PCT = 1e9
MAX_COUNT = 2**53  # exact in a float, inside SQLite's INTEGER


class _Cells:
    """Type and range checks of one row's cells: a bad cell is an InputError naming store, row and column."""

    def __init__(self, where: str) -> None:
        self.where = where

    def _bad(self, key: str, value: object, want: str) -> InputError:
        return InputError(
            f"column must hold {want}, got {type(value).__name__} {value!r:.40}", path=self.where, key=key
        )

    def text(self, key: str, value: object, *, nullable: bool = False) -> None:
        if not (isinstance(value, str) or (nullable and value is None)):
            raise self._bad(key, value, "text")

    def real(self, key: str, value: object, lo: float, hi: float, *, nullable: bool = False) -> float | None:
        if value is None and nullable:
            return None
        if type(value) not in (int, float):
            raise self._bad(key, value, "a number")
        assert isinstance(value, (int, float))
        if isinstance(value, int) and not -(2**63) <= value < 2**63:
            raise self._bad(key, value, f"a number in [{lo:g}, {hi:g}]")
        number = float(value)
        if not (math.isfinite(number) and lo <= number <= hi):
            raise self._bad(key, value, f"a finite number in [{lo:g}, {hi:g}]")
        return number

    def integer(self, key: str, value: object, lo: int, hi: int, *, nullable: bool = False) -> int | None:
        if value is None and nullable:
            return None
        if type(value) is not int or not lo <= value <= hi:
            raise self._bad(key, value, f"an integer in [{lo}, {hi}]")
        return value


def _json(text: str, where: str, key: str) -> object:
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError(
            "malformed JSON in the history store (nested too deeply)", path=where, key=key
        ) from None
    except (TypeError, ValueError) as exc:
        raise InputError(f"malformed JSON in the history store ({exc})", path=where, key=key) from None


def _describe(exc: sqlite3.Error, doing: str) -> str:
    text = str(exc)
    if "not a database" in text or "malformed" in text:
        return f"history store is corrupt or not a SQLite file ({text}) while {doing}; move it aside to start afresh"
    if "locked" in text or "busy" in text:
        return f"history store is locked by another process ({text}) while {doing}; retry when it finishes"
    if "readonly" in text or "read-only" in text:
        return f"history store is read-only ({text}) while {doing}"
    if isinstance(exc, sqlite3.DatabaseError):  # undecodable text, a schema that contradicts itself…
        return (
            f"history store is corrupt or not a SQLite file ({text[:200]}) while {doing}; "
            "move it aside to start afresh"
        )
    return f"SQLite error while {doing}: {text}"


# --------------------------------------------------------------------------- the file, by descriptor

#: the largest store read into memory (a year of runs of a big suite is a few MiB)
MAX_STORE_BYTES = 256 * 1024 * 1024
#: the recording stores' lock file beside the store (flock: one writer at a time, threads included)
WRITER_LOCK_SUFFIX = ".lock"
# SQLite's unix-VFS lock bytes (os_unix.c): other programs' connections respect these
_PENDING_BYTE = 0x40000000
_SHARED_FIRST = _PENDING_BYTE + 2
_SHARED_SIZE = 510
_POLL_S = 0.01


@dataclass(frozen=True)
class _Image:
    data: bytes
    identity: tuple[int, int, int, int]  # (dev, ino, size, mtime_ns) of the file read


def _walk_parts(p: Path, root: Path | str | None) -> tuple[Path, list[str]]:
    """(the dir the descriptor walk starts from, the components below it down to the store's name)."""
    if root is not None:
        base = Path(root)
        try:
            rel = p.relative_to(base)
        except ValueError:
            raise UnsafePath(f"history store is not below the kernel dir {base}", path=str(p)) from None
        parts = list(rel.parts)
        if not parts or any(x in ("", ".", "..") for x in parts):
            raise UnsafePath(f"history store is not below the kernel dir {base}", path=str(p))
        return base, parts
    if p.parent.name == "workbench":
        return p.parent.parent, ["workbench", p.name]
    return p.parent, [p.name]


def _poll(attempt: object, timeout_s: float, what: str, where: str) -> None:
    """Call ``attempt()`` until it stops raising BlockingIOError/EACCES/EAGAIN, up to ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            attempt()  # type: ignore[operator]
            return
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise InputError(
                    f"cannot lock the history store: {exc.strerror or exc}", path=where
                ) from None
            if time.monotonic() >= deadline:
                raise InputError(
                    f"history store is locked by another process ({what}); retry when it finishes", path=where
                ) from None
            time.sleep(_POLL_S)


def _exclusive_writer_lock(dir_fd: int, name: str, where: str, timeout_s: float) -> int:
    """The writers' lock file (``history.sqlite.lock``, a regular file, no link), held with flock."""
    lock_name = name + WRITER_LOCK_SUFFIX
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(lock_name, flags, 0o644, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(
                "refused: the history store's lock file is a symlink", path=where + WRITER_LOCK_SUFFIX
            ) from None
        raise InputError(f"cannot open the history store's lock: {exc.strerror or exc}", path=where) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise UnsafePath(
                f"refused: the history store's lock is {file_type(st.st_mode)} with {st.st_nlink} link(s), "
                "not the store's own file",
                path=where + WRITER_LOCK_SUFFIX,
            )
        _poll(lambda: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB), timeout_s, "another recording", where)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_store_file(dir_fd: int, name: str, where: str, *, for_write: bool) -> int | None:
    """A descriptor of the store file (regular, no link; for a write also st_nlink == 1), or None."""
    flags = (
        os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath("refused: the history store is a symlink (not followed)", path=where) from None
        raise InputError(f"cannot open the history store: {exc.strerror or exc}", path=where) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise InputError(
            f"history store is not a regular file ({file_type(st.st_mode)}): refused unread", path=where
        )
    if for_write and st.st_nlink != 1:
        os.close(fd)
        raise UnsafePath(
            f"refused: the history store has {st.st_nlink} hard links (another file shares it); "
            "move it aside",
            path=where,
        )
    if st.st_size > MAX_STORE_BYTES:
        os.close(fd)
        raise InputError(
            f"history store is {st.st_size:,} bytes, over the {MAX_STORE_BYTES:,}-byte limit: refused unread",
            path=where,
        )
    return fd


def _ident(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _identity_at(dir_fd: int, name: str) -> tuple[int, int, int, int] | None:
    try:
        return _ident(os.stat(name, dir_fd=dir_fd, follow_symlinks=False))
    except OSError:
        return None


def _read_image(dir_fd: int, name: str, where: str, timeout_s: float, *, for_write: bool) -> _Image | None:
    """The store's bytes read under SQLite's SHARED lock (None: no file); an interrupted write of
    another program (a hot ``-journal``) is refused, not read half-done."""
    fd = _open_store_file(dir_fd, name, where, for_write=for_write)
    if fd is None:
        return None
    try:

        def shared() -> None:
            fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, _PENDING_BYTE)
            try:
                fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, _SHARED_SIZE, _SHARED_FIRST)
            finally:
                fcntl.lockf(fd, fcntl.LOCK_UN, 1, _PENDING_BYTE)

        _poll(shared, timeout_s, "a write in progress", where)
        try:
            journal = os.stat(name + "-journal", dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            journal = None
        if journal is not None and journal.st_size > 0:
            raise InputError(
                "history store has an unfinished write of another program (history.sqlite-journal); "
                "open it with sqlite3 to recover it, or move both aside",
                path=where,
            )
        st = os.fstat(fd)
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_STORE_BYTES:
                raise InputError("history store grew past its size limit while reading: refused", path=where)
        return _Image(b"".join(chunks), _ident(st))
    except OSError as exc:
        raise InputError(f"cannot read the history store: {exc.strerror or exc}", path=where) from None
    finally:
        os.close(fd)  # releases the lock


@contextmanager
def _foreign_exclusive(
    dir_fd: int, name: str, where: str, timeout_s: float
) -> Iterator[tuple[int, int, int, int] | None]:
    """SQLite's EXCLUSIVE lock on the current file (other programs' connections wait) around a write-back;
    yields the file's identity (None: no file yet)."""
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        yield None
        return
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath("refused: the history store is a symlink (not followed)", path=where) from None
        raise InputError(f"cannot write the history store: {exc.strerror or exc}", path=where) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise UnsafePath(
                f"refused: the history store is {file_type(st.st_mode)} with {st.st_nlink} link(s)",
                path=where,
            )

        def exclusive() -> None:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _PENDING_BYTE)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, _SHARED_SIZE, _SHARED_FIRST)
            except BaseException:
                fcntl.lockf(fd, fcntl.LOCK_UN, 1, _PENDING_BYTE)
                raise

        _poll(exclusive, timeout_s, "a reader or writer of another program", where)
        yield _ident(st)
    finally:
        os.close(fd)
