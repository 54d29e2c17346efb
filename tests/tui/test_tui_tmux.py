"""Run scripts/tmux_drive.sh: the real app in a real terminal (tmux), driven by keystrokes.

Open, sort, filter, open a timeline, open the IR diff, write an E report on a temp copy of the
recorded rms_norm session (or the real H200 E fixture), quit. Skipped where tmux is missing.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")
def test_tmux_drive_script_passes() -> None:
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "tmux_drive.sh")],
        capture_output=True,
        text=True,
        timeout=240,
        env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable, "HOME": "/tmp"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for step in (
        "sort by ratio",
        "filter '16384'",
        "opens the selected row's timeline",
        "IR diff of",
        "E report written: VERDICT: ",
        "Ctrl+Q quits with exit 0",
    ):
        assert step in out, out
    assert out.rstrip().endswith("PASS")
