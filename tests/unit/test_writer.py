"""Guarded writer: path safety, lock, backups, and crash safety under SIGKILL at every step.

Contents written here are synthetic small reports (edge-case fixtures); what matters is the
file-set invariant: after any kill + ``recover()`` either the complete old set or the complete new
set is on disk, never a mix.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cutile_workbench.artifacts.writer import (
    BACKUP_DIR_NAME,
    KILL_ENV,
    LOCK_NAME,
    STEPS,
    LockBusy,
    kernel_lock,
    recover,
    write_plan,
)
from cutile_workbench.errors import UnsafePath, ValidationRefused
from cutile_workbench.model import PlannedFile, ReportPlan

REL = (
    "reports/performance.md",
    "reports/agent_logs/agent_e.md",
    "perf_cutile_rs.txt",
    "reports/agent_logs/perf_investigation.log",
)


def plan_for(kdir: Path, tag: str, *, ok: bool = True, rels: tuple[str, ...] = REL) -> ReportPlan:
    files = [PlannedFile(r, f"{tag}:{r}\n" * 50) for r in rels]
    return ReportPlan(
        stage="E",
        kernel=kdir.name,
        kernel_dir=kdir,
        files=files,
        verdict="INVESTIGATE",
        validator_output="",
        ok=ok,
    )


def snapshot(kdir: Path) -> dict[str, str]:
    out = {}
    for p in sorted(kdir.rglob("*")):
        rel = p.relative_to(kdir).as_posix()
        if p.is_file() and ".workbench" not in rel:
            out[rel] = p.read_text()
    return out


def test_write_backup_and_listing(tmp_path: Path) -> None:
    kdir = tmp_path / "softmax"
    kdir.mkdir()
    first = write_plan(plan_for(kdir, "old"))
    assert first.backup_dir is None
    assert sorted(p.relative_to(kdir).as_posix() for p in first.written) == sorted(REL)
    second = write_plan(plan_for(kdir, "new"))
    assert second.backup_dir is not None and second.backup_dir.parent.name == BACKUP_DIR_NAME
    assert all(v.startswith("new:") for v in snapshot(kdir).values())
    backed = {
        p.relative_to(second.backup_dir).as_posix(): p.read_text()
        for p in second.backup_dir.rglob("*")
        if p.is_file()
    }
    assert sorted(backed) == sorted(REL) and all(v.startswith("old:") for v in backed.values())
    assert not (kdir / "reports" / LOCK_NAME).exists()
    assert not (kdir / "reports" / ".workbench-journal.json").exists()


def test_refuses_when_not_ok(tmp_path: Path) -> None:
    kdir = tmp_path / "softmax"
    kdir.mkdir()
    with pytest.raises(ValidationRefused):
        write_plan(plan_for(kdir, "x", ok=False))
    assert list(kdir.iterdir()) == []


@pytest.mark.parametrize(
    "rel",
    [
        "/etc/passwd",
        "../x.md",
        "reports/../../x.md",
        "generated/x.mlir",
        "kernel.rs",
        "reports/./a.md",
        "reports//a.md",
        "perf_cutile_py.txt",
        "reports/.workbench.lock",
        "reports\\a.md",
    ],
)
def test_unsafe_relpaths_refused_before_any_write(tmp_path: Path, rel: str) -> None:
    kdir = tmp_path / "softmax"
    kdir.mkdir()
    with pytest.raises(UnsafePath):
        write_plan(plan_for(kdir, "x", rels=("reports/performance.md", rel)))
    assert list(kdir.iterdir()) == []


def test_unsafe_kernel_names(tmp_path: Path) -> None:
    for name in ("..", ".", "a/b"):
        plan = ReportPlan(
            stage="E",
            kernel=name,
            kernel_dir=tmp_path / "x",
            files=[],
            verdict="",
            validator_output="",
            ok=True,
        )
        with pytest.raises(UnsafePath):
            write_plan(plan)


def test_symlinked_reports_dir_and_target_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    kdir = tmp_path / "softmax"
    kdir.mkdir()
    (kdir / "reports").symlink_to(outside)
    with pytest.raises(UnsafePath, match="symlink"):
        write_plan(plan_for(kdir, "x"))
    assert list(outside.iterdir()) == []
    (kdir / "reports").unlink()
    (kdir / "reports").mkdir()
    (kdir / "reports" / "performance.md").symlink_to(outside / "stolen.md")
    with pytest.raises(UnsafePath):
        write_plan(plan_for(kdir, "x"))
    (kdir / "perf_cutile_rs.txt").symlink_to(outside / "perf.txt")
    (kdir / "reports" / "performance.md").unlink()
    with pytest.raises(UnsafePath):
        write_plan(plan_for(kdir, "x"))
    assert list(outside.iterdir()) == []


def test_stale_lock_cleared_live_lock_respected(tmp_path: Path) -> None:
    kdir = tmp_path / "softmax"
    (kdir / "reports").mkdir(parents=True)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    lock = kdir / "reports" / LOCK_NAME
    lock.write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname(), "time": "x"}))
    write_plan(plan_for(kdir, "new"))  # stale (dead pid) → cleared
    assert not lock.exists()
    lock.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "time": "x"}))
    with pytest.raises(LockBusy):
        write_plan(plan_for(kdir, "other"), lock_timeout_s=0.2)
    assert all(v.startswith("new:") for v in snapshot(kdir).values())
    lock.write_text(json.dumps({"pid": 1, "host": "some-other-node", "time": "x"}))
    with pytest.raises(LockBusy):  # another host's lock: cannot prove it dead, so it is respected
        write_plan(plan_for(kdir, "other"), lock_timeout_s=0.1)
    lock.unlink()


CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from cutile_workbench.model import PlannedFile, ReportPlan
    from cutile_workbench.artifacts.writer import write_plan
    kdir, tag = Path(sys.argv[1]), sys.argv[2]
    rels = sys.argv[3].split(",")
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    for i in range(n):
        files = [PlannedFile(r, f"{tag}:{r}\\n" * 50) for r in rels]
        write_plan(ReportPlan(stage="E", kernel=kdir.name, kernel_dir=kdir, files=files, verdict="X",
                              validator_output="", ok=True), lock_timeout_s=60)
    """
)


