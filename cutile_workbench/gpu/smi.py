"""``nvidia-smi``, launched once for the package: the runner's GPU facts, the shard devices, the GPU probe.

Contract:
- :func:`run_nvidia_smi` runs ``nvidia-smi <args>`` and returns ``(completed process, "")`` or
  ``(None, why not)`` — ``"nvidia-smi not found"`` (not on PATH) or ``"nvidia-smi failed (…)"``
  (could not start, or ran past ``timeout_s``). A non-zero exit is the caller's to read.
- :func:`query_gpu` is ``nvidia-smi --query-gpu=<fields> --format=csv,noheader [extra]``: one
  stripped line per GPU, or None — no nvidia-smi, a failure, a non-zero exit (``-i`` naming no GPU
  exits 6) or no output. Never raises: a host without a GPU is an answer, not an error.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence


def run_nvidia_smi(
    args: Sequence[str], *, timeout_s: float
) -> tuple[subprocess.CompletedProcess[str] | None, str]:
    """``nvidia-smi <args>``: the finished process, or None and why it did not run to the end."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None, "nvidia-smi not found"
    try:
        return subprocess.run([smi, *args], capture_output=True, text=True, timeout=timeout_s), ""
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"nvidia-smi failed ({exc})"


def query_gpu(fields: str, extra: Sequence[str] = (), *, timeout_s: float = 30.0) -> list[str] | None:
    """One csv line per GPU for ``--query-gpu=<fields>`` (see the module contract), or None."""
    proc, _why = run_nvidia_smi(
        [f"--query-gpu={fields}", "--format=csv,noheader", *extra], timeout_s=timeout_s
    )
    if proc is None or proc.returncode != 0 or not proc.stdout.strip():
        return None
    return [line.strip() for line in proc.stdout.strip().splitlines()]
