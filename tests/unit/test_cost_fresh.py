"""Issue 31, a FRESH session: the first command after a run reads each config's captures as columns,
not as one Python object per launch (counted, not timed: these hold on any box).

Sessions: the REAL recorded H200 matmul session (6 configs) replicated to N configs by
``bench/scale_cost.py``'s builder, written as the runner writes them (``launch_store.write_store``), and
"one config changed" by the same file's :func:`rerecord_config`. Equality of the column-wise summary
with the object-wise one is checked on every set of every REAL recorded session and on SYNTHETIC edge
cases (labelled below). What is counted: capture members decoded (``LaunchStore._payload``), launch
objects built (``launches_io._Reader.launch``), per-config trust derivations.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import scale_cost  # noqa: E402

from cutile_workbench.artifacts import launch_store, launches_io  # noqa: E402
from cutile_workbench.model import CallCapture, Launch, LaunchSet  # noqa: E402

N = 40
PROFILES = REPO / "cutile_workbench" / "profiles"
RECORDED = sorted(PROFILES.glob("*/session/*/workbench/launches.json.gz"))


def _forget_process_memos() -> None:
    """What a new process starts with: nothing derived in memory."""
    from cutile_workbench.artifacts import config_cache, derive_cache
    from cutile_workbench.artifacts.perflog import index, parser
    from cutile_workbench.stages.e import e_table

    derive_cache._DERIVED.clear()
    e_table._MEMORY.clear()
    getattr(parser, "_MEMO", {}).clear()
    config_cache.forget()
    index.forget()


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(tmp_path / "user-cache"))  # a fresh cache
    _forget_process_memos()
    return scale_cost.build_session(tmp_path / "out", N)


class Counts:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from cutile_workbench.evidence import trust

        self.decodes: Counter[int] = Counter()
        self.launch_objects = 0
        self.rows: Counter[str] = Counter()
        real_payload = launch_store.LaunchStore._payload
        real_launch = launches_io._Reader.launch
        real_derive = trust._derive_config

        def payload(store: Any, i: int) -> bytes:
            self.decodes[i] += 1
            return real_payload(store, i)

        def launch(reader: Any, value: Any, key: str) -> Any:
            self.launch_objects += 1
            return real_launch(reader, value, key)

        def derive(row: Any, *a: Any, **kw: Any) -> Any:
            self.rows[row.params] += 1
            return real_derive(row, *a, **kw)

        monkeypatch.setattr(launch_store.LaunchStore, "_payload", payload)
        monkeypatch.setattr(launches_io._Reader, "launch", launch)
        monkeypatch.setattr(trust, "_derive_config", derive)


def _cli(root: Path, *argv: str) -> tuple[int, str]:
    from cutile_workbench.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = main(["--out-root", str(root), *argv])
    return rc, out.getvalue()


@pytest.mark.parametrize(
    "argv",
    [("table", "matmul", "--json"), ("report", "f", "matmul", "--dry-run")],
    ids=["table", "report-f"],
)
def test_fresh_session_derives_trust_without_decoding_a_capture_member(
    session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...]
) -> None:
    """A fresh process and user cache: every config's trust is derived once, from the store's columns —
    no member decoded, no launch object built (today: 2 members a config, one object per launch:
    ~11,000 at 40 configs)."""
    kdir, _ = session
    counts = Counts(monkeypatch)
    rc, _out = _cli(kdir.parent, *argv)
    assert rc in (0, 1)
    assert len(counts.rows) == N and max(counts.rows.values()) == 1, counts.rows.most_common(2)
    assert sum(counts.decodes.values()) == 0, counts.decodes.most_common(3)
    assert counts.launch_objects == 0


def test_after_one_config_changed_nothing_is_decoded(
    session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A re-run of one config rewrites the store keeping the others' members AND their columns: the next
    `table` derives that config alone and decodes nothing (today: its two members)."""
    kdir, config = session
    assert _cli(kdir.parent, "table", "matmul", "--json")[0] in (0, 1)
    scale_cost.rerecord_config(kdir, config)
    _forget_process_memos()
    counts = Counts(monkeypatch)
    assert _cli(kdir.parent, "table", "matmul", "--json")[0] in (0, 1)
    assert dict(counts.rows) == {config: 1}
    assert sum(counts.decodes.values()) == 0 and counts.launch_objects == 0