def _run_child(kdir: Path, tag: str, rels: tuple[str, ...], kill_at: int | None) -> int:
    env = dict(os.environ)
    env.pop(KILL_ENV, None)
    if kill_at is not None:
        env[KILL_ENV] = str(kill_at)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(kdir), tag, ",".join(rels)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.returncode


F_REL = (
    "reports/perf_investigation_all_shapes.md",
    "reports/perf_investigation_16384-2048-torch.bfloat16.md",
    "reports/agent_f.md",
    "reports/agent_logs/agent_f.md",
)


@pytest.mark.parametrize(
    ("preexisting", "rels"),
    [("all", REL), ("some", REL), ("all", F_REL), ("some", F_REL)],
    ids=["E-all", "E-some", "F-all", "F-some"],
)
def test_sigkill_at_every_step_leaves_old_or_new_set(
    tmp_path: Path, preexisting: str, rels: tuple[str, ...]
) -> None:
    """Issue 6 item 2: kill the writer child at every step of an E and an F set, recover, check."""
    for step in range(1, len(STEPS) + 1):
        kdir = tmp_path / f"k{step}" / "softmax"
        kdir.mkdir(parents=True)
        old_rels = rels if preexisting == "all" else rels[:2]
        write_plan(plan_for(kdir, "old", rels=old_rels))
        old = snapshot(kdir)
        rc = _run_child(kdir, "new", rels, kill_at=step)
        assert rc == -9, f"child was not killed at step {step} ({STEPS[step - 1]}): rc={rc}"
        recover(kdir)
        after = snapshot(kdir)
        new = {r: f"new:{r}\n" * 50 for r in rels}
        assert after in (old, new), f"mixed set after kill at step {step} ({STEPS[step - 1]})"
        # the dir is usable again: stale lock cleared, next write succeeds
        write_plan(plan_for(kdir, "next", rels=rels))
        assert snapshot(kdir) == {r: f"next:{r}\n" * 50 for r in rels}
        leftovers = [p.name for p in kdir.rglob("*") if ".wbtmp-" in p.name or p.name == LOCK_NAME]
        assert leftovers == []


def test_kill_after_commit_rolls_forward(tmp_path: Path) -> None:
    kdir = tmp_path / "softmax"
    kdir.mkdir()
    write_plan(plan_for(kdir, "old"))
    assert _run_child(kdir, "new", REL, kill_at=STEPS.index("journal_committed") + 1) == -9
    assert (kdir / "reports" / ".workbench-journal.json").exists()
    assert recover(kdir) == "rolled_forward"
    assert all(v.startswith("new:") for v in snapshot(kdir).values())


