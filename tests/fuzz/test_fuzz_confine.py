"""Fuzz of the confined readers (issue 33 §4): seeded mutations of REAL files (the recorded matmul
session's history store and E-table cache entry, the real launch fixtures and their per-set index),
``tests/fuzzing/confine_targets.py``. Default: 20 cases per target in process. ``-m slow``: 1,000 per
target (6,000 in all, seeds 0..999) in a child under ``prlimit --as=1G``: 0 violations, 0 hangs (the
child's timeout), 0 memory errors (the address-space limit turns one into a violation or a crash).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fuzzing.confine_targets import CONFINE_TARGETS, run_cases

TESTS = Path(__file__).resolve().parents[1]


def test_a_few_cases_per_confined_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(tmp_path / "cache"))
    result = run_cases(20)
    assert result["violations"] == []
    assert set(result["counts"]) == set(CONFINE_TARGETS)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("prlimit") is None, reason="prlimit (util-linux) not installed")
def test_six_thousand_cases_under_a_one_gib_address_space(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("a long sweep: select it with -m slow")
    env = {**os.environ, "CUTILE_WORKBENCH_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(TESTS)}
    done = subprocess.run(
        ["prlimit", f"--as={1 << 30}", sys.executable, "-m", "fuzzing.confine_targets", "1000"],
        cwd=TESTS,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,  # a hang is a failure, not a slow run (the sweep takes ~2 min on 2 loaded cores)
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["cases"] == 6000 and result["violations"] == [], result["violations"][:3]
