"""GPU fault isolation (issue 6 item 4) on the H200: a backend that raises, one that triggers an
illegal memory access and one that hangs, each in a pytest child process with a timeout.

Checks: the raising config is FAILED with its reason while the healthy config in the same child
completes; the illegal access kills only its child (reason in the log and event stream); the hang
is killed on the timeout; a fresh child afterwards still measures (the GPU is usable).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]
NODE = "profiles/faults/test_faults.py::Test_Faults::test_perf"


def _child(kexpr: str, tmp: Path, timeout: float) -> tuple[int | None, str, list[dict]]:
    events = tmp / f"ev_{kexpr.replace(' ', '_')}.jsonl"
    env = dict(os.environ, WORKBENCH_FAULTS="1", MAX_REP="50", REP="5", WARMUP="5")
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        NODE,
        "-k",
        kexpr,
        "-sv",
        "-p",
        "cutile_workbench.run.plugins.perflog",
        "--workbench-print-record",
        "--workbench-events",
        str(events),
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT / "cutile_workbench",
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # the child and anything it started; nothing else
        out, _ = proc.communicate()
        rc = None
    evs = (
        [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
        if events.exists()
        else []
    )
    return rc, out, evs


def test_raising_backend_fails_alone_and_healthy_config_completes(tmp_path):
    rc, out, evs = _child("pytorch or raises", tmp_path, 180)
    assert rc == 1, out[-2000:]
    assert "test_perf[pytorch-1024-1024-torch.float32] PASSED" in out
    assert "FAILED" in out and "failed on purpose" in out
    failed = [e for e in evs if e["event"] == "test_failed"]
    assert (
        len(failed) == 1 and "raises" in failed[0]["nodeid"] and "failed on purpose" in failed[0]["longrepr"]
    )
    assert any(e["event"] == "record" and e["framework"] == "pytorch" for e in evs)


def test_illegal_memory_access_is_contained_in_its_child(tmp_path):
    rc, out, evs = _child("illegal", tmp_path, 180)
    assert rc not in (0, None), out[-2000:]
    assert "illegal memory access" in out, out[-2000:]
    assert not any(e["event"] == "record" for e in evs)
    rc2, out2, _ = _child("pytorch", tmp_path, 180)  # the GPU is still usable from a fresh child
    assert rc2 == 0, out2[-2000:]


def test_hanging_backend_is_killed_on_timeout(tmp_path):
    t0 = time.monotonic()
    rc, out, evs = _child("hangs", tmp_path, 25)
    assert rc is None, f"child was expected to hang, exited {rc}: {out[-1000:]}"
    assert time.monotonic() - t0 < 60
    assert any(e["event"] == "test_start" and "hangs" in e["nodeid"] for e in evs)
    assert not any(e["event"] == "test_finish" and "hangs" in e["nodeid"] for e in evs)
    rc2, out2, _ = _child("pytorch", tmp_path, 180)
    assert rc2 == 0, out2[-2000:]
