"""Per-config capture store (issue 26): one gzip member per launch set + an index, read lazily.

Launch values are the SYNTHETIC edge cases of tests/unit/test_capture_launches_io.py; the conversion of
today's files is checked on every REAL recorded session's ``workbench/launches.json.gz``.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
from test_capture_launches_io import sample_sets

from cutile_workbench.artifacts import launch_store, launches_io
from cutile_workbench.errors import InputError
from cutile_workbench.model import LaunchSet

PROFILES = Path(__file__).resolve().parents[2] / "cutile_workbench" / "profiles"
RECORDED = sorted(PROFILES.glob("*/session/*/workbench/launches.json.gz"))


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "user-cache"
    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(d))
    return d


def many_sets(n: int) -> list[LaunchSet]:
    """SYNTHETIC: n configs × 2 backends, each a copy of the sample's call with its own params."""
    base = sample_sets()[0]
    out = []
    for i in range(n):
        for backend in ("cutile", "cutile-rs"):
            out.append(
                LaunchSet(
                    nodeid=f"p::T::test_perf[{backend}-{i}-2]",
                    backend=backend,
                    params=f"{i}-2",
                    calls=base.calls,
                )
            )
    return out


def test_store_is_still_the_v1_document_for_old_readers(tmp_path: Path) -> None:
    path = tmp_path / "workbench" / "launches.json.gz"
    launch_store.write_store(path, sample_sets())
    assert launches_io.load_launch_sets(path) == sample_sets()  # whole-file reader: same sets
    assert json.loads(gzip.decompress(path.read_bytes()))["version"] == 1
    assert (tmp_path / "workbench" / "launches.idx.json").is_file()
    store = launch_store.open_store(path)
    assert list(store) == sample_sets() and len(store) == 2
    assert store.for_params("1-2") == sample_sets() and store.for_params("9-9") == []


def test_one_config_decodes_only_its_members(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "launches.json.gz"
    sets = many_sets(300)
    launch_store.write_store(path, sets)
    decoded: list[str] = []
    real = launches_io._Reader.launch_set

    def counting(self, value, key):  # type: ignore[no-untyped-def]
        decoded.append(key)
        return real(self, value, key)

    monkeypatch.setattr(launches_io._Reader, "launch_set", counting)
    store = launch_store.open_store(path)
    assert decoded == []  # opening reads the index only
    got = store.for_params("123-2")
    assert got == [s for s in sets if s.params == "123-2"] and len(decoded) == 2
    assert store.params()[:2] == ["0-2", "1-2"] and len(store.params()) == 300


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.parts[-4])
def test_recorded_sessions_open_through_a_user_cache_never_written_beside(
    path: Path, cache_dir: Path
) -> None:
    """REAL recorded files (one gzip member, no index): converted once into the user cache dir."""
    before = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in path.parent.iterdir()}
    store = launch_store.open_store(path)
    assert list(store) == launches_io.load_launch_sets(path)
    assert {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in path.parent.iterdir()} == before
    cached = list(cache_dir.glob("launches/*/launches.json.gz"))
    assert len(cached) == 1 and launches_io.load_launch_sets(cached[0]) == list(store)
    again = launch_store.open_store(path)  # second open: the cached index, no conversion
    assert again._data_path == cached[0] and again.entries == store.entries
    some = store.params()[0]
    assert again.for_params(some) == [s for s in launches_io.load_launch_sets(path) if s.params == some]


def test_without_a_writable_cache_the_conversion_stays_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    legacy = tmp_path / "launches.json.gz"
    launches_io.save_launch_sets(legacy, many_sets(5))
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(blocker / "cache"))
    store = launch_store.open_store(legacy)
    assert store._data is not None and list(store) == many_sets(5)


def test_a_data_file_rewritten_by_another_writer_makes_the_index_stale(tmp_path: Path) -> None:
    path = tmp_path / "launches.json.gz"
    launch_store.write_store(path, many_sets(3))
    launches_io.save_launch_sets(path, many_sets(4))  # the old whole-file writer, index left behind
    os.utime(path, ns=(1, 1))
    assert list(launch_store.open_store(path)) == many_sets(4)


def test_merge_copies_members_without_parsing(tmp_path: Path) -> None:
    path = tmp_path / "launches.json.gz"
    launch_store.write_store(path, many_sets(3))
    store = launch_store.open_store(path)
    keep = [i for i, e in enumerate(store.entries) if e.params != "1-2"]
    new = many_sets(5)[2:4]  # params 1-2 (replaced) and 2-2 (duplicate key appended after)
    launch_store.write_store(path, [*store.raw_members(keep), *new])
    merged = list(launch_store.open_store(path))
    assert merged == [s for s in many_sets(3) if s.params != "1-2"] + new
    assert launches_io.load_launch_sets(path) == merged


@pytest.mark.parametrize(
    "mutate,key",
    [
        (lambda d: d["sets"][1].pop("backend"), "sets[1].backend"),
        (
            lambda d: d["sets"][0]["calls"][0]["launches"][0].update(end_ns=10),
            "sets[0].calls[0].launches[0].end_ns",
        ),
        (lambda d: d.update(version=2), "version"),
    ],
)
def test_malformed_legacy_files_are_refused_at_open_naming_the_key(tmp_path: Path, mutate, key) -> None:  # type: ignore[no-untyped-def]
    doc = {"version": 1, "sets": [launches_io.set_to_dict(s) for s in sample_sets()]}
    mutate(doc)
    path = tmp_path / "launches.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    with pytest.raises(InputError) as err:
        launch_store.open_store(path)
    assert err.value.key == key and str(path) in str(err.value)


