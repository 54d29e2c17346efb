"""The history store: ``<kernel>/workbench/history.sqlite`` (SQLite from the standard library).

Contract:
- Schema = :data:`MIGRATIONS`, applied in order and recorded in ``schema_migrations(version,
  description, applied_at)``; ``PRAGMA application_id`` marks the file as ours. Opening a file
  whose newest applied migration is above :data:`SCHEMA_VERSION`, a SQLite file of another
  application, a non-SQLite/corrupt file, or one locked longer than ``timeout_s`` raises
  :class:`~cutile_workbench.errors.InputError` naming the file (exit 2 in the CLI); no reader method lets
  a ``sqlite3.Error`` escape.
- Writes are transactions (``BEGIN IMMEDIATE`` … ``COMMIT``, ``ROLLBACK`` on any error): a run is
  stored with all its configs and its source row, or not at all. Rollback journal
  (``journal_mode=DELETE``, ``synchronous=FULL``) rather than WAL: out roots often live on network
  file systems, where WAL's shared memory does not work.
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

import json
import math
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cutile_workbench.errors import InputError
from cutile_workbench.history.entries import ConfigResult, RunEntry
from cutile_workbench.history.provenance import Provenance, provenance_from_dict

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

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(
        cls, path: Path | str, *, create: bool = True, timeout_s: float = 5.0, read_only: bool = False
    ) -> HistoryStore:
        """Open (and migrate) the store at ``path``; ``create=False`` refuses a missing file.

        ``read_only`` (the overview): an existing store opened with SQLite's ``mode=ro``, never
        migrated or written (comparisons are decided and not cached; an older schema is read as it is)."""
        p = Path(path)
        if read_only:
            create = False
        if not create and not p.is_file():
            raise InputError("no history store (no run has been recorded or imported here)", path=str(p))
        if p.exists() and not p.is_file():  # a FIFO or device would hang or feed SQLite garbage
            raise InputError("history store is not a regular file: refused unread", path=str(p))
        if create:
            try:
                p.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # workbench/ is a file or FIFO, or the dir is read-only
                raise InputError(
                    f"cannot create the history store's dir: {exc.strerror or exc}", path=str(p.parent)
                ) from None
        try:
            if read_only:
                conn = sqlite3.connect(
                    f"{p.resolve().as_uri()}?mode=ro", timeout=timeout_s, isolation_level=None, uri=True
                )
            else:
                conn = sqlite3.connect(str(p), timeout=timeout_s, isolation_level=None)
        except sqlite3.Error as exc:
            raise InputError(f"cannot open the history store: {exc}", path=str(p)) from None
        store = cls(conn, str(p), p)
        store.read_only = read_only
        try:
            store._prepare(timeout_s)
        except BaseException:
            conn.close()
            raise
        return store

    @classmethod
    def in_memory(cls) -> HistoryStore:
        store = cls(sqlite3.connect(":memory:", isolation_level=None), ":memory:", None)
        store._prepare(0.0)
        return store

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _guard(self, doing: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise InputError(_describe(exc, doing), path=self.label) from None

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
            for migration in MIGRATIONS:
                if migration.version > current and not self.read_only:
                    self._migrate(migration)

    def _migrate(self, migration: Migration) -> None:
        with self._transaction():
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
    def _transaction(self) -> Iterator[None]:
        with self._guard("writing"):
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

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
            where = f"{self.label}: runs.id={run_id}"
            cell = _Cells(where)
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
            cell = _Cells(f"{self.label}: configs run_id={run_id} {nodeid!r:.200}")
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
    return f"SQLite error while {doing}: {text}"
