"""The workbench's own process loads numpy with a one-thread BLAS pool, and leaves no variable behind.

Measured on the 16-core GPU machine (bench/data/thread_cost-gpu-2026-12-02.json): with numpy's
OpenBLAS pool sized to the cores, a warm ``table`` at 1,000 configs used 5.08 CPU-s in 3.22 s of wall;
pinned to one thread, 2.28 CPU-s in 2.32 s. The pool is sized when numpy's library loads, so the CLI
loads numpy first thing with ``OPENBLAS_NUM_THREADS=1`` and then restores the environment: a measured
pytest child (or any other child) must inherit the user's environment unchanged.

Counted, not timed: the threads of a fresh interpreter (Linux ``/proc/self/task``) after the CLI ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_CHILD = r"""
import json, os, sys
before = dict(os.environ)
from cutile_workbench.cli import main
rc = main(sys.argv[1:])
import numpy
print("RESULT " + json.dumps({
    "rc": rc,
    "threads": len(os.listdir("/proc/self/task")),
    "env_changed": sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k)),
}))
"""


def _run(argv: list[str], **env: str) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**base, "PYTHONPATH": str(ROOT), **env},
        check=False,
        timeout=300,
    )
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


needs_cores = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir() or (os.cpu_count() or 1) < 2,
    reason="counts threads in /proc/self/task: Linux with at least 2 cores (one core: the pool is one thread anyway)",
)


@needs_cores
def test_a_kernel_command_runs_with_a_one_thread_blas_pool_and_an_unchanged_environment() -> None:
    got = _run(["table", "matmul", "--json"])
    assert got["rc"] == 0
    assert got["threads"] == 1, f"{got['threads']} threads: numpy's BLAS pool was sized to the cores"
    assert got["env_changed"] == [], "the environment a child inherits was changed"


@needs_cores
def test_a_users_own_blas_setting_wins() -> None:
    got = _run(["table", "matmul", "--json"], OPENBLAS_NUM_THREADS="2")
    assert got["rc"] == 0
    assert got["threads"] == 2
    assert got["env_changed"] == []
