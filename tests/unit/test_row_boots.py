"""E's per-row bootstrap file (issue 31 item 1): reused when it is ours, a miss whenever it is not.

Data: the REAL recorded matmul session (read-only; the file lives in a temp user cache); the damaged
files are SYNTHETIC (labelled per test)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cutile_workbench.services import stage_e
from cutile_workbench.stages.e import e_table, stats

MATMUL = Path(__file__).resolve().parents[2] / "cutile_workbench/profiles/tilegym/session"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(tmp_path / "user-cache"))
    e_table._MEMORY.clear()
    return tmp_path / "user-cache" / "e_rows"


def _table_and_draws(monkeypatch: pytest.MonkeyPatch) -> tuple[object, int]:
    """A table build that misses the whole-table cache (the row file alone can be reused)."""
    e_table._MEMORY.clear()
    for f in Path(e_table._cache_file("x")).parent.glob("*.json"):
        f.unlink()
    draws: list[int] = []
    real = stats.row_bootstrap
    monkeypatch.setattr(stats, "row_bootstrap", lambda *a: draws.append(1) or real(*a))
    ws = stage_e.open_kernel("matmul", out_root=MATMUL, tilegym=None)
    table = e_table.load_e_table(ws).table
    monkeypatch.setattr(stats, "row_bootstrap", real)
    return table, len(draws)


def test_rows_are_reused_and_equal_a_fresh_build(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, drawn = _table_and_draws(monkeypatch)
    assert drawn == 6 and len(list(cache.glob("*.npz"))) == 1
    again, drawn = _table_and_draws(monkeypatch)
    assert drawn == 0 and again == first


@pytest.mark.parametrize("damage", ["garbage", "nan", "shape", "pickle", "link"])
def test_a_damaged_or_foreign_file_is_a_miss_never_a_number(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, damage: str
) -> None:
    """SYNTHETIC damage to the row file: unreadable bytes, a NaN replicate, a wrong n_boot, an object
    array (would need pickle), a symlink in its place: every row is drawn again, the table equals the
    fresh one, and the file is rewritten."""
    first, _ = _table_and_draws(monkeypatch)
    (path,) = cache.glob("*.npz")
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    path.unlink()
    if damage == "garbage":
        path.write_bytes(b"PK\x03\x04 not a zip")
    elif damage == "nan":
        arrays["logs"][0, 0] = np.nan
        np.savez(path, **arrays)
    elif damage == "shape":
        arrays["logs"] = arrays["logs"][:, :10]
        np.savez(path, **arrays)
    elif damage == "pickle":
        arrays["keys"] = np.array(list(arrays["keys"]), dtype=object)
        np.savez(path, **arrays)
    else:
        other = tmp_path / "elsewhere.npz"
        np.savez(other, **arrays)
        path.symlink_to(other)
    again, drawn = _table_and_draws(monkeypatch)
    assert drawn == 6 and again == first
    assert path.is_file() and not path.is_symlink()


def test_a_write_leaves_the_row_file_alone_and_a_stray_temp_is_pruned(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row file is written through the package's one atomic write (infra.atomicio.atomic_writer):
    nothing but the ``.npz`` is left beside it, and a temp file a killed writer left (SYNTHETIC: made
    here with that writer's name) is pruned by the next write past KEEP_FILES."""
    from cutile_workbench.stages.e import row_boots

    _table_and_draws(monkeypatch)
    assert [p.suffix for p in cache.iterdir()] == [".npz"]
    stray = cache / ".0123.npz.tmp-1-2"
    stray.write_bytes(b"half")
    monkeypatch.setattr(row_boots, "KEEP_FILES", 1)
    for f in cache.glob("*.npz"):
        f.unlink()  # the next build writes the row file again (and prunes)
    _table_and_draws(monkeypatch)
    assert not stray.exists() and [p.suffix for p in cache.iterdir()] == [".npz"]