def _strip_paths(text: str, kdir: Path) -> str:
    return text.replace(str(kdir.parent), "<root>")


def test_table_from_columns_is_the_table_from_decoded_members(
    session: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same `table --json` (identity, reference config, every cell) whether trust reads the columns
    or decodes every member (the columns file removed: the store of an older writer)."""
    kdir, _ = session
    rc, with_columns = _cli(kdir.parent, "table", "matmul", "--json")
    assert rc in (0, 1)
    launch_store.columns_path_for(kdir / "workbench/launches.json.gz").unlink()
    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(tmp_path / "user-cache-2"))
    _forget_process_memos()
    counts = Counts(monkeypatch)
    rc2, decoded = _cli(kdir.parent, "table", "matmul", "--json")
    assert rc2 == rc
    assert sum(counts.decodes.values()) == 2 * N  # no columns: each member decoded once
    assert json.loads(with_columns) == json.loads(decoded)


# --------------------------------------------------------------------------- the column-wise summary


def _summaries_equal(s: LaunchSet) -> None:
    from cutile_workbench.evidence.launches import summarize_columns, summarize_launch_set

    want = summarize_launch_set(s)
    got = summarize_columns(
        launch_store.columns_of(s), backend=s.backend, params=s.params, source=s.source, nodeid=s.nodeid
    )
    assert got == want
    if want is not None:
        assert got is not None
        # the fields equality does not compare
        assert got.main_durations_ns == want.main_durations_ns
        assert got.attribution == want.attribution


@pytest.mark.parametrize("path", RECORDED, ids=[f"{p.parts[-5]}-{p.parts[-3]}" for p in RECORDED])
def test_column_summary_equals_object_summary_on_every_recorded_set(path: Path) -> None:
    sets = launches_io.load_launch_sets(path)
    assert sets
    for s in sets:
        _summaries_equal(s)


def _launch(name: str, dur: int, t: int, kind: str = "kernel", **kw: Any) -> Launch:
    return Launch(kind=kind, name=name, start_ns=t, end_ns=t + dur, correlation_id=t, **kw)  # type: ignore[arg-type]


def _set(calls: list[tuple[Launch, ...]]) -> LaunchSet:
    return LaunchSet(
        nodeid="p::T::test_perf[cutile-1]",
        backend="cutile",
        params="1",
        calls=[CallCapture(i, "cutile", 0, 1, ls) for i, ls in enumerate(calls)],
    )


EDGE_CASES = {  # SYNTHETIC
    "no calls": _set([]),
    "calls without launches": _set([(), ()]),
    "memcpy only": _set([(_launch("Memcpy DtoD", 5, 1, "memcpy"),)]),
    "two signatures, the later one more common": _set(
        [
            (_launch("a", 10, 1),),
            (_launch("b", 20, 2), _launch("a", 11, 3)),
            (_launch("b", 21, 4), _launch("a", 12, 5)),
        ]
    ),
    "a tie between signatures (first seen wins)": _set(
        [(_launch("b", 20, 2), _launch("a", 11, 3)), (_launch("a", 10, 1),)]
    ),
    "same count, other order": _set(
        [(_launch("a", 10, 1), _launch("b", 20, 2)), (_launch("b", 21, 3), _launch("a", 11, 4))]
    ),
    "a kernel launched twice a call, an even number of samples": _set(
        [(_launch("k", 10, 1), _launch("k", 13, 2)), (_launch("k", 12, 3), _launch("k", 15, 4))]
    ),
    "helper outlasting the main kernel, resources per launch": _set(
        [
            (
                _launch("void at::native::elementwise_kernel<AddFunctor>", 99, 1),
                _launch("gemm_entry", 10, 2, grid=(4, 1, 1), block=(128, 1, 1), registers_per_thread=96),
            ),
            (
                _launch("void at::native::elementwise_kernel<AddFunctor>", 98, 3),
                _launch("gemm_entry", 11, 4, grid=(4, 1, 1), block=(128, 1, 1), cluster=(2, 1, 1)),
            ),
        ]
    ),
    "only ATen kernels, demangled names and smem": _set(
        [
            (
                _launch("_ZN2at6native5fillE", 5, 1, demangled="at::native::fill", static_smem=0),
                _launch("_ZN2at6native4copyE", 7, 2, dynamic_smem=64),
            )
        ]
    ),
}


@pytest.mark.parametrize("name", list(EDGE_CASES))
def test_column_summary_equals_object_summary_on_edge_cases(name: str) -> None:
    _summaries_equal(EDGE_CASES[name])


def test_set_facts_from_columns_equal_those_from_the_decoded_set(tmp_path: Path) -> None:
    """What identity reads (kernel symbols, calls, summary) is the same from a store's columns as from
    its decoded sets, on the REAL matmul session's captures."""
    from cutile_workbench.evidence.launches import config_facts, set_facts

    src = PROFILES / "tilegym" / "session" / "matmul" / "workbench" / "launches.json.gz"
    data = tmp_path / "launches.json.gz"
    launch_store.write_store(data, launches_io.load_launch_sets(src))
    store = launch_store.open_store(data)
    assert all(store.columns(i) is not None for i in range(len(store)))
    for params in store.params():
        got = config_facts(store, params)
        want = [set_facts(s) for s in store.for_params(params)]
        assert got == want
        assert [f.summary.main_durations_ns for f in got if f.summary] == [
            f.summary.main_durations_ns for f in want if f.summary
        ]


# --------------------------------------------------------------------------- the columns file, guarded


def _written(tmp_path: Path) -> Path:
    src = PROFILES / "tilegym" / "session" / "matmul" / "workbench" / "launches.json.gz"
    data = tmp_path / "w" / "launches.json.gz"
    launch_store.write_store(data, launches_io.load_launch_sets(src))
    return data


def test_old_readers_see_the_same_document_and_index(tmp_path: Path) -> None:
    """The data file is still the v1 document; the index keeps its version (old readers ignore the new
    ``columns`` key)."""
    data = _written(tmp_path)
    src = PROFILES / "tilegym" / "session" / "matmul" / "workbench" / "launches.json.gz"
    assert launches_io.load_launch_sets(data) == launches_io.load_launch_sets(src)
    doc = json.loads(launch_store.index_path_for(data).read_bytes())
    assert doc["version"] == launch_store.INDEX_VERSION == 2
    assert doc["columns"]["size"] == launch_store.columns_path_for(data).stat().st_size


@pytest.mark.parametrize(
    "damage",
    ["truncated", "other bytes, same size", "absent", "a link", "garbage with a matching index"],
)
def test_a_damaged_columns_file_is_ignored_and_the_members_decoded(tmp_path: Path, damage: str) -> None:
    data = _written(tmp_path)
    cols = launch_store.columns_path_for(data)
    raw = cols.read_bytes()
    if damage == "truncated":
        cols.write_bytes(raw[: len(raw) // 2])
    elif damage == "other bytes, same size":
        cols.write_bytes(bytes(255 - b for b in raw))
    elif damage == "absent":
        cols.unlink()
    elif damage == "a link":
        other = tmp_path / "elsewhere.npz"
        other.write_bytes(raw)
        cols.unlink()
        cols.symlink_to(other)
    else:  # SYNTHETIC: a columns file whose index entries point out of range, the index rewritten to match
        import hashlib

        import numpy as np

        buf = io.BytesIO()
        np.savez(
            buf,
            meta=np.frombuffer(b'{"version":1,"sets":[[0,["k"],[],[]]]}', dtype=np.uint8),
            ncalls=np.array([1], dtype=np.int64),
            calls=np.array([1], dtype=np.int64),
            kinds=np.array([0], dtype=np.int8),
            names=np.array([5], dtype=np.int64),
            durations=np.array([1], dtype=np.int64),
            resources=np.array([0], dtype=np.int64),
        )
        cols.write_bytes(buf.getvalue())
        idx = launch_store.index_path_for(data)
        doc = json.loads(idx.read_bytes())
        doc["columns"] = {
            "version": 1,
            "size": len(buf.getvalue()),
            "sha256": hashlib.sha256(buf.getvalue()).hexdigest(),
        }
        idx.write_text(json.dumps(doc))
    store = launch_store.open_store(data)
    assert [store.columns(i) for i in range(len(store))] == [None] * len(store)
    from cutile_workbench.evidence.launches import config_facts, set_facts

    for params in store.params():  # facts still come, from the decoded sets
        assert config_facts(store, params) == [set_facts(s) for s in store.for_params(params)]


def test_a_merge_keeps_the_columns_of_copied_members(tmp_path: Path) -> None:
    """The runner's merge copies kept members as bytes: their columns travel with them."""
    data = _written(tmp_path)
    store = launch_store.open_store(data)
    new = dataclasses.replace(store[0], calls=store[0].calls[:3])
    launch_store.write_store(data, [new, *store.raw_members(range(1, len(store)))])
    merged = launch_store.open_store(data)
    assert all(merged.columns(i) is not None for i in range(len(merged)))
    assert merged.columns(0).n_calls == 3  # type: ignore[union-attr]


def test_a_recorded_session_s_conversion_has_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A recorded session (single gzip member, no index) is converted once into the user cache, its
    columns with it: its trust decodes nothing either."""
    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(tmp_path / "uc"))
    src = PROFILES / "tilegym" / "session" / "matmul" / "workbench" / "launches.json.gz"
    for _ in range(2):  # the conversion, then the cached one
        store = launch_store.open_store(src)
        assert all(store.columns(i) is not None for i in range(len(store)))


def test_a_fresh_command_reads_each_module_s_imports_once_for_its_code_keys(
    session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The code keys of E's table, trust and each derived value share most of their import closures:
    each module's imports are read once per process, and without ``ast.parse`` (today: parsed up to
    three times, ~290 parses a `table`)."""
    import ast

    from cutile_workbench.infra import codekey

    codekey.clear()
    scanned: Counter[str] = Counter()
    parsed: Counter[str] = Counter()
    real_scan, real_parse = codekey._scan_imports, ast.parse

    def scan(name: str, *a: Any) -> Any:
        scanned[name] += 1
        return real_scan(name, *a)

    def parse(source: Any, filename: str = "<unknown>", *a: Any, **kw: Any) -> Any:
        if "cutile_workbench" in str(filename):
            parsed[str(filename)] += 1
        return real_parse(source, filename, *a, **kw)

    monkeypatch.setattr(codekey, "_scan_imports", scan)
    monkeypatch.setattr(codekey.ast, "parse", parse)
    kdir, _ = session
    assert _cli(kdir.parent, "table", "matmul", "--json")[0] in (0, 1)
    assert len(scanned) > 50, "no code key was computed: the count would prove nothing"
    assert max(scanned.values()) == 1, scanned.most_common(3)
    assert not parsed, parsed.most_common(3)


def test_a_fresh_report_f_encodes_one_cached_entry_a_config(
    session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Summaries computed from the columns are cheaper to recompute than to decode from the user cache:
    they are not cached; the per-config entries written are trust's, one a config (today: trust's and
    a launch summary's, each summary with its ~300 durations encoded value by value)."""
    from cutile_workbench.artifacts import config_cache

    kinds: Counter[str] = Counter()
    real = config_cache.ConfigCache.put

    def put(cache: Any, params: str, digest: str, value: Any) -> None:
        kinds[cache.kind] += 1
        real(cache, params, digest, value)

    monkeypatch.setattr(config_cache.ConfigCache, "put", put)
    kdir, _ = session
    assert _cli(kdir.parent, "report", "f", "matmul", "--dry-run")[0] in (0, 1)
    assert dict(kinds) == {"trust-config": N}


def test_the_import_scan_finds_every_import_the_parser_finds_in_every_module() -> None:
    """Code keys read each module's imports with a regex instead of ``ast.parse`` (a fresh `table` parsed
    ~100 modules for them): conservative only if it misses nothing the parser finds, checked here on
    every module of the package (a module too many would only cost a recompute)."""
    from cutile_workbench.infra import codekey

    pkg = codekey._HERE
    checked = 0
    for f in sorted(pkg.rglob("*.py")):
        parts = list(f.relative_to(pkg.parent).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        data = f.read_bytes()
        parsed = codekey._parse_imports(name, data, f, pkg)
        assert parsed <= codekey._scan_imports(name, data, f, pkg), (name, parsed)
        checked += bool(parsed)
    assert checked > 100


@pytest.mark.parametrize(
    "source,want",
    [  # SYNTHETIC: the forms of import statement, one by one
        (b"import cutile_workbench.model as m, os\n", {"cutile_workbench.model"}),
        (b"from cutile_workbench.infra import (\n    bootstrap,  # why\n    jsonutil,\n)\n", None),
        (b"from cutile_workbench.infra import bootstrap, \\\n    jsonutil\n", None),
        (b"if x:\n    from ..infra import bootstrap\n", None),
        (b"from . import codekey\n", None),
        (b"from .. import model\n", None),
        (
            b"def f():\n    from cutile_workbench.errors import InputError; import cutile_workbench.model\n",
            None,
        ),
    ],
)
def test_the_import_scan_on_each_form_of_import(tmp_path: Path, source: bytes, want: set[str] | None) -> None:
    from cutile_workbench.infra import codekey

    pkg = codekey._HERE
    path = pkg / "infra" / "codekey.py"  # scanned as if it were this module's text
    name = "cutile_workbench.infra.codekey"
    parsed = codekey._parse_imports(name, source, path, pkg)
    assert parsed, "the parser finds nothing: the form proves nothing"
    assert parsed <= codekey._scan_imports(name, source, path, pkg)
    if want is not None:
        assert parsed == want


def test_a_fresh_report_f_summarizes_each_set_once(
    session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trust and F's launch evidence read the same summaries: one column-wise summary a set per process
    (without the store's memo: two, one for trust and one for F)."""
    from cutile_workbench.evidence import launches

    calls: Counter[tuple[str, str]] = Counter()
    real = launches.summarize_columns

    def summarize(cols: Any, **kw: Any) -> Any:
        calls[(kw["params"], kw["backend"])] += 1
        return real(cols, **kw)

    monkeypatch.setattr(launches, "summarize_columns", summarize)
    kdir, _ = session
    assert _cli(kdir.parent, "report", "f", "matmul", "--dry-run")[0] in (0, 1)
    assert len(calls) == 2 * N and max(calls.values()) == 1, calls.most_common(2)


def test_columns_that_would_expand_past_the_cap_are_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A zip bomb is refused by the declared sizes, before anything is inflated (the cap lowered here
    to the real file's own expanded size minus one)."""
    import zipfile

    data = _written(tmp_path)
    cols = launch_store.columns_path_for(data)
    with zipfile.ZipFile(cols) as zf:
        expanded = sum(i.file_size for i in zf.infolist())
    monkeypatch.setattr(launch_store, "MAX_COLUMNS_EXPANDED", expanded - 1)
    store = launch_store.open_store(data)
    assert store.columns(0) is None
    monkeypatch.setattr(launch_store, "MAX_COLUMNS_EXPANDED", expanded)
    assert launch_store.open_store(data).columns(0) is not None


def test_the_reference_config_space_is_looked_up_once_a_symbol(
    session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every row of a kernel names one of a few reference symbols: the configs space of each is found
    once per trust derivation (today: once a row, the analysis' spaces rebuilt every time)."""
    from cutile_workbench.evidence import trust

    symbols: Counter[str] = Counter()
    real = trust._space_for_symbol

    def space_for(symbol: Any, *a: Any) -> Any:
        symbols[str(symbol)] += 1
        return real(symbol, *a)

    monkeypatch.setattr(trust, "_space_for_symbol", space_for)
    kdir, _ = session
    assert _cli(kdir.parent, "table", "matmul", "--json")[0] in (0, 1)
    assert symbols and max(symbols.values()) == 1, symbols.most_common(2)


def test_a_duration_past_int64_keeps_that_set_out_of_the_columns_and_never_crashes(tmp_path: Path) -> None:
    """A launch whose duration does not fit int64 (a valid JSON integer: the fuzz of the confined readers
    found 2**64 crashing the columns writer with OverflowError) leaves that set out of the columns file:
    it is decoded like a set from an older writer; the other sets keep their columns. SYNTHETIC."""
    huge = _set([(_launch("a", 2**64, 1),)])
    fine = dataclasses.replace(_set([(_launch("b", 10, 1),)]), params="2", nodeid="p::T::test_perf[cutile-2]")
    assert launch_store.columns_of(huge) is None
    data = tmp_path / "w" / "launches.json.gz"
    launch_store.write_store(data, [huge, fine])
    store = launch_store.open_store(data)
    assert store.columns(0) is None
    assert store.columns(1) is not None
    assert list(store) == [huge, fine]
