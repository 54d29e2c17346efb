"""Hostile placements (issue 25, ``tests/fuzzing/hostile.py``): a symlink out of the kernel dir, a FIFO,
``/dev/zero``, a directory or a dangling link at a path the app touches, then a CLI command: no hang, no
open or write outside the kernel dir, exit 0-3 naming the offending file. The kernel dir is a copy of
the REAL recorded matmul session; the plants are SYNTHETIC. CI runs a fixed subset (the paths the
issue's cases went through) plus a few random draws, in a child process under a memory limit (a
regression that reads /dev/zero whole must fail the test, not take the shared machine down);
``bench/fuzz_report.py --hostile`` runs every combination.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from fuzzing.hostile import COMMANDS, PLACES, PLANTS, all_cases, run_hostile_case
from fuzzing.targets import RuleViolation

HERE = Path(__file__).resolve().parent.parent
FIXED = [
    ("reports/.workbench-backup", "link_out", "report_e"),
    ("workbench/history.sqlite", "link_out", "history"),
    ("workbench", "link_out", "history"),
    ("workbench/ir/index.json", "fifo", "report_f"),
    ("workbench/ir/index.json", "dev_zero", "report_f"),
    ("reports/.workbench.lock", "fifo", "report_e"),
    ("reports/.workbench-journal.json", "fifo", "diff"),
    ("workbench/session.json", "dev_zero", "timeline"),
    ("workbench/launches.json.gz", "fifo", "timeline"),
    ("reports/agent_logs/perf_cutile_rs.full.txt", "link_out", "table"),
    ("workbench/probes", "link_out", "report_f"),
    ("workbench/events.jsonl", "link_out", "history"),
]


def _run_child(cases: list[tuple[str, str, str]]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent), str(HERE)]))
    for name in ("CUTILE_KERNEL_OUT_ROOT", "TILEGYM_PATH"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "fuzzing.hostile", *(":".join(c) for c in cases)],
        capture_output=True,
        text=True,
        env=env,
        cwd=HERE,
        timeout=600,
    )


def test_hostile_placements_fixed_and_random() -> None:
    rng = random.Random(int(os.environ.get("HOSTILE_SEED", "25")))
    cases = FIXED + rng.sample(all_cases(), 6)
    done = _run_child(cases)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_matrix_covers_every_place_plant_and_command() -> None:
    assert len(all_cases()) == len(PLACES) * len(PLANTS) * len(COMMANDS)
    assert {c[0] for c in FIXED} <= set(PLACES)


def test_checker_catches_a_write_through_a_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker can fail: a CLI that follows the planted backup link is caught."""
    import cutile_workbench.cli as cli

    def bad_main(argv: list[str]) -> int:
        root = Path(argv[argv.index("--out-root") + 1])
        (root / "matmul/reports/.workbench-backup/stolen.md").write_text("x")
        return 0

    monkeypatch.setattr(cli, "main", bad_main)
    with pytest.raises(RuleViolation, match=r"open of|outside area changed"):
        run_hostile_case("reports/.workbench-backup", "link_out", "report_e", tmp_path)


def test_checker_catches_a_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fuzzing import hostile

    import cutile_workbench.cli as cli

    def hanging_main(argv: list[str]) -> int:
        root = Path(argv[argv.index("--out-root") + 1])
        (root / "matmul/workbench/ir/index.json").read_bytes()  # the planted FIFO: blocks
        return 0

    monkeypatch.setattr(cli, "main", hanging_main)
    monkeypatch.setattr(hostile, "CASE_TIMEOUT_S", 1)
    with pytest.raises(RuleViolation, match="hung"):
        run_hostile_case("workbench/ir/index.json", "fifo", "report_f", tmp_path)
