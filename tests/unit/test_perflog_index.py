"""The perf log's byte-offset index (issue 31 item 2): one config's rows from its sections alone.

Data: the REAL recorded H200 sessions (read-only) and the matmul session scaled by
``bench/scale_cost.py``'s builder; xdist interleaving is a SYNTHETIC edit of that log (labelled).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import scale_cost  # noqa: E402

from cutile_workbench.artifacts.perflog import index  # noqa: E402
from cutile_workbench.services import stage_e  # noqa: E402
from cutile_workbench.stages.e import e_table  # noqa: E402

SESSIONS = sorted(
    p for p in (REPO / "cutile_workbench/profiles").glob("*/session/*") if (p / "reports").is_dir()
)


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(tmp_path / "user-cache"))
    e_table._MEMORY.clear()
    index.forget()


def _rows_equal_whole(kdir: Path) -> int:
    ws = stage_e.open_kernel(kdir.name, out_root=kdir.parent, tilegym=None)
    whole = e_table.load_e_table(ws, use_cache=False).table  # stores nothing: the config path must cut
    params = sorted({r.params for r in whole.rows})
    for p in params:
        one = e_table.load_config_table(ws, p)
        assert one.rows == [r for r in whole.rows if r.params == p], p
    return len(params)


@pytest.mark.parametrize("kdir", SESSIONS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_one_configs_rows_from_its_sections_are_the_whole_tables(kdir: Path) -> None:
    """REAL sessions: for every config, the rows built from its seeked sections equal the whole table's
    (ratio, baseline, CI to the last digit, launches, harness, clocks)."""
    assert _rows_equal_whole(kdir) >= 4


def test_scaled_session_is_cut_and_a_changed_log_is_indexed_anew(tmp_path: Path) -> None:
    kdir, config = scale_cost.build_session(tmp_path / "out", 14)
    log = kdir / scale_cost.CANDIDATE_LOG
    first = index.log_index(log)
    assert first.usable and len(first.sections) == 14 and first.frameworks == ("cutile-rs",)
    cut = index.config_text(first, config)
    assert cut is not None and cut.count(b"Performance Test Results") == 1 and config.encode() in cut
    assert _rows_equal_whole(kdir) == 14
    scale_cost.rerecord_config(kdir, config)
    second = index.log_index(log)
    assert second.digest != first.digest and second.usable
    assert second.sections != first.sections  # the re-recorded block has other lengths
    assert _rows_equal_whole(kdir) == 14


def test_interleaved_xdist_log_is_not_cut(tmp_path: Path) -> None:
    """SYNTHETIC: an xdist worker line in the log: sections may interleave, so the index says so and
    the one-config rows come from the whole table (still equal)."""
    kdir, _config = scale_cost.build_session(tmp_path / "out", 6)
    log = kdir / scale_cost.CANDIDATE_LOG
    text = log.read_text()
    at = text.index("PASSED\n")
    log.write_text(text[:at] + "[gw0] [ 16%] PASSED\n" + text[at:])
    idx = index.log_index(log)
    assert not idx.usable and "xdist" in idx.why
    assert _rows_equal_whole(kdir) == 6


def test_a_one_config_table_from_memory_is_the_callers_own_copy() -> None:
    """The in-memory whole table hands every caller its own copy (e_table's _MEMORY contract): a caller
    that edits the one-config table it got (its notes list) does not change what the next caller gets."""
    kdir = next(p for p in SESSIONS if p.name == "matmul")
    ws = stage_e.open_kernel(kdir.name, out_root=kdir.parent, tilegym=None)
    e_table.load_e_table(ws)  # fills the in-memory table
    params = e_table.load_e_table(ws).table.rows[0].params
    first = e_table.load_config_table(ws, params)
    first.notes.append("edited by a caller")
    assert "edited by a caller" not in e_table.load_config_table(ws, params).notes
