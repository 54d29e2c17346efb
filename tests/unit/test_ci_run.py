"""``.ci/run`` runs every stage and reports all failures, then fails (issue 35, item 1).

The real script runs in a scratch tree where each stage is a STUB that fails (the snapshot unpack,
the README's test command, the slow tests' interpreter): every stage must still run, the summary must
name each failed stage, and the exit status must be 1. The README test-command extraction is the
script's own (the scratch README carries the marker the real one does).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _exe(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _scratch(tmp_path: Path, *, snapshot_rc: int, readme_rc: int, slow_rc: int) -> Path:
    root = tmp_path / "repo"
    (root / ".ci").mkdir(parents=True)
    shutil.copy(REPO / ".ci" / "run", root / ".ci" / "run")
    log = root / "stages.log"
    _exe(root / ".ci" / "slurm-up.sh", "exit 0\n")
    _exe(root / ".ci" / "wheel-check.sh", f"echo wheel >> {log}\n")
    # python3 tests/tilegym_snapshot.py: a file run by the real python3, so a stub module
    (root / "tests").mkdir()
    (root / "tests" / "tilegym_snapshot.py").write_text(
        f"import sys; open({str(log)!r}, 'a').write('snapshot\\n'); sys.exit({snapshot_rc})\n"
    )
    (root / "README.md").write_text(
        f"# x\n\n<!-- test-command -->\n```bash\necho readme >> {log} && exit {readme_rc}\n```\n"
    )
    _exe(root / ".venv" / "bin" / "python", f'#!/bin/sh\necho "slow $*" >> {log}\nexit {slow_rc}\n')
    return root


def _run(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(root / ".ci" / "run")],
        capture_output=True,
        text=True,
        env={**os.environ, "WORKBENCH_TILEGYM_TARBALL": "/nonexistent"},
        check=False,
    )


def test_every_stage_runs_and_every_failure_is_listed(tmp_path: Path) -> None:
    root = _scratch(tmp_path, snapshot_rc=1, readme_rc=3, slow_rc=4)
    proc = _run(root)
    assert proc.returncode == 1, proc.stderr
    ran = (root / "stages.log").read_text().splitlines()
    assert ran[:4] == ["snapshot", "readme", "wheel", "slow -m pytest -m slow --durations=25"]
    assert ran[4].startswith("slow bench/mutation_test.py --sample") and "--check-survivors" in ran[4]
    summary = proc.stderr[proc.stderr.index("ci: FAILED stages (4):") :]
    for name in ("TileGym snapshot", "README test command (exit 3)", "slow tests (exit 4)", "mutants"):
        assert name in summary, summary


def test_all_stages_passing_is_exit_0(tmp_path: Path) -> None:
    proc = _run(_scratch(tmp_path, snapshot_rc=0, readme_rc=0, slow_rc=0))
    assert proc.returncode == 0, proc.stderr
    assert "ci: every stage passed" in proc.stdout and "FAILED" not in proc.stderr


def test_only_the_slow_stage_failing_still_fails_the_run(tmp_path: Path) -> None:
    proc = _run(_scratch(tmp_path, snapshot_rc=0, readme_rc=0, slow_rc=5))
    assert proc.returncode == 1 and "slow tests (exit 5)" in proc.stderr
