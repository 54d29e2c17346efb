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
