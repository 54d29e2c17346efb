"""E's table: one door (``load_e_table``), computed once per set of inputs (issue 26).

Data: the REAL recorded sessions (rms_norm, matmul) and writable copies of them; the cache files
planted by the tests (a foreign pickle, a link out) are SYNTHETIC attacks on the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import sys
from pathlib import Path

import pytest

from cutile_workbench.artifacts import derive_cache
from cutile_workbench.services import stage_e
from cutile_workbench.stages.e import e_table, stats

PROFILES = Path(__file__).resolve().parents[2] / "cutile_workbench" / "profiles"
RMS = PROFILES / "rms_norm" / "session"
MATMUL = PROFILES / "tilegym" / "session"


@pytest.fixture(autouse=True)
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "user-cache"
    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(cache))
    e_table._MEMORY.clear()
    return cache


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every table build, wherever its caller imported build_ratio_table from (each build runs the
    bootstrap exactly once, looked up in the module at call time)."""
    calls: list[str] = []
    real = stats._bootstrap

    def counting(rows, n_boot, seed, *boots):  # type: ignore[no-untyped-def]
        calls.append("matmul" if any("8192" in r.params for r in rows) else "rms_norm")
        return real(rows, n_boot, seed, *boots)

    monkeypatch.setattr(stats, "_bootstrap", counting)
    return calls


def copy_of(src: Path, kernel: str, tmp_path: Path) -> Path:
    root = tmp_path / "out"
    shutil.copytree(src / kernel, root / kernel)
    return root


def test_same_table_as_built_directly_from_the_logs() -> None:
    ws = stage_e.open_kernel("rms_norm", out_root=RMS, tilegym=None)
    got = e_table.load_e_table(ws, use_cache=False)
    from cutile_workbench.stages.e.report import load_candidate

    cand = load_candidate(ws)[0]
    bases = {k: v for k, v in ws.baseline_logs().items() if not k.startswith("cutile_rs")}
    assert got.table == stats.build_ratio_table("rms_norm", cand, bases, ws.analysis)


def test_table_report_e_and_report_f_compute_it_once(tmp_path: Path, builds: list[str]) -> None:
    from cutile_workbench.services import stage_f

    root = copy_of(MATMUL, "matmul", tmp_path)
    ws = stage_e.open_kernel("matmul", out_root=root, tilegym=None)
    table = stage_e.ratio_table(ws)
    plan = stage_e.plan(ws, stage_e.EReportRequest(run_real_scripts=False))
    inputs = stage_f.collect(stage_e.open_kernel("matmul", out_root=root, tilegym=None))
    assert builds == ["matmul"]
    assert inputs.table == table and plan.files


def test_cached_on_the_inputs_hash_and_invalidated_when_a_log_changes(
    tmp_path: Path, fresh: Path, builds: list[str]
) -> None:
    root = copy_of(MATMUL, "matmul", tmp_path)
    before = sorted((p.relative_to(root), p.stat().st_mtime_ns) for p in root.rglob("*"))
    ws = stage_e.open_kernel("matmul", out_root=root, tilegym=None)
    first = e_table.load_e_table(ws)
    assert not first.from_cache and (fresh / "e_tables" / f"{first.key}.json").is_file()
    assert (
        sorted((p.relative_to(root), p.stat().st_mtime_ns) for p in root.rglob("*")) == before
    )  # nothing written
    e_table._MEMORY.clear()  # a new process
    again = e_table.load_e_table(stage_e.open_kernel("matmul", out_root=root, tilegym=None))
    assert again.from_cache and again.table == first.table and builds == ["matmul"]
    assert again.candidate_frameworks == ("cutile-rs",) and builds == ["matmul"]  # no parse needed for it
    assert again.candidate.records  # the records are still there, parsed on demand
    base = root / "matmul" / "baseline_perf_cutile.txt"
    base.write_text(base.read_text() + "\n")  # any byte of an input changes the key
    e_table._MEMORY.clear()
    changed = e_table.load_e_table(stage_e.open_kernel("matmul", out_root=root, tilegym=None))
    assert not changed.from_cache and changed.key != first.key and builds == ["matmul", "matmul"]


def test_recorded_sessions_cache_in_the_user_cache_dir_only(fresh: Path, builds: list[str]) -> None:
    kdir = RMS / "rms_norm"
    before = sorted(p.relative_to(kdir) for p in kdir.rglob("*"))
    ws = stage_e.open_kernel("rms_norm", out_root=RMS, tilegym=None)
    e_table.load_e_table(ws)
    assert sorted(p.relative_to(kdir) for p in kdir.rglob("*")) == before
    assert len(list((fresh / "e_tables").glob("*.json"))) == 1
    e_table._MEMORY.clear()
    assert e_table.load_e_table(ws).from_cache and len(builds) == 1


class _Boom:
    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, ("touch pwned",))