def test_concurrent_writers_never_interleave(tmp_path: Path) -> None:
    kdir = tmp_path / "softmax"
    kdir.mkdir()
    env = {k: v for k, v in os.environ.items() if k != KILL_ENV}
    procs = [
        subprocess.Popen([sys.executable, "-c", CHILD, str(kdir), tag, ",".join(REL), "15"], env=env)
        for tag in ("A", "B")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    tags = {v.split(":", 1)[0] for v in snapshot(kdir).values()}
    assert len(tags) == 1  # the final set came from one writer entirely


def test_lock_critical_sections_do_not_overlap(tmp_path: Path) -> None:
    kdir = tmp_path / "softmax"
    kdir.mkdir()
    trace = tmp_path / "trace.txt"
    script = textwrap.dedent(
        f"""
        import os, time
        from pathlib import Path
        from cutile_workbench.artifacts.writer import kernel_lock
        for _ in range(20):
            with kernel_lock(Path({str(kdir)!r}), timeout_s=60):
                with open({str(trace)!r}, "a") as f:
                    f.write(f"in {{os.getpid()}}\\n"); f.flush()
                time.sleep(0.002)
                with open({str(trace)!r}, "a") as f:
                    f.write(f"out {{os.getpid()}}\\n"); f.flush()
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script]) for _ in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    lines = trace.read_text().split()
    events = list(zip(lines[::2], lines[1::2], strict=True))
    assert len(events) == 120
    for i in range(0, len(events), 2):
        assert events[i][0] == "in" and events[i + 1] == ("out", events[i][1])


def test_lock_refuses_symlinked_reports(tmp_path: Path) -> None:
    kdir = tmp_path / "softmax"
    kdir.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (kdir / "reports").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafePath), kernel_lock(kdir):
        pass
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_tampered_journal_cannot_move_outside_files(tmp_path: Path) -> None:
    kdir = tmp_path / "softmax"
    (kdir / "reports").mkdir(parents=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("outside")
    (kdir / "reports" / ".workbench-journal.json").write_text(
        json.dumps({"version": 1, "entries": [{"target": "reports/performance.md", "temp": "../secret.txt"}]})
    )
    with pytest.raises(UnsafePath):
        recover(kdir, blocking=True)
    assert secret.read_text() == "outside" and not (kdir / "reports/performance.md").exists()
    (kdir / "reports" / ".workbench-journal.json").write_text(
        json.dumps({"version": 1, "entries": [{"target": "../../secret.txt", "temp": "reports/.x.wbtmp-1"}]})
    )
    with pytest.raises(UnsafePath):
        recover(kdir, blocking=True)
    assert secret.read_text() == "outside"


# --------------------------------------------------------------------------- a report set is one unit

OLD_F = (
    "reports/perf_investigation_2048-2048-2048.md",
    "reports/perf_investigation_4096-4096-4096.md",
    "reports/perf_investigation_8192-8192-8192.md",
    "reports/agent_f.md",
    "reports/agent_logs/agent_f.md",
)
NEW_F = ("reports/perf_investigation_all_shapes.md", "reports/agent_f.md", "reports/agent_logs/agent_f.md")


def f_plan(kdir: Path, tag: str, rels: tuple[str, ...]) -> ReportPlan:
    """SYNTHETIC F sets: a per-config run (three FIXABLE reports) then an all-shapes run (issue 33 §8)."""
    verdict = "FIXABLE" if tag == "old" else "ALIGNED"
    files = [PlannedFile(r, f"VERDICT: {verdict}\n{tag}:{r}\n") for r in rels]
    return ReportPlan("F", kdir.name, kdir, files, verdict, "", True)


def test_a_report_set_is_one_unit_the_previous_runs_reports_go_with_a_backup(tmp_path: Path) -> None:
    kdir = tmp_path / "matmul"
    kdir.mkdir()
    write_plan(f_plan(kdir, "old", OLD_F))
    (kdir / "reports" / "performance.md").write_text("E's report: not F's set\n")
    result = write_plan(f_plan(kdir, "new", NEW_F))
    reports = sorted(p.name for p in (kdir / "reports").glob("perf_investigation_*.md"))
    assert reports == ["perf_investigation_all_shapes.md"]
    assert (kdir / "reports" / "performance.md").is_file()
    assert result.backup_dir is not None
    for rel in OLD_F:
        assert (result.backup_dir / rel).read_text().startswith("VERDICT: FIXABLE")
    assert sorted(p.relative_to(kdir).as_posix() for p in result.removed) == sorted(OLD_F[:3])
    assert not any(
        "FIXABLE" in p.read_text() for p in (kdir / "reports").rglob("*.md") if BACKUP_DIR_NAME not in str(p)
    )


F_CHILD = CHILD.replace('stage="E"', 'stage="F"')


def test_sigkill_at_every_step_of_a_set_change_leaves_the_old_set_or_the_new_one(tmp_path: Path) -> None:
    for step in range(1, len(STEPS) + 1):
        kdir = tmp_path / f"k{step}" / "matmul"
        kdir.mkdir(parents=True)
        write_plan(f_plan(kdir, "old", OLD_F))
        old = snapshot(kdir)
        env = {k: v for k, v in os.environ.items() if k != KILL_ENV}
        env[KILL_ENV] = str(step)
        proc = subprocess.run(
            [sys.executable, "-c", F_CHILD, str(kdir), "new", ",".join(NEW_F)], env=env, capture_output=True
        )
        assert proc.returncode == -9, f"not killed at step {step}"
        recover(kdir)
        new = {r: f"new:{r}\n" * 50 for r in NEW_F}
        assert snapshot(kdir) in (old, new), f"mixed set after kill at step {step} ({STEPS[step - 1]})"
