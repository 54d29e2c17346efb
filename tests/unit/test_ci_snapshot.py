"""CI runs the TileGym-parity tests: the snapshot is unpacked when missing, and a parity test that
still skips for want of it fails the run when the snapshot is required (issue 22 item 1).

The tarballs built here are synthetic (a three-file ``TileGym/`` tree); one test unpacks the real
shared tarball when this checkout has it beside the repository.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import tilegym_snapshot as ts

HERE = Path(__file__).resolve().parent.parent


def _tarball(path: Path, members: dict[str, bytes], symlink: str | None = None) -> Path:
    with tarfile.open(path, "w:xz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if symlink:
            info = tarfile.TarInfo(symlink)
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd"
            tar.addfile(info)
    return path


SYNTHETIC = {
    "TileGym/TILEGYM_COMMIT": b"75a1430\n",
    "TileGym/src/tilegym/__init__.py": b"",
    "TileGym/tests/common.py": b"# synthetic\n",
}


def test_unpacks_when_missing_and_leaves_a_present_snapshot_alone(tmp_path: Path) -> None:
    tb = _tarball(tmp_path / "tg.tar.xz", SYNTHETIC)
    fetched = tmp_path / ".fetched"
    got = ts.ensure_snapshot(tb, fetched, required=True)
    assert got == fetched / "TileGym" and (got / "tests" / "common.py").read_text() == "# synthetic\n"
    assert [p.name for p in fetched.iterdir()] == ["TileGym"]  # no staging folder left behind
    (got / "marker").write_text("kept")
    assert ts.ensure_snapshot(tmp_path / "no-such.tar.xz", fetched, required=True) == got
    assert (got / "marker").read_text() == "kept"


def test_missing_tarball_skips_locally_and_is_an_error_when_required(tmp_path: Path) -> None:
    assert ts.ensure_snapshot(tmp_path / "absent.tar.xz", tmp_path / ".fetched", required=False) is None
    with pytest.raises(ts.SnapshotUnavailable, match=r"absent\.tar\.xz does not exist"):
        ts.ensure_snapshot(tmp_path / "absent.tar.xz", tmp_path / ".fetched", required=True)


@pytest.mark.parametrize("bad", ["link", "outside", "no-commit"])
def test_a_wrong_tarball_is_refused_and_nothing_is_left(bad: str, tmp_path: Path) -> None:
    members = dict(SYNTHETIC)
    if bad == "outside":
        members["TileGym/../evil.py"] = b"x"
    if bad == "no-commit":
        del members["TileGym/TILEGYM_COMMIT"]
    tb = _tarball(tmp_path / "tg.tar.xz", members, symlink="TileGym/link" if bad == "link" else None)
    fetched = tmp_path / ".fetched"
    with pytest.raises(ts.SnapshotUnavailable, match=r"tg\.tar\.xz"):
        ts.ensure_snapshot(tb, fetched, required=True)
    assert list(fetched.iterdir()) == [] and not (tmp_path / "evil.py").exists()


def test_the_shared_tarball_unpacks_to_tilegym_75a1430(tmp_path: Path) -> None:
    tb = ts.tarball_path()
    if not tb.is_file():
        pytest.skip(f"no shared tarball at {tb} in this checkout")
    got = ts.ensure_snapshot(tb, tmp_path, required=True)
    assert got is not None and (got / "TILEGYM_COMMIT").read_text().startswith("75a1430")
    scripts = got / "skills" / "tilegym-converting-cutile-triton-to-cutile-rs" / "scripts"
    assert (scripts / "validate_agent_e.sh").is_file() and (got / "tests" / "common.py").is_file()


PARITY_LIKE = """
import pytest

@pytest.mark.skipif(True, reason="TileGym snapshot absent")
def test_parity():
    pass

@pytest.mark.skipif(True, reason="no GPU here")
def test_unrelated_skip():
    pass

def test_parity_in_body():
    pytest.skip("TileGym snapshot not present")
"""


def _run_with_conftest(tmp_path: Path, required: bool) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_parity_like.py").write_text(PARITY_LIKE)
    env = {k: v for k, v in os.environ.items() if k not in (ts.REQUIRE_ENV,)}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(HERE.parent), env.get("PYTHONPATH", "")])
    if required:
        env[ts.REQUIRE_ENV] = "1"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "conftest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rA",
            str(tmp_path / "test_parity_like.py"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_required_snapshot_turns_its_skips_into_failures(tmp_path: Path) -> None:
    proc = _run_with_conftest(tmp_path, required=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    # a skipif skip happens at setup, so pytest reports that one as an error: either way the run fails
    assert "1 failed, 1 skipped, 1 error" in out, out
    assert (
        "ERROR test_parity_like.py::test_parity\n" in out
        and "FAILED test_parity_like.py::test_parity_in_body" in out
    )
    assert "SKIPPED [1] test_parity_like.py:8: no GPU here" in out, out
    assert "2 parity test(s) skipped for want of it" in out, out


def test_without_the_requirement_they_only_skip(tmp_path: Path) -> None:
    proc = _run_with_conftest(tmp_path, required=False)
    assert proc.returncode == 0 and "3 skipped" in proc.stdout, proc.stdout + proc.stderr


def test_ci_requires_the_snapshot() -> None:
    """``.ci/run`` unpacks with the same module and exports the requirement before the tests run."""
    text = (HERE.parent / ".ci" / "run").read_text()
    assert "export WORKBENCH_REQUIRE_TILEGYM=1" in text
    unpack = text.index("python3 tests/tilegym_snapshot.py")
    # a missing snapshot is a failed stage (the run goes on and fails at the end: tests/unit/test_ci_run.py)
    assert (
        unpack < text.index('bash -c "$cmd"')
        and "failed+=" in text[unpack : text.index("slurm-up.sh", unpack)]
    )
