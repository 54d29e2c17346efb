"""Issue 25, hostile and broken inputs: each of the issue's twelve cases as a regression test.

The rule each test states: nothing is written outside a kernel dir's ``reports/``, E's perf logs and
``workbench/`` (symlinks followed), nothing is read outside the kernel dir, the shipped recorded
sessions are never written, special files never hang a command, and every bad value is an exit-2
error naming its file (and line/row and key) — never ``internal error``. Kernel dirs are copies of
the REAL recorded matmul session (H200, real cutile-rs); the mutations of them are SYNTHETIC.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cutile_workbench.cli import main

ROOT = Path(__file__).resolve().parent.parent.parent
RECORDED = ROOT / "cutile_workbench" / "profiles" / "tilegym" / "session"
KERNEL = "matmul"
CONFIG = "True-True-False-False-2048-2048-2048-0-0-torch.float16"


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CUTILE_KERNEL_OUT_ROOT", "TILEGYM_PATH", "CUTILE_WORKBENCH_KEYMAP"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def out_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    shutil.copytree(RECORDED / KERNEL, root / KERNEL)
    return root


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    text = out.out + out.err
    assert "internal error" not in text, text
    return rc, text


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


# ----------------------------------------------------------------- 1-5: writes that escape


def test_1_backup_dir_symlinked_outside_is_refused(
    out_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    assert cli(capsys, "report", "e", KERNEL, "--out-root", str(out_root), "--yes")[0] == 0
    backup = out_root / KERNEL / "reports" / ".workbench-backup"
    shutil.rmtree(backup, ignore_errors=True)
    backup.symlink_to(outside)
    rc, text = cli(capsys, "report", "e", KERNEL, "--out-root", str(out_root), "--yes")
    assert rc == 2 and ".workbench-backup" in text
    assert tree(outside) == []
    assert not [p for p in (out_root / KERNEL).rglob("*.wbtmp-*")]


@pytest.mark.parametrize("plant", ["store", "workbench_dir"])
def test_2_history_store_symlinked_outside_is_refused(
    out_root: Path, tmp_path: Path, plant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    kdir = out_root / KERNEL
    if plant == "store":
        victim = outside / "victim.sqlite"
        victim.write_bytes(b"")
        (kdir / "workbench" / "history.sqlite").symlink_to(victim)
    else:
        shutil.move(str(kdir / "workbench"), str(outside / "wb"))
        (kdir / "workbench").symlink_to(outside / "wb")
    before = {p: p.stat().st_size for p in outside.rglob("*") if p.is_file()}
    rc, text = cli(capsys, "history", KERNEL, "--out-root", str(out_root))
    assert rc == 2 and "outside the kernel dir" in text
    assert {p: p.stat().st_size for p in outside.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("how", ["flag", "env", "symlink"])
def test_3_history_never_writes_into_the_recorded_session(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = RECORDED / KERNEL / "workbench" / "history.sqlite"
    assert not store.exists()
    root = str(RECORDED)
    if how == "symlink":
        (tmp_path / "link").symlink_to(RECORDED)
        root = str(tmp_path / "link")
    try:
        if how == "env":
            monkeypatch.setenv("CUTILE_KERNEL_OUT_ROOT", root)
            rc, text = cli(capsys, "history", KERNEL)
        else:
            rc, text = cli(capsys, "history", KERNEL, "--out-root", root)
        assert rc == 0, text
        assert not store.exists()
        assert "nothing is written" in text or "in memory" in text
    finally:
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(str(store) + suffix).unlink(missing_ok=True)


def test_3_run_never_writes_into_the_recorded_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rule holds for every command: ``run`` named at a recorded session (here through a link) is refused."""
    before = sorted(
        p.name
        for p in (ROOT / "cutile_workbench" / "profiles" / "rms_norm" / "session" / "rms_norm").rglob("*")
    )
    (tmp_path / "link").symlink_to(ROOT / "cutile_workbench" / "profiles" / "rms_norm" / "session")
    rc, text = cli(capsys, "run", "rms_norm", "--out-root", str(tmp_path / "link"), "--profile")
    assert rc == 2 and "read-only" in text, text
    assert (
        sorted(
            p.name
            for p in (ROOT / "cutile_workbench" / "profiles" / "rms_norm" / "session" / "rms_norm").rglob("*")
        )
        == before
    )