def test_a_foreign_cache_file_is_data_never_code(tmp_path: Path, fresh: Path, builds: list[str]) -> None:
    """SYNTHETIC: a pickle that would run a command when loaded with plain pickle, planted under the old
    name, and a JSON entry naming a module that is not loaded (a test module): neither is run nor trusted."""
    root = copy_of(MATMUL, "matmul", tmp_path)
    ws = stage_e.open_kernel("matmul", out_root=root, tilegym=None)
    key = e_table.load_e_table(ws, use_cache=False).key
    old = fresh / "e_tables" / f"{key}.pickle"
    old.parent.mkdir(parents=True)
    old.write_bytes(pickle.dumps((key, _Boom(), ())))
    foreign = {"$dc": "cutile_workbench.profiles.faults.test_faults:Thing", "v": {}}
    _plant(fresh, key, {"$tuple": [foreign, {"$tuple": []}]})
    os.chdir(tmp_path)
    got = e_table.load_e_table(ws)
    assert not got.from_cache and not (tmp_path / "pwned").exists() and len(builds) == 2
    assert "cutile_workbench.profiles.faults.test_faults" not in sys.modules
    assert not old.exists()  # an old pickle is pruned, never read
    e_table._MEMORY.clear()
    assert e_table.load_e_table(ws).from_cache  # replaced by a good one


def _plant(fresh: Path, key: str, value: object, *, digest: str | None = None) -> Path:
    """SYNTHETIC: a cache entry with ``value`` (and, unless given, its correct digest)."""
    payload = json.dumps(value, sort_keys=True, separators=(",", ":"))
    doc = {
        "schema": derive_cache.CACHE_SCHEMA,
        "kind": "e_tables",
        "key": key,
        "sha256": digest or hashlib.sha256(payload.encode()).hexdigest(),
        "value": value,
    }
    path = fresh / "e_tables" / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def test_an_edited_entry_is_a_miss_never_a_number(tmp_path: Path, fresh: Path, builds: list[str]) -> None:
    """SYNTHETIC edits of a real cached table (issue 33 §5: a changed geomean was shown and written as
    0.500x): the digest catches the edit; a re-digested entry of the wrong type or a non-finite number
    fails validation. Each is recomputed from the logs."""
    root = copy_of(MATMUL, "matmul", tmp_path)
    ws = stage_e.open_kernel("matmul", out_root=root, tilegym=None)
    first = e_table.load_e_table(ws)
    path = fresh / "e_tables" / f"{first.key}.json"
    doc = json.loads(path.read_text())
    text = json.dumps(doc["value"])
    assert str(first.table.rows[0].ratio) in text
    for edit in (
        lambda t: t.replace(str(first.table.rows[0].ratio), "0.5", 1),  # digest now wrong
        lambda t: t,  # unchanged value, digest of something else
    ):
        _plant(fresh, first.key, json.loads(edit(text)), digest="0" * 64)
        e_table._MEMORY.clear()
        got = e_table.load_e_table(stage_e.open_kernel("matmul", out_root=root, tilegym=None))
        assert not got.from_cache and got.table == first.table
    bad_type = json.loads(text.replace(json.dumps(first.table.rows[0].ratio), '"0.5"', 1))
    for value in (bad_type, json.loads(text.replace(str(first.table.rows[0].ratio), "1e999", 1))):
        _plant(fresh, first.key, value)  # re-digested: only validation stands between it and the table
        e_table._MEMORY.clear()
        got = e_table.load_e_table(stage_e.open_kernel("matmul", out_root=root, tilegym=None))
        assert not got.from_cache and got.table == first.table
    path.unlink()
    os.symlink(tmp_path / "elsewhere.json", path)  # a link is not read either
    e_table._MEMORY.clear()
    assert not e_table.load_e_table(stage_e.open_kernel("matmul", out_root=root, tilegym=None)).from_cache


def test_measurement_conditions_are_read_once_per_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ratios' comparability parses both logs: computed once per content of its inputs."""
    from cutile_workbench.services import history as history_service

    calls: list[int] = []
    real = history_service.ratio_conditions

    def counting(*a, **kw):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(history_service, "ratio_conditions", counting)
    root = copy_of(MATMUL, "matmul", tmp_path)
    ws = stage_e.open_kernel("matmul", out_root=root, tilegym=None)
    table = stage_e.ratio_table(ws)
    first = history_service.ratio_comparability(ws, table)
    derive_cache._DERIVED.clear()  # a new process: served from the user cache dir
    assert history_service.ratio_comparability(ws, table) == first and calls == [1]
    session = root / "matmul" / "workbench" / "session.json"
    session.write_text(session.read_text() + "\n")
    history_service.ratio_comparability(ws, table)
    assert calls == [1, 1]


def test_the_same_logs_under_another_kernel_name_are_that_kernels_table(tmp_path: Path) -> None:
    """E's table names its kernel: two kernel dirs with byte-identical logs (a copied dir, replicas) must
    not share one cached table, or the second would carry the first one's name."""
    root = copy_of(MATMUL, "matmul", tmp_path)
    shutil.copytree(root / "matmul", root / "matmul_copy")
    first = stage_e.ratio_table(stage_e.open_kernel("matmul", out_root=root, tilegym=None))
    second = stage_e.ratio_table(stage_e.open_kernel("matmul_copy", out_root=root, tilegym=None))
    assert (first.kernel, second.kernel) == ("matmul", "matmul_copy")
