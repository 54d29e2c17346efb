"""Fuzz targets of the confined readers (issue 33 §4): the history store read-only, the launch store
(data file and index), and a derived-facts cache entry — each on seeded mutations of REAL files.

Same rule as :mod:`fuzzing.targets` (:func:`~fuzzing.targets.check_case`): a case returns normally or
raises an ``InputError`` naming the file and a line or key. A cache entry has a stricter rule of its
own: a mutated entry is a miss (``CacheMiss``, recomputed) or a value, nothing else.

:func:`run_cases` is what the slow test runs in a child under ``prlimit --as=1G`` (seeds ``start``..
``start + n - 1`` per target: reproducible), printing one JSON line of counts.
"""

from __future__ import annotations

import collections
import gzip
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from .mutator import mutate
from .structured import mutate_history_cells, mutate_json
from .targets import REPO, RuleViolation, Target, _history_store_seed, run_mutation_case

_LAUNCH_JSON = tuple(sorted((REPO / "tests/fixtures/f").glob("*.launches.json")))
_MATMUL = REPO / "cutile_workbench/profiles/tilegym/session/matmul"


def _history_ro(path: Path) -> Any:
    """What every read-only command does with a store: a copy in memory, then the history of it."""
    from cutile_workbench.history.noise import spreads_by_config  # noqa: F401  (same module set as table)
    from cutile_workbench.history.query import load_history
    from cutile_workbench.history.store import HistoryStore

    with HistoryStore.open(path, read_only=True) as store:
        return load_history(store, "matmul", phase=None)


def _launch_store(path: Path) -> Any:
    from cutile_workbench.artifacts.launch_store import open_store

    store = open_store(path)
    return [s.params for s in store]


def _index_seed(data: bytes) -> bytes:
    """A real index: the fixture's sets written as a per-set store (the index is what is mutated)."""
    from cutile_workbench.artifacts.launch_store import write_store
    from cutile_workbench.artifacts.launches_io import sets_from_document

    with tempfile.TemporaryDirectory(prefix="fuzz-index-seed-") as d:
        index = write_store(Path(d) / "launches.json.gz", sets_from_document(json.loads(data)))
        return index.read_bytes()


_DATA: dict[str, bytes] = {}


def _launch_index(path: Path) -> Any:
    """A mutated ``launches.idx.json`` beside the real data file it was written for."""
    from cutile_workbench.artifacts.launch_store import open_store, write_store
    from cutile_workbench.artifacts.launches_io import sets_from_document

    data = path.parent / "launches.json.gz"
    if "gz" not in _DATA:
        with tempfile.TemporaryDirectory(prefix="fuzz-index-data-") as d:
            write_store(
                Path(d) / "launches.json.gz", sets_from_document(json.loads(_LAUNCH_JSON[0].read_bytes()))
            )
            _DATA["gz"] = (Path(d) / "launches.json.gz").read_bytes()
    data.write_bytes(_DATA["gz"])
    store = open_store(data)
    return [s.params for s in store]


def _cache_entry_seed(_unused: bytes) -> bytes:
    """A real cache entry: E's table of the recorded matmul session (H200), as stored."""
    if "entry" not in _DATA:
        import os

        from cutile_workbench.services import stage_e
        from cutile_workbench.stages.e import e_table

        with tempfile.TemporaryDirectory(prefix="fuzz-cache-seed-") as d:
            old = os.environ.get("CUTILE_WORKBENCH_CACHE")
            os.environ["CUTILE_WORKBENCH_CACHE"] = d
            try:
                e_table._MEMORY.clear()
                et = e_table.load_e_table(stage_e.open_kernel("matmul", out_root=None, tilegym=None, env={}))
                _DATA["key"] = et.key
                _DATA["entry"] = (Path(d) / "e_tables" / f"{et.key}.json").read_bytes()
            finally:
                if old is None:
                    os.environ.pop("CUTILE_WORKBENCH_CACHE", None)
                else:
                    os.environ["CUTILE_WORKBENCH_CACHE"] = old
    return _DATA["entry"]


def _cache_entry(path: Path) -> Any:
    """A mutated entry placed where E's table is looked up: a miss or a RatioTable, never else."""
    import os

    from cutile_workbench.artifacts import derive_cache
    from cutile_workbench.model import RatioTable

    cache = path.parent / "cache"
    (cache / "e_tables").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, cache / "e_tables" / f"{_DATA['key']}.json")
    old = os.environ.get("CUTILE_WORKBENCH_CACHE")
    os.environ["CUTILE_WORKBENCH_CACHE"] = str(cache)
    try:
        value = derive_cache.load_value("e_tables", _DATA["key"], tuple[RatioTable, tuple[str, ...]])
    except derive_cache.CacheMiss:
        return None
    finally:
        if old is None:
            os.environ.pop("CUTILE_WORKBENCH_CACHE", None)
        else:
            os.environ["CUTILE_WORKBENCH_CACHE"] = old
    if not isinstance(value, tuple) or not isinstance(value[0], RatioTable):
        raise RuleViolation(f"a cache entry decoded to {type(value).__name__}")
    return value


def _gzip(b: bytes) -> bytes:
    return gzip.compress(b, compresslevel=1, mtime=0)


CONFINE_TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            "history_ro_bytes",
            (_MATMUL / "baseline_perf_cutile.txt",),
            _history_ro,
            suffix="/workbench/history.sqlite",
            decode_seed=_history_store_seed,
        ),
        Target(
            "history_ro_cells",
            (_MATMUL / "baseline_perf_cutile.txt",),
            _history_ro,
            suffix="/workbench/history.sqlite",
            decode_seed=_history_store_seed,
            mutator=mutate_history_cells,
        ),
        Target(
            "launch_store_gz",
            _LAUNCH_JSON,
            _launch_store,
            suffix=".json.gz",
            encode=_gzip,
            mutator=mutate_json,
        ),
        Target("launch_store_bytes", _LAUNCH_JSON, _launch_store, suffix=".json", mutator=mutate),
        Target(
            "launch_index",
            _LAUNCH_JSON[:1],
            _launch_index,
            suffix="/launches.idx.json",
            decode_seed=_index_seed,
            mutator=mutate_json,
        ),
        Target(
            "cache_entry",
            (_MATMUL / "baseline_perf_cutile.txt",),
            _cache_entry,
            suffix="/entry.json",
            decode_seed=_cache_entry_seed,
            mutator=mutate_json,
        ),
    )
}


def run_cases(n: int, start: int = 0, targets: tuple[str, ...] = tuple(CONFINE_TARGETS)) -> dict[str, Any]:
    """``n`` seeded cases per target; every rule violation collected (not raised)."""
    counts: dict[str, collections.Counter[str]] = {}
    violations: list[str] = []
    for name in targets:
        target = CONFINE_TARGETS[name]
        counts[name] = collections.Counter()
        with tempfile.TemporaryDirectory(prefix=f"fuzz-{name}-") as d:
            for seed in range(start, start + n):
                work = Path(d) / str(seed)
                try:
                    counts[name][run_mutation_case(target, seed, work).outcome] += 1
                except RuleViolation as exc:
                    counts[name]["VIOLATION"] += 1
                    violations.append(str(exc)[:2000])
                finally:
                    shutil.rmtree(work, ignore_errors=True)
    return {
        "cases": n * len(targets),
        "counts": {k: dict(v) for k, v in counts.items()},
        "violations": violations,
    }


if __name__ == "__main__":  # python -m fuzzing.confine_targets N [START]
    n = int(sys.argv[1])
    start = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    print(json.dumps(run_cases(n, start)))
