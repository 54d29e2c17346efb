"""Issue 31, fourth wave: what a WARM command (and one after one config changed) still repeats, counted.

Counted, never timed (these hold on any box):

- the code keys (:mod:`cutile_workbench.infra.codekey`): an edited module changes the key (the scans
  per process are counted in ``tests/unit/test_cost_fresh.py``);
- each input file of a kernel dir (perf logs, baselines, analysis.json, captures) read for a cache key
  at most once per command;
- derive_cache's in-memory hits: no deep copy of a value that is immutable (frozen dataclasses,
  tuples, strings, numbers);
- ``report f`` with E's table and the captures cached: no perf log parsed whole.

Sessions: the REAL recorded H200 matmul session replicated by ``bench/scale_cost.py``'s builder (as
``tests/unit/test_cost_counts.py``); code-key tests use this checkout's own package and a copy of it.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cutile_workbench.infra import codekey

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "cutile_workbench"
E_ROOTS = ("cutile_workbench.stages.e.e_table",)
TRUST_ROOTS = ("cutile_workbench.evidence.trust", "cutile_workbench.evidence.candidate_identity")


def test_an_edited_module_changes_the_code_key(tmp_path: Path) -> None:
    """Code keys are memoized per process (tests/unit/test_cost_fresh.py counts the import scans): an
    edited module (a new import) gives a new key and a wider closure once the memo is cleared."""
    copy = tmp_path / "cutile_workbench"
    shutil.copytree(PKG, copy, ignore=shutil.ignore_patterns("__pycache__", "profiles", "tui"))
    codekey.clear()
    before = codekey.code_key(E_ROOTS, copy)
    assert "cutile_workbench.tui.app" not in codekey.import_closure(E_ROOTS, copy)
    stats = copy / "stages/e/stats.py"
    stats.write_text(stats.read_text() + "\n\ndef _late() -> None:\n    import cutile_workbench.tui.app\n")
    codekey.clear()
    assert codekey.code_key(E_ROOTS, copy) != before
    assert "cutile_workbench.tui.app" in codekey.import_closure(E_ROOTS, copy)
    codekey.clear()


# --------------------------------------------------------------------------- derive_cache


def test_a_memory_hit_of_a_frozen_value_is_shared_a_mutable_one_is_the_callers_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first caller's value and every later hit: a frozen value (here a real recorded row of E's
    table, frozen, in a tuple) is never deep-copied; a list inside a value is each caller's own."""
    import copy

    from cutile_workbench.artifacts import derive_cache
    from cutile_workbench.model import RatioRow

    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(tmp_path / "cache"))
    row = _a_real_row()
    assert isinstance(row, RatioRow)
    derive_cache._DERIVED.clear()
    copies: list[object] = []
    real = copy.deepcopy
    monkeypatch.setattr(derive_cache.copy, "deepcopy", lambda v, *a: copies.append(v) or real(v, *a))
    frozen = (row, ("note",), 1.5)
    got = [derive_cache.cached_derivation("t-frozen", [], "x", [], lambda: frozen) for _ in range(3)]
    assert all(g == frozen for g in got)
    assert not copies
    mutable = {"rows": [row], "notes": ["a"]}
    first = derive_cache.cached_derivation("t-mutable", [], "x", [], lambda: mutable)
    first["notes"].append("changed by the first caller")
    again = derive_cache.cached_derivation("t-mutable", [], "x", [], lambda: mutable)
    assert again["notes"] == ["a"] and again["rows"][0] is row  # own list, shared frozen row


def _a_real_row() -> Any:
    from cutile_workbench.services import stage_e

    ws = stage_e.open_kernel("matmul", out_root=None, tilegym=None)
    from cutile_workbench.stages.e.e_table import load_e_table

    return load_e_table(ws, n_boot=20).table.rows[0]


def test_a_stored_list_of_numbers_is_decoded_in_one_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """A per-config entry holds lists of samples and durations: decoding them is not a call per number."""
    from cutile_workbench.artifacts import derive_cache

    calls: list[int] = []
    real = derive_cache._dec_raw
    monkeypatch.setattr(derive_cache, "_dec_raw", lambda d, depth: calls.append(1) or real(d, depth))
    doc = derive_cache.encode(([0.5 + i for i in range(1000)], (1, 2, 3), ["a"] * 100))
    value = derive_cache.decode(doc, tuple[list[float], tuple[int, ...], list[str]])
    assert value == ([0.5 + i for i in range(1000)], (1, 2, 3), ["a"] * 100)
    assert len(calls) <= 8
    for bad in ([1.0, "x"], [True]):  # still validated against the declared type
        with pytest.raises(derive_cache.CacheMiss):
            derive_cache.decode(derive_cache.encode(bad), list[float])


# --------------------------------------------------------------------------- the warm commands

sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import test_cost_counts  # noqa: E402
from test_cost_counts import Counts, _forget_process_memos  # noqa: E402
from test_cost_counts import _cli_out as _out  # noqa: E402