def test_4_ir_index_entry_outside_the_kernel_dir_is_refused(
    out_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kdir = out_root / KERNEL
    index_path = kdir / "workbench" / "ir" / "index.json"
    index = json.loads(index_path.read_text())
    entry = index["configs"][CONFIG]["candidate"]
    secret = tmp_path / "secret" / "outside.mlir"
    secret.parent.mkdir()
    secret.write_text((kdir / entry["file"]).read_text())
    entry["file"] = "../../secret/outside.mlir"
    index_path.write_text(json.dumps(index))
    rc, text = cli(capsys, "report", "f", KERNEL, "--out-root", str(out_root), "--dry-run")
    assert rc == 2 and "outside.mlir" in text and "outside the kernel dir" in text


def test_4b_ir_index_absolute_and_symlinked_entries_are_refused(out_root: Path, tmp_path: Path) -> None:
    from cutile_workbench.errors import UnsafePath
    from cutile_workbench.ir.filing import index_file

    kdir = out_root / KERNEL
    secret = tmp_path / "secret.mlir"
    secret.write_text("entry @x {}\n")
    with pytest.raises(UnsafePath):
        index_file(kdir, {"file": str(secret)}, CONFIG, "candidate")
    (kdir / "workbench" / "ir" / "link.mlir").symlink_to(secret)
    with pytest.raises(UnsafePath):
        index_file(kdir, {"file": "workbench/ir/link.mlir"}, CONFIG, "candidate")


def test_5_kernel_name_with_trailing_newline_is_refused(
    out_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(out_root / KERNEL, out_root / "nl\n")
    rc, text = cli(capsys, "report", "e", "nl\n", "--out-root", str(out_root), "--yes")
    assert rc == 2 and "kernel" in text
    assert not (out_root / "nl\n" / "reports" / "performance.md").exists()


@pytest.mark.parametrize("name", ["../elsewhere", "/abs/matmul"])
def test_5_timeline_checks_the_kernel_name(
    name: str, out_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "elsewhere"
    shutil.copytree(out_root / KERNEL, target)
    rc, text = cli(capsys, "timeline", name, "--config", CONFIG, "--out-root", str(out_root))
    assert rc == 2 and "kernel name" in text


@pytest.mark.parametrize(
    "argv",
    [
        ["table"],
        ["report", "e"],
        ["report", "f"],
        ["diff"],
        ["timeline"],
        ["history"],
        ["kselect"],
        ["check"],
        ["audit-wrapper"],
        ["probe"],
    ],
)
def test_5_overlong_kernel_name_is_a_clean_error(
    argv: list[str], out_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "k" * 300
    extra = ["--config", CONFIG] if argv[0] in ("timeline", "probe") else []
    rc, text = cli(capsys, "--out-root", str(out_root), "--tilegym", str(out_root), *argv, name, *extra)
    assert rc == 2 and "kernel name" in text and "characters" in text


# ----------------------------------------------------------------- 6-7: hangs


def _limit_memory() -> None:  # a regression must fail, not take the shared machine down with it
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def _run_cli(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CUTILE_KERNEL_OUT_ROOT", "TILEGYM_PATH")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "cutile_workbench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
        preexec_fn=_limit_memory,
    )


def test_6_fifo_at_the_ir_index_does_not_hang(out_root: Path) -> None:
    index_path = out_root / KERNEL / "workbench" / "ir" / "index.json"
    index_path.unlink()
    os.mkfifo(index_path)
    try:
        done = _run_cli(["report", "f", KERNEL, "--out-root", str(out_root), "--dry-run"], timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("report f hung on a FIFO at workbench/ir/index.json")
    assert done.returncode == 2 and "not a regular file" in done.stderr and "index.json" in done.stderr


def test_6_dev_zero_at_the_ir_index_is_refused_unread(out_root: Path) -> None:
    index_path = out_root / KERNEL / "workbench" / "ir" / "index.json"
    index_path.unlink()
    index_path.symlink_to("/dev/zero")
    try:
        done = _run_cli(["report", "f", KERNEL, "--out-root", str(out_root), "--dry-run"], timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("report f kept reading /dev/zero")
    assert done.returncode == 2 and "index.json" in done.stderr and "internal error" not in done.stderr


def test_6_special_files_are_refused_before_opening(tmp_path: Path) -> None:
    from cutile_workbench.artifacts.confine import read_regular
    from cutile_workbench.errors import InputError

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for p in (fifo, Path("/dev/zero"), tmp_path):
        with pytest.raises(InputError) as ei:
            read_regular(p, kind="JSON")
        assert "not a regular file" in str(ei.value)
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * 2048)
    with pytest.raises(InputError, match="limit"):
        read_regular(big, kind="keymap", cap=1024)


def test_7_deeply_nested_keymap_is_a_notification(tmp_path: Path) -> None:
    from cutile_workbench.tui.keymap import load_keymap

    p = tmp_path / "keymap.toml"
    p.write_text('[keymap]\napp-report = "f4"\nx = ' + "[" * 3000 + "]" * 3000 + "\n")
    loaded = load_keymap(p, known={})  # must not raise
    assert loaded.problems and str(p) in str(loaded.problems[0])


def test_7_keymap_loader_is_linear_in_file_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """20,000 entries took 82 s (quadratic: each entry's line looked up by a scan of the text, and a
    difflib hint per unknown id). Counted steps instead of a wall-clock bound (which a loaded box broke):
    the text is indexed ONCE, and difflib runs at most MAX_HINTS times, whatever the file's size."""
    from cutile_workbench.tui import keymap

    counts = {"index": 0, "hint": 0}
    real_index, real_closest = keymap._LineIndex, keymap._closest

    class CountedIndex(real_index):  # type: ignore[misc, valid-type]
        def __init__(self, text: str) -> None:
            counts["index"] += 1
            super().__init__(text)

    def counted_closest(*a: Any, **kw: Any) -> Any:
        counts["hint"] += 1
        return real_closest(*a, **kw)

    monkeypatch.setattr(keymap, "_LineIndex", CountedIndex)
    monkeypatch.setattr(keymap, "_closest", counted_closest)
    p = tmp_path / "keymap.toml"
    p.write_text("[keymap]\n" + "".join(f'unknown-binding-{i} = "f{i % 12 + 1}"\n' for i in range(20_000)))
    loaded = keymap.load_keymap(p, known={})
    assert counts == {"index": 1, "hint": keymap.MAX_HINTS}
    assert len(loaded.problems) == 20_000
    assert loaded.problems[-1].line == 20_001


# ----------------------------------------------------------------- 8-10: errors that name nothing


def _mutate_log(path: Path, pattern: str, repl: str) -> None:
    text = path.read_text()
    new, n = re.subn(pattern, repl, text, count=1)
    assert n == 1
    path.write_text(new)


PERF_MUTATIONS = {  # name: (pattern, replacement, the key the error names)
    "samples_400_digits": (r'"samples": \[', '"samples": [' + "9" * 400 + ", ", "samples"),
    "nrep_5000_digits": (r'"nrep": \d+', '"nrep": ' + "7" * 5000, "record_json"),
    "nrep_2_63": (r'"nrep": \d+', f'"nrep": {2**63}', "nrep"),
    "nrep_negative": (r'"nrep": \d+', '"nrep": -343', "nrep"),
    "rel_std_negative": (r'"rel_std": [0-9.]+', '"rel_std": -1.0', "rel_std"),
    "harness_not_string": (r'"harness": "workbench"', '"harness": 7', "harness"),
}


@pytest.mark.parametrize("mutation", sorted(PERF_MUTATIONS))
def test_8_bad_numbers_in_the_baseline_log_name_file_line_and_key(
    mutation: str, out_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = out_root / KERNEL / "baseline_perf_cutile.txt"
    pattern, repl, key = PERF_MUTATIONS[mutation]
    _mutate_log(log, pattern, repl)
    rc, text = cli(capsys, "table", KERNEL, "--out-root", str(out_root))
    assert rc == 2, text
    assert re.search(re.escape(str(log)) + r":\d+: key '[^']*" + key, text), text


@pytest.mark.parametrize("mutation", sorted(PERF_MUTATIONS))
def test_8_history_imports_no_bad_value_and_says_where_it_was(
    mutation: str, out_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The history import is lenient by contract (a bad record is dropped, the run kept): the drop is a
    note naming file, line and key, and nothing bad reaches the store (2**63 overflowed SQLite's INTEGER)."""
    log = out_root / KERNEL / "baseline_perf_cutile.txt"
    pattern, repl, key = PERF_MUTATIONS[mutation]
    _mutate_log(log, pattern, repl)
    rc, text = cli(capsys, "history", KERNEL, "--out-root", str(out_root))
    assert rc == 0, text
    assert re.search(r"note: not imported: " + re.escape(str(log)) + r":\d+: [^\n]*" + key, text), text
    rc, text = cli(
        capsys, "history", KERNEL, "--out-root", str(out_root), "--json"
    )  # read back from the store
    assert rc == 0, text
    doc = json.loads(text)
    assert all(0 < p["median_ms"] < 1e6 for s in doc["series"] for p in s["points"])


@pytest.mark.parametrize("mutation", ["nrep_negative", "rel_std_negative", "harness_not_string"])
def test_8_bad_values_are_never_published(
    mutation: str, out_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = out_root / KERNEL / "reports" / "agent_logs" / "perf_cutile_rs.full.txt"
    _mutate_log(log, *PERF_MUTATIONS[mutation][:2])
    rc, text = cli(capsys, "report", "e", KERNEL, "--out-root", str(out_root), "--yes")
    assert rc == 2, text
    assert not (out_root / KERNEL / "reports" / "performance.md").exists()


@pytest.mark.parametrize(
    "doc", ["[]", "0", '{"runs": 1.5}', '{"runs": {"candidate": 3}}', '{"candidate": 5}']
)
def test_9_session_json_of_the_wrong_shape_names_the_file(
    doc: str, out_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = out_root / KERNEL / "workbench" / "session.json"
    session.write_text(doc)
    rc, text = cli(capsys, "timeline", KERNEL, "--config", CONFIG, "--out-root", str(out_root))
    assert rc == 2 and str(session) in text, text


@pytest.mark.parametrize(
    "column,value",
    [
        ("median_ms", "'abc'"),
        ("added_at", "'yesterday'"),
        ("recorded_at", "X'01'"),
        ("recorded_at", "9e18"),
        ("nrep", "'many'"),
        ("nrep", "-5"),
    ],
)
def test_10_history_cells_of_the_wrong_type_name_row_and_key(
    column: str, value: str, out_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cutile_workbench.artifacts.layout import KernelPaths
    from cutile_workbench.history.query import open_history

    recorded, _ = open_history(KernelPaths.under(out_root, KERNEL), source="out_root", persist=True)
    recorded.close()  # the store a recording command leaves (`history` itself writes nothing)
    store = out_root / KERNEL / "workbench" / "history.sqlite"
    table = "runs" if column in ("added_at", "recorded_at") else "configs"
    with sqlite3.connect(store) as conn:
        conn.execute(f"UPDATE {table} SET {column} = {value} WHERE rowid = (SELECT MIN(rowid) FROM {table})")
    rc, text = cli(capsys, "history", KERNEL, "--out-root", str(out_root))
    assert rc == 2, text
    assert str(store) in text and f"key '{column}'" in text and "id=" in text, text


# ----------------------------------------------------------------- 11: disk full


def test_11_failed_write_removes_its_temp_files_and_empty_backup_dir(
    out_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import errno

    from cutile_workbench.artifacts import writer

    assert cli(capsys, "report", "e", KERNEL, "--out-root", str(out_root), "--yes")[0] == 0
    kdir = out_root / KERNEL
    before = {p: p.read_bytes() for p in kdir.rglob("*") if p.is_file() and ".workbench-backup" not in str(p)}
    real_write = os.write
    budget = {"bytes": 20_480}

    def full_disk(fd: int, data: bytes | memoryview) -> int:
        if budget["bytes"] <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = real_write(fd, bytes(data[: budget["bytes"]]))
        budget["bytes"] -= n
        return n

    def failing_link(src: object, dst: object, **_by_descriptor: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer.os, "write", full_disk)
    monkeypatch.setattr(writer.os, "link", failing_link)  # the copy fallback writes with os.write: full too
    rc, text = cli(capsys, "report", "e", KERNEL, "--out-root", str(out_root), "--yes")
    monkeypatch.undo()
    assert rc == 2 and "No space left" in text
    assert [p for p in kdir.rglob("*") if writer.TEMP_MARK in p.name] == []
    backups = kdir / "reports" / writer.BACKUP_DIR_NAME
    if backups.is_dir():
        assert [p for p in backups.iterdir() if not any(p.iterdir())] == []
    after = {p: p.read_bytes() for p in kdir.rglob("*") if p.is_file() and ".workbench-backup" not in str(p)}
    assert after == before


# ----------------------------------------------------------------- 12: the embedded default


def test_12_timeline_on_the_embedded_default(capsys: pytest.CaptureFixture[str]) -> None:
    rc, text = cli(capsys, "timeline", KERNEL, "--config", CONFIG)
    assert rc == 0, text
    assert "launches.json.gz" in text and CONFIG in text


# ----------------------------------------------------------------- found by the structure-aware fuzzing


def test_fuzz_analysis_json_400_digit_number_is_located(tmp_path: Path) -> None:
    from cutile_workbench.artifacts.analysis import load_analysis
    from cutile_workbench.errors import InputError

    doc = json.loads(
        (ROOT / "cutile_workbench/profiles/rms_norm/session/rms_norm/reference/analysis.json").read_text()
    )
    p = tmp_path / "analysis.json"
    text = json.dumps(doc)
    number = re.search(r'"(\w+)": (\d+\.\d+)', text)
    assert number is not None
    p.write_text(text.replace(number.group(0), f'"{number.group(1)}": ' + "9" * 400, 1))
    with pytest.raises(InputError) as ei:
        load_analysis(p)
    assert str(p) in str(ei.value) and ei.value.key


def test_fuzz_launches_linked_out_is_not_read_by_report_f(
    out_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    launches = out_root / KERNEL / "workbench" / "launches.json.gz"
    shutil.move(str(launches), str(tmp_path / "elsewhere.json.gz"))
    launches.symlink_to(tmp_path / "elsewhere.json.gz")
    rc, text = cli(capsys, "report", "f", KERNEL, "--out-root", str(out_root), "--dry-run")
    assert rc == 2 and "launches.json.gz" in text and "outside the kernel dir" in text


def test_fuzz_failed_history_open_leaves_no_store(out_root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = out_root / KERNEL / "workbench" / "history.sqlite"
    Path(str(store) + "-journal").mkdir()  # a planted side file
    rc, _text = cli(capsys, "history", KERNEL, "--out-root", str(out_root))
    assert rc == 0 and not store.exists()  # `history` is read-only (issue 33 §2): it creates nothing