def test_corrupt_member_names_the_file_and_set(tmp_path: Path) -> None:
    path = tmp_path / "launches.json.gz"
    launch_store.write_store(path, many_sets(3))
    store = launch_store.open_store(path)
    e = store.entries[4]
    raw = bytearray(path.read_bytes())
    raw[e.offset + e.length - 6] ^= 0xFF  # inside the member's CRC/size trailer
    st = path.stat()
    path.write_bytes(bytes(raw))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and mtime …
    with pytest.raises(InputError) as err:  # … but not the same content: the index is stale (issue 33 §7),
        launch_store.open_store(path)  # the file is converted, and the corrupt member refused at open
    assert str(path) in str(err.value)


def test_an_edit_keeping_size_and_mtime_is_seen(tmp_path: Path) -> None:
    """SYNTHETIC edit of a launch's duration that keeps the file's size and mtime (issue 33 §7: the
    timeline showed the old 51.13 µs where the data said 153.39 µs)."""
    path = tmp_path / "launches.json"
    sets = many_sets(2)
    path.write_text(json.dumps({"version": 1, "sets": [launches_io.set_to_dict(s) for s in sets]}))
    first = launch_store.open_store(path)
    end = first[0].calls[0].launches[0].end_ns
    st = path.stat()
    text = path.read_text()
    new_end = int(str(end)[:-1] + str((int(str(end)[-1]) + 1) % 10))  # one digit changed, same length
    edited = text.replace(f'"end_ns": {end}', f'"end_ns": {new_end}', 1)
    assert edited != text and len(edited) == len(text)
    path.write_text(edited)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    again = launch_store.open_store(path)
    assert again[0].calls[0].launches[0].end_ns == new_end


def test_a_hostile_index_is_ignored_never_followed(tmp_path: Path) -> None:
    """SYNTHETIC indexes beside a real store: a FIFO (blocked every reader), a link to /dev/zero
    (MemoryError), deep nesting (RecursionError), overlapping duplicate entries (142.7 s CPU)."""
    path = tmp_path / "launches.json.gz"
    index = launch_store.write_store(path, many_sets(3))
    good = json.loads(index.read_text())
    want = [s.params for s in launch_store.open_store(path)]
    plants = {
        "fifo": lambda: os.mkfifo(index),
        "zero": lambda: os.symlink("/dev/zero", index),
        "deep": lambda: index.write_text("[" * 100_000 + "]" * 100_000),
        "dupes": lambda: index.write_text(json.dumps({**good, "entries": good["entries"] * 1000})),
    }
    for name, plant in plants.items():
        index.unlink()
        plant()
        assert [s.params for s in launch_store.open_store(path)] == want, name


def test_default_json_spacing_streams_without_the_whole_file_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A valid file dumped with json.dump's default spacing (issue 33 §5: it fell back to the whole-file
    reader, which preallocated its cap)."""
    path = tmp_path / "launches.json"
    sets = many_sets(3)
    path.write_text(json.dumps({"version": 1, "sets": [launches_io.set_to_dict(s) for s in sets]}, indent=1))

    def no_fallback(*_a: object, **_k: object) -> None:
        raise AssertionError("the whole-file reader was used")

    monkeypatch.setattr(launch_store, "load_launch_sets", no_fallback)
    assert [s.params for s in launch_store.open_store(path)] == [s.params for s in sets]


def test_unreadable_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        launch_store.open_store(tmp_path / "missing.json.gz")
    (tmp_path / "junk.json.gz").write_bytes(b"\x1f\x8bnot gzip")
    with pytest.raises(InputError):
        launch_store.open_store(tmp_path / "junk.json.gz")


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.parts[-4])
def test_f_reads_each_set_once_and_sees_the_same_summaries(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REAL recorded captures: F's per-row summaries through the store = through the whole list, and a
    store's sets are decoded once for all rows (F reads every row twice), then never again."""
    from cutile_workbench.evidence.launches import pick_sets, pick_summaries, summarize_launch_set
    from cutile_workbench.model import RatioRow

    sets = launches_io.load_launch_sets(path)
    store = launch_store.open_store(path)
    decoded: list[str] = []
    real = launches_io._Reader.launch_set

    def counting(self, value, key):  # type: ignore[no-untyped-def]
        decoded.append(key)
        return real(self, value, key)

    monkeypatch.setattr(launches_io._Reader, "launch_set", counting)
    backends = sorted({s.backend for s in sets})
    for _ in range(2):
        for params in sorted({s.params for s in sets}):
            row = RatioRow("f", params, None, backends[0], 1.0, 1.0, 1.0, "OK")
            c, b = pick_sets(sets, row, backends[-1])
            want = (summarize_launch_set(c) if c else None, summarize_launch_set(b) if b else None)
            assert pick_summaries(store, row, backends[-1]) == want
    assert len(decoded) <= len(store) and len(set(decoded)) == len(decoded)
    decoded.clear()
    again = launch_store.open_store(path)  # another process: the summaries come from the user cache
    from cutile_workbench.artifacts import derive_cache

    derive_cache._DERIVED.clear()
    row = RatioRow("f", sets[0].params, None, backends[0], 1.0, 1.0, 1.0, "OK")
    pick_summaries(again, row, backends[-1])
    assert decoded == []
