"""The one is-inside rule and confine_write's areas, pinned at their edges (issue 35, mutation survivors).

Each rule is tested at the edge, just inside and just outside: a sibling whose name STARTS with the
kernel dir's name (``rms_norm-old`` beside ``rms_norm``) is outside (the separator in ``under``);
writing to ``reports`` ITSELF is refused while a file in it is allowed (``real != area``); a top-level
name that only starts or ends like a perf log is refused (``fullmatch``, not ``match``/``search``).
The directories are real (tmp_path); the names are TileGym's (``perf_cutile_rs.txt``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cutile_workbench.artifacts.confine import check_kernel_name, confine_read, confine_write, is_inside
from cutile_workbench.errors import UnsafePath
from cutile_workbench.infra.paths import under


@pytest.mark.parametrize(
    ("real", "root", "inside"),
    [
        ("/out/rms_norm", "/out/rms_norm", True),  # the root itself
        ("/out/rms_norm/x", "/out/rms_norm", True),  # just inside
        ("/out/rms_norm/x", "/out/rms_norm/", True),  # a root written with its trailing separator
        ("/out/rms_norm-old/x", "/out/rms_norm", False),  # a sibling that starts with the name
        ("/out/rms_normx", "/out/rms_norm", False),  # just outside: one character longer
        ("/out/rms_nor", "/out/rms_norm", False),  # just outside: one character shorter
        ("/out", "/out/rms_norm", False),  # the parent
        ("/anything/at/all", "/", True),  # the filesystem root holds everything
        ("/tmp/out/rms_norm/x", "/out/rms_norm", False),  # the root's path inside another tree: a prefix only
    ],
)
def test_under_is_inside_only_across_a_separator(real: str, root: str, inside: bool) -> None:
    assert under(real, root) is inside


def test_is_inside_refuses_a_real_sibling_with_the_kernel_dirs_name_as_prefix(tmp_path: Path) -> None:
    kernel = tmp_path / "rms_norm"
    sibling = tmp_path / "rms_norm-old"
    (kernel / "reports").mkdir(parents=True)
    sibling.mkdir()
    (sibling / "x").write_text("x")
    assert is_inside(kernel / "reports", kernel)
    assert not is_inside(sibling / "x", kernel)
    with pytest.raises(UnsafePath, match="outside the kernel dir"):
        confine_read(kernel, sibling / "x")
    # a link inside the kernel dir that points at the sibling resolves outside
    os.symlink(sibling / "x", kernel / "link")
    with pytest.raises(UnsafePath):
        confine_read(kernel, kernel / "link")
    with pytest.raises(UnsafePath):
        confine_write(kernel, sibling / "x")


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    root = tmp_path / "rms_norm"
    (root / "reports").mkdir(parents=True)
    (root / "workbench").mkdir()
    return root


@pytest.mark.parametrize("area", ["reports", "workbench"])
def test_a_write_area_itself_is_refused_a_file_in_it_allowed(kernel: Path, area: str) -> None:
    assert confine_write(kernel, kernel / area / "f.json") == kernel / area / "f.json"
    with pytest.raises(UnsafePath):
        confine_write(kernel, kernel / area)  # replacing the area dir is not writing in it
    with pytest.raises(UnsafePath):
        confine_write(kernel, kernel / f"{area}-old" / "f.json")  # a prefix sibling of the area


@pytest.mark.parametrize(
    ("name", "allowed"),
    [
        ("perf_cutile_rs.txt", True),
        ("perf_cutile_rs_tileir.txt", True),  # a variant
        ("SKILL_METHODOLOGY_BLOCKED.txt", True),
        ("perf_cutile_rs.txt.bak", False),  # starts like a perf log: fullmatch, not match
        ("old_perf_cutile_rs.txt", False),  # ends like one: fullmatch, not search
        ("perf_cutile_rs_.txt", False),  # an empty variant
        ("perf_cutile_rs.tx", False),
        ("baseline_perf_cutile.txt", False),  # a real artifact name, but not one the app writes here
    ],
)
def test_top_level_writes_are_full_matches(kernel: Path, name: str, allowed: bool) -> None:
    if allowed:
        assert confine_write(kernel, kernel / name) == kernel / name
    else:
        with pytest.raises(UnsafePath):
            confine_write(kernel, kernel / name)


def test_a_top_level_name_one_level_down_is_not_top_level(kernel: Path) -> None:
    (kernel / "sub").mkdir()
    with pytest.raises(UnsafePath):
        confine_write(kernel, kernel / "sub" / "perf_cutile_rs.txt")


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("rms_norm", True),
        ("a", True),
        ("x" * 128, True),  # at the limit
        ("x" * 129, False),  # just above
        ("rms_norm\n", False),  # fullmatch: a trailing newline is refused
        ("rms norm", False),
        (".", False),
        ("..", False),
    ],
)
def test_kernel_name_edges(name: str, ok: bool) -> None:
    if ok:
        assert check_kernel_name(name) == name
    else:
        with pytest.raises(UnsafePath):
            check_kernel_name(name)


@pytest.mark.parametrize("area", ["reports", "workbench"])
def test_a_write_area_linked_out_refuses_writes_through_it_only(
    kernel: Path, tmp_path: Path, area: str
) -> None:
    """``reports/`` (or ``workbench/``) a link out of the kernel dir: a write through it is refused with
    the area named; a top-level perf log and the other area stay writable (issue 35, second wave: the
    check without its ``_under(real, area)`` half refused every write of that kernel dir)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (kernel / area).rmdir()
    os.symlink(elsewhere, kernel / area)
    with pytest.raises(UnsafePath, match=f"{area}/ resolves outside the kernel dir"):
        confine_write(kernel, kernel / area / "f.json")
    assert confine_write(kernel, kernel / "perf_cutile_rs.txt") == kernel / "perf_cutile_rs.txt"
    other = "workbench" if area == "reports" else "reports"
    assert confine_write(kernel, kernel / other / "f.json") == kernel / other / "f.json"