session = test_cost_counts.session  # the same fixture: a fresh user cache, the scaled real session


def test_warm_report_f_parses_no_perf_log(session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """With E's table and F's records cached (a report f before), ``report f`` parses no perf log whole
    and says exactly what the first one said (today: both logs parsed on every run for F's records)."""
    kdir, _ = session
    first = _out(kdir.parent, "report", "f", "matmul", "--dry-run")
    assert first[0] in (0, 1) and "FIXABLE" in first[1]
    _forget_process_memos()  # a new process, the user cache warm
    counts = Counts(monkeypatch)
    again = _out(kdir.parent, "report", "f", "matmul", "--dry-run")
    assert again == first
    assert not counts.parses, dict(counts.parses)


#: the functions that read an input's bytes to key a cache (a digest), in this package
_DIGEST_READERS = {"_read", "file_digest", "file_digest_in", "_digest", "digest"}


class DigestReads:
    """Opens of each kernel-dir file made to key a cache (a function of :data:`_DIGEST_READERS` on the
    stack), counted by the interpreter's ``open`` audit event (builtins, io and os opens alike). The
    launch store's check of its own index against the data file (``launch_store._file_sha256``, not a
    cache key) is not counted."""

    _active: DigestReads | None = None
    _installed = False

    def __init__(self, kdir: Path) -> None:
        self.kdir = str(kdir.resolve())
        self.reads: Counter[str] = Counter()
        if not DigestReads._installed:  # an audit hook cannot be removed: one, switched per test
            sys.addaudithook(DigestReads._hook)
            DigestReads._installed = True

    def __enter__(self) -> DigestReads:
        DigestReads._active = self
        return self

    def __exit__(self, *exc: object) -> None:
        DigestReads._active = None

    @staticmethod
    def _hook(event: str, args: tuple[Any, ...]) -> None:
        me = DigestReads._active
        if me is None or event != "open" or not isinstance(args[0], (str, bytes, Path)):
            return
        import os

        path = os.path.realpath(os.fsdecode(args[0]))
        frame = sys._getframe(1)
        while frame is not None:
            code = frame.f_code
            if "cutile_workbench" in code.co_filename:
                if code.co_filename.endswith("launch_store.py"):
                    return
                if code.co_name == "file_digest_in":  # opened by descriptor: the name alone is in args
                    where = frame.f_locals["where"]
                    if os.fsdecode(args[0]) != os.path.basename(where):
                        return  # a directory of the walk to it, not the file
                    path = os.path.realpath(where)
                if code.co_name in _DIGEST_READERS:
                    if path.startswith(me.kdir + os.sep):
                        me.reads[path[len(me.kdir) + 1 :]] += 1
                    return
            frame = frame.f_back


@pytest.mark.parametrize(
    "argv",
    [
        ("table", "matmul", "--json"),
        ("report", "e", "matmul", "--dry-run"),
        ("report", "f", "matmul", "--dry-run"),
        ("timeline", "matmul", "--config", "{config}", "--json"),
    ],
    ids=["table", "report-e", "report-f", "timeline"],
)
def test_each_input_file_read_once_per_warm_command(session: tuple[Path, str], argv: tuple[str, ...]) -> None:
    """A warm command (its caches filled by the same command before) reads each input file — perf logs,
    baselines, analysis.json, captures, session.json, events — at most once for all its cache keys
    (E's table, trust, the history's comparability, F's): the workspace's digests, computed once
    (today: the baseline log and analysis.json twice for ``table``, session.json and events twice)."""
    kdir, config = session
    argv = tuple(a.format(config=config) for a in argv)
    assert _out(kdir.parent, *argv)[0] in (0, 1)
    _forget_process_memos()  # a new process, the user cache warm
    with DigestReads(kdir) as counted:
        assert _out(kdir.parent, *argv)[0] in (0, 1)
    assert counted.reads, "no input was hashed: the count would prove nothing"
    assert max(counted.reads.values()) == 1, dict(counted.reads)


def test_the_fast_scalar_checks_still_refuse_a_wrong_type() -> None:
    """Scalar fields are checked by exact type (``float | None`` included): a string, a bool or a
    list where a number is declared is still a miss, never a value."""
    from cutile_workbench.artifacts import derive_cache
    from cutile_workbench.model import PhaseStats

    good = derive_cache.encode(PhaseStats(1.0, mean_ms=2.0, nrep=3))
    assert derive_cache.decode(good) == PhaseStats(1.0, mean_ms=2.0, nrep=3)
    for field, bad in (
        ("mean_ms", "x"),
        ("mean_ms", True),
        ("median_ms", None),
        ("nrep", 1.5),
        ("mean_ms", [1]),
    ):
        doc = json.loads(json.dumps(good))
        doc["v"][field] = bad
        with pytest.raises(derive_cache.CacheMiss):
            derive_cache.decode(doc)
