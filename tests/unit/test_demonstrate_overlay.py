"""The demonstration's copy step never touches the real TileGym tree (issue 33 §3).

REAL: the recorded matmul session (H200) and TileGym's tree from the snapshot at 75a1430, copied to
tmp_path so links can be planted in it. SYNTHETIC (labelled): the links (the wrapper file a link to a
file elsewhere; ``workbench/demonstrate`` a link out of the kernel dir) and the STAND-IN re-run of
``test_demonstrate.replay_run`` (no GPU: it replays the recorded log).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from test_demonstrate import REC, TILEGYM, WRAPPER, needs_tilegym, replay_run

from cutile_workbench.services import stage_f
from cutile_workbench.services.demonstrate import tree_sha256


def _tree(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = "link " + os.readlink(p)
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    tg = tmp_path / "tg" / "TileGym"
    for item in ("src", "tests", "pytest.ini"):
        src = TILEGYM / item
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, tg / item)  # type: ignore[operator]
    root = tmp_path / "out"
    shutil.copytree(REC, root / "matmul")
    return tg, root


@needs_tilegym
def test_a_wrapper_that_is_a_link_is_copied_and_the_real_file_never_edited(tmp_path: Path) -> None:
    """SYNTHETIC link: the wrapper in the tree is a link to a file elsewhere (a shared checkout)."""
    tg, root = _setup(tmp_path)
    real = tmp_path / "shared" / "matmul.py"
    real.parent.mkdir()
    shutil.move(str(tg / WRAPPER), real)
    os.symlink(real, tg / WRAPPER)
    before, real_before = _tree(tg), real.read_bytes()
    ws = stage_f.open_kernel("matmul", out_root=root, tilegym=tg)
    seen: dict[str, object] = {}
    report = stage_f.plan(
        ws, run_real_scripts=False, demonstrate=stage_f.DemonstrateRequest(run_fn=replay_run(seen))
    )
    demo = report.demonstration
    assert real.read_bytes() == real_before and _tree(tg) == before
    assert demo is not None and demo.status == "done", demo
    assert "SimpleNamespace(BM=128, BN=128, BK=64" in str(seen["wrapper"])  # the copy was edited
    assert demo.tree_sha256_before == demo.tree_sha256_after


@needs_tilegym
def test_a_demonstrate_dir_linked_out_of_the_kernel_dir_is_refused(tmp_path: Path) -> None:
    tg, root = _setup(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "matmul" / "workbench" / "demonstrate")
    ws = stage_f.open_kernel("matmul", out_root=root, tilegym=tg)
    report = stage_f.plan(
        ws, run_real_scripts=False, demonstrate=stage_f.DemonstrateRequest(run_fn=replay_run({}))
    )
    demo = report.demonstration
    assert list(outside.iterdir()) == []
    assert demo is not None and demo.status == "failed" and "demonstrate" in demo.reason


@needs_tilegym
def test_a_relative_tilegym_path_is_resolved_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tg, root = _setup(tmp_path)
    monkeypatch.chdir(tmp_path)
    ws = stage_f.open_kernel("matmul", out_root=root, tilegym=Path("tg/TileGym"))
    seen: dict[str, object] = {}
    report = stage_f.plan(
        ws, run_real_scripts=False, demonstrate=stage_f.DemonstrateRequest(run_fn=replay_run(seen))
    )
    demo = report.demonstration
    assert demo is not None and demo.status == "done", demo
    assert [e.relpath for e in demo.edits] == [WRAPPER]


def test_the_tree_hash_covers_links(tmp_path: Path) -> None:
    """SYNTHETIC tree: re-pointing a link (or replacing a file by a link to the same bytes) changes the hash."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("a")
    (tmp_path / "src" / "b.py").write_text("b")
    os.symlink("a.py", tmp_path / "src" / "l.py")
    first = tree_sha256(tmp_path)
    os.remove(tmp_path / "src" / "l.py")
    os.symlink("b.py", tmp_path / "src" / "l.py")
    assert tree_sha256(tmp_path) != first
