"""The SQLite history store: migrations, atomic writes, and refusals of bad files (never a crash).

Entries are built from a REAL recorded log (``cutile_workbench/profiles/rms_norm/session/rms_norm``); the broken
files (random bytes, a foreign SQLite file, a newer schema, a held lock) are SYNTHETIC.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cutile_workbench.artifacts.perflog.parser import parse_perf_log
from cutile_workbench.errors import InputError
from cutile_workbench.history.entries import RunEntry, entry_from_log
from cutile_workbench.history.provenance import HarnessInfo, Provenance
from cutile_workbench.history.store import APPLICATION_ID, SCHEMA_VERSION, HistoryStore

LOG = (
    Path(__file__).resolve().parents[2]
    / "cutile_workbench"
    / "profiles"
    / "rms_norm"
    / "session"
    / "rms_norm"
    / "baseline_perf_triton_tileir.txt"
)


def real_entry(role: str = "baseline_triton_tileir") -> RunEntry:
    prov = Provenance(
        source="imported",
        harness=HarnessInfo("workbench", {"WORKBENCH_SETTLE_US": "0"}),
        host="vm",
        started_at=1795970661.0,
        unknown={"gpu": "not recorded"},
    )
    entry = entry_from_log(
        "rms_norm",
        role,
        parse_perf_log(LOG),
        prov,
        source="import",
        log_sha256="ab" * 32,
        recorded_at=1795970661.0,
        recorded_at_origin="test",
    )
    assert entry is not None
    return entry


def test_round_trip_keeps_every_number_and_the_provenance(tmp_path):
    path = tmp_path / "workbench" / "history.sqlite"
    entry = real_entry()
    with HistoryStore.open(path) as store:
        assert store.add(entry) is True
        assert store.add(entry) is False  # same measurements: one run
    with HistoryStore.open(path, create=False) as store:
        assert [m[0] for m in store.migrations()] == list(range(1, SCHEMA_VERSION + 1))
        (run,) = store.runs()
        assert run.run_key == entry.run_key and run.roles == ("baseline_triton_tileir",)
        assert run.provenance == entry.provenance and run.n_configs == 7
        rows = dict(((c.params, c.backend), c) for _rid, c in store.configs())
    first = entry.configs[0]
    stored = rows[(first.params, first.backend)]
    assert stored == first and stored.samples_ms is not None and len(stored.samples_ms) == 200
    assert stored.capture_source == "cupti" and stored.launches_per_call == 1
    raw = sqlite3.connect(path)  # queryable with plain SQL, samples included (json_each)
    n = raw.execute(
        "SELECT COUNT(*) FROM configs c, json_each(c.samples_json) WHERE c.params = ?", (first.params,)
    ).fetchone()[0]
    assert n == 200 and raw.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    raw.close()


def test_a_second_role_of_the_same_run_is_a_source_not_a_run(tmp_path):
    with HistoryStore.open(tmp_path / "h.sqlite") as store:
        store.add(real_entry("baseline_cutile"), source_path="baseline_perf_cutile.txt")
        store.add(real_entry("candidate"), source_path="reports/agent_logs/perf_cutile_rs.full.txt")
        (run,) = store.runs()
        assert run.roles == ("baseline_cutile", "candidate")
        assert store.run_for_file("ab" * 32) == run.run_key


def test_a_failed_write_leaves_nothing(tmp_path):
    """SYNTHETIC: a config listed twice violates the primary key half-way through the insert."""
    entry = real_entry()
    broken = dataclasses.replace(entry, configs=(*entry.configs, entry.configs[0]))
    with HistoryStore.open(tmp_path / "h.sqlite") as store:
        with pytest.raises(InputError) as err:
            store.add(broken)
        assert "h.sqlite" in str(err.value)
        assert store.runs() == [] and store.configs() == []
        assert store.add(entry) is True  # the store is still usable


def test_corrupt_file_is_refused_naming_it(tmp_path):
    bad = tmp_path / "history.sqlite"
    bad.write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(InputError) as err:
        HistoryStore.open(bad)
    assert str(bad) in str(err.value) and "corrupt" in err.value.message
    assert bad.read_bytes().startswith(b"this is not")  # nothing overwritten


def test_foreign_sqlite_file_is_refused(tmp_path):
    path = tmp_path / "history.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (x TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(InputError, match="not a cutile-workbench history store"):
        HistoryStore.open(path)


def test_newer_schema_is_refused_for_reading_and_writing(tmp_path):
    path = tmp_path / "history.sqlite"
    HistoryStore.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_migrations VALUES (99, 'from the future', '2030-01-01T00:00:00Z')")
    conn.commit()
    conn.close()
    with pytest.raises(InputError) as err:
        HistoryStore.open(path)
    assert (
        "newer" in err.value.message and err.value.key == "schema_migrations" and str(path) in str(err.value)
    )


def test_locked_store_times_out_with_a_clear_error(tmp_path):
    """Another program (a sqlite3 connection in another process) holds the store EXCLUSIVE: SQLite's
    locks are per process, so the holder is a real second process."""
    path = tmp_path / "history.sqlite"
    HistoryStore.open(path).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
            "c.execute('BEGIN EXCLUSIVE'); print('held', flush=True); sys.stdin.read()",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(InputError) as err, HistoryStore.open(path, timeout_s=0.2) as store:
            store.add(real_entry())
        assert "locked" in err.value.message and str(path) in str(err.value)
        with pytest.raises(InputError, match="locked"):  # a reader waits for the writer too
            HistoryStore.open(path, timeout_s=0.2, read_only=True)
    finally:
        holder.communicate("")


def test_concurrent_writers_serialise(tmp_path):
    """Two threads append the same and different runs at once: no error, no duplicate."""
    path = tmp_path / "history.sqlite"
    HistoryStore.open(path).close()
    entries = [real_entry(), dataclasses.replace(real_entry(), run_key="f" * 64)]
    errors: list[BaseException] = []

    def write(e: RunEntry) -> None:
        try:
            with HistoryStore.open(path) as store:
                for _ in range(5):
                    store.add(e)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(e,)) for e in entries * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with HistoryStore.open(path) as store:
        assert len(store.runs()) == 2


def test_missing_store_for_reading(tmp_path):
    with pytest.raises(InputError, match="no history store"):
        HistoryStore.open(tmp_path / "none.sqlite", create=False)


@pytest.mark.parametrize(
    ("sql", "key"),
    [
        ("UPDATE configs SET run_id = 999", "run_id"),  # orphaned rows (KeyError in table/calibrate before)
        ("UPDATE configs SET run_id = 'one'", "run_id"),  # a non-integer id (ValueError before)
    ],
)
def test_orphaned_and_mistyped_ids_are_named(tmp_path, sql, key):
    """SYNTHETIC damage to a store holding a REAL run (issue 33 §6): a located InputError, never a crash."""
    path = tmp_path / "workbench" / "history.sqlite"
    with HistoryStore.open(path) as store:
        store.add(real_entry())
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute(sql)
    conn.commit()
    conn.close()
    with pytest.raises(InputError) as err, HistoryStore.open(path, read_only=True) as store:
        store.runs()
        store.configs()
    assert err.value.key == key and str(path) in str(err.value)
