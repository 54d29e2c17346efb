"""Read-only means read-only (issue 33 §1-2, issue 30 item 4): every read-only command leaves the out
root, and the recorded sessions shipped in the package, byte-identical.

REAL: the recorded matmul session (H200) copied to an out root, its history store made by the real
importer as a recording command makes it. SYNTHETIC (labelled where made): a store of the previous
schema (version 1: the first migration only, the same real runs), links and hard links to a file
outside, a read-only bind mount.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.cli import main
from cutile_workbench.history.query import open_history
from cutile_workbench.history.store import HISTORY_FILE

ROOT = Path(__file__).resolve().parent.parent.parent
PROFILES = ROOT / "cutile_workbench" / "profiles"
RECORDED = PROFILES / "tilegym" / "session"
KERNEL = "matmul"

#: every read-only command (argv after the program name); {R} is the out root
READ_ONLY = (
    ("table", KERNEL, "--out-root", "{R}"),
    ("report", "e", KERNEL, "--out-root", "{R}", "--dry-run"),
    ("report", "f", KERNEL, "--out-root", "{R}", "--dry-run"),
    ("overview", "--out-root", "{R}"),
    ("diff", KERNEL, "--out-root", "{R}"),
    ("timeline", KERNEL, "--out-root", "{R}"),
    ("history", KERNEL, "--out-root", "{R}"),
    ("calibrate", KERNEL, "--out-root", "{R}"),
)


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CUTILE_KERNEL_OUT_ROOT", "TILEGYM_PATH", "CUTILE_WORKBENCH_KEYMAP"):
        monkeypatch.delenv(name, raising=False)


def tree_hash(root: Path) -> dict[str, str]:
    """Every entry under ``root``: a file's sha256 and mode, a link's target, a dir's mode."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            p = Path(dirpath, name)
            rel = str(p.relative_to(root))
            st = os.lstat(p)
            if p.is_symlink():
                out[rel] = "link " + os.readlink(p)
            elif p.is_dir():
                out[rel] = f"dir {st.st_mode:o}"
            else:
                out[rel] = f"file {st.st_mode:o} {hashlib.sha256(p.read_bytes()).hexdigest()}"
    return out


def _out_root(tmp_path: Path, schema: int = 2) -> Path:
    out = tmp_path / "root"
    out.mkdir()
    shutil.copytree(RECORDED / KERNEL, out / KERNEL)
    store, _ = open_history(KernelPaths.under(out, KERNEL), source="out_root", persist=True)
    store.close()  # the store a recording command leaves
    if schema == 1:  # SYNTHETIC: the same real runs in a store of the previous schema
        db = out / KERNEL / "workbench" / HISTORY_FILE
        with sqlite3.connect(db) as conn:
            conn.execute("DROP TABLE comparisons")
            conn.execute("DELETE FROM schema_migrations WHERE version > 1")
        conn.close()
    return out


def _run_all(out: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, int]:
    codes = {}
    for argv in READ_ONLY:
        args = [a.replace("{R}", str(out)) for a in argv]
        rc = main(args)
        text = capsys.readouterr()
        assert "internal error" not in text.out + text.err, (args, text.err)
        codes[" ".join(argv[:2])] = rc
    return codes


@pytest.mark.parametrize("schema", [2, 1])
def test_every_read_only_command_leaves_the_out_root_byte_identical(
    tmp_path: Path, schema: int, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _out_root(tmp_path, schema)
    before, shipped = tree_hash(out), tree_hash(PROFILES)
    codes = _run_all(out, capsys)
    assert tree_hash(out) == before, codes
    assert tree_hash(PROFILES) == shipped
    assert codes["table matmul"] == 0 and codes["history matmul"] == 0 and codes["overview --out-root"] == 0


def test_calibrate_without_run_creates_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "root"
    out.mkdir()
    shutil.copytree(RECORDED / KERNEL, out / KERNEL)
    before = tree_hash(out)
    main(["calibrate", KERNEL, "--out-root", str(out)])
    capsys.readouterr()
    assert not (out / KERNEL / "workbench" / HISTORY_FILE).exists()
    assert tree_hash(out) == before


@pytest.mark.parametrize("how", ["symlink", "hardlink"])
def test_a_store_linked_to_an_outside_file_is_never_written(
    tmp_path: Path, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """SYNTHETIC: workbench/history.sqlite is a link (or a hard link) to a 0-byte file outside."""
    out = tmp_path / "root"
    out.mkdir()
    shutil.copytree(RECORDED / KERNEL, out / KERNEL)
    victim = tmp_path / "victim"
    victim.write_bytes(b"")
    store = out / KERNEL / "workbench" / HISTORY_FILE
    (os.symlink if how == "symlink" else os.link)(victim, store)
    before = tree_hash(out)
    _run_all(out, capsys)
    assert victim.read_bytes() == b""
    assert tree_hash(out) == before


def _can_bind_mount() -> bool:
    if sys.platform != "linux" or shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    return probe.returncode == 0 and os.geteuid() == 0


@pytest.mark.skipif(not _can_bind_mount(), reason="needs root and unshare -m for a read-only bind mount")
def test_on_a_read_only_mount_table_still_shows_what_the_store_holds(tmp_path: Path) -> None:
    """SYNTHETIC mount: the out root bind-mounted read-only in a private mount namespace. `table` and
    `history` read the store (and exit 0) as on a writable one."""
    out = _out_root(tmp_path)
    ro = tmp_path / "ro"
    ro.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CUTILE_KERNEL_OUT_ROOT", None)
    script = (
        f"mount --bind {out} {ro} && mount -o remount,bind,ro {ro} && "
        f"{sys.executable} -m cutile_workbench history {KERNEL} --out-root {ro} --json > {tmp_path}/h.json && "
        f"{sys.executable} -m cutile_workbench table {KERNEL} --out-root {ro} > {tmp_path}/t.txt"
    )
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    import json

    doc = json.loads((tmp_path / "h.json").read_text())
    assert len(doc["runs"]) == 2 and doc["imported_now"] == 0
    assert "run history unreadable" not in (tmp_path / "t.txt").read_text()
