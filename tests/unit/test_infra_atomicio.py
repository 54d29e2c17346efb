"""infra.atomicio: the one atomic write (temp file in the same dir + fsync + os.replace).

Synthetic files in tmp_path (edge cases of the write itself, no recorded data involved).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cutile_workbench.errors import UnsafePath
from cutile_workbench.infra.atomicio import atomic_write_bytes


def test_inside_a_kernel_dir_and_refused_outside(tmp_path: Path) -> None:
    kdir = tmp_path / "k"
    atomic_write_bytes(kdir / "a" / "x.txt", b"one", kdir)
    assert (kdir / "a" / "x.txt").read_bytes() == b"one"
    with pytest.raises(UnsafePath):
        atomic_write_bytes(tmp_path / "outside.txt", b"no", kdir)
    assert not (tmp_path / "outside.txt").exists()


def test_a_file_the_user_named_needs_no_root_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "trace.json"
    atomic_write_bytes(target, b"{}", None)
    atomic_write_bytes(target, b"[]", None)
    assert target.read_bytes() == b"[]"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.json"]


def test_keep_mode_preserves_the_permissions_of_the_file_it_replaces(tmp_path: Path) -> None:
    target = tmp_path / "test_x.py"
    target.write_text("old")
    os.chmod(target, 0o640)
    atomic_write_bytes(target, b"new", None, keep_mode=True)
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def _swap_after_check(monkeypatch: pytest.MonkeyPatch, swap) -> None:
    """SYNTHETIC race, made deterministic: the swap lands right after any path check the write makes
    (the window of a check-then-open), and again before the bytes are written."""
    import cutile_workbench.infra.atomicio as atomicio
    import cutile_workbench.infra.paths as paths

    real = paths.is_inside

    def checked_then_swapped(path, root):
        ok = real(path, root)
        swap()
        return ok

    monkeypatch.setattr(atomicio, "is_inside", checked_then_swapped, raising=False)
    monkeypatch.setattr(paths, "is_inside", checked_then_swapped)


def test_a_dir_swapped_for_a_link_during_the_write_is_refused_never_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SYNTHETIC: ``kdir/workbench`` is a real dir when checked and a link out when written."""
    kdir, outside = tmp_path / "k", tmp_path / "outside"
    (kdir / "workbench").mkdir(parents=True)
    outside.mkdir()

    def swap() -> None:
        if (kdir / "workbench").is_dir() and not (kdir / "workbench").is_symlink():
            os.rename(kdir / "workbench", kdir / "workbench.real")
            os.symlink(outside, kdir / "workbench")

    _swap_after_check(monkeypatch, swap)
    swap_done = False
    try:
        atomic_write_bytes(kdir / "workbench" / "x.json", b"{}", kdir)
    except UnsafePath:
        swap_done = True
    assert list(outside.iterdir()) == [], "bytes (or a temp file) landed outside the kernel dir"
    landed = [p for p in (kdir / "workbench.real" / "x.json", kdir / "workbench" / "x.json") if p.is_file()]
    assert swap_done or (landed and not (kdir / "workbench").is_symlink())


def test_links_on_the_way_and_at_the_target_are_refused(tmp_path: Path) -> None:
    """SYNTHETIC: a link at the target (even one pointing inside) and a kernel dir that is a link."""
    kdir, outside = tmp_path / "k", tmp_path / "outside"
    kdir.mkdir()
    outside.mkdir()
    (kdir / "inner.txt").write_text("keep")
    os.symlink(kdir / "inner.txt", kdir / "t.txt")
    with pytest.raises(UnsafePath):
        atomic_write_bytes(kdir / "t.txt", b"new", kdir)
    assert (kdir / "inner.txt").read_text() == "keep" and (kdir / "t.txt").is_symlink()
    os.symlink(outside, tmp_path / "klink")
    with pytest.raises(UnsafePath):
        atomic_write_bytes(tmp_path / "klink" / "x.txt", b"no", tmp_path / "klink")
    assert list(outside.iterdir()) == []
    with pytest.raises(UnsafePath):
        atomic_write_bytes(kdir / ".." / "outside" / "x.txt", b"no", kdir)
    assert list(outside.iterdir()) == []


def test_a_hard_link_target_is_replaced_not_written_through(tmp_path: Path) -> None:
    """SYNTHETIC: the target is a hard link of an outside file: the rename leaves the outside bytes."""
    kdir = tmp_path / "k"
    kdir.mkdir()
    victim = tmp_path / "victim"
    victim.write_bytes(b"")
    os.link(victim, kdir / "t.txt")
    atomic_write_bytes(kdir / "t.txt", b"new", kdir)
    assert victim.read_bytes() == b"" and (kdir / "t.txt").read_bytes() == b"new"
