"""numpy for the workbench's own process, with a one-thread BLAS pool, and the environment left as found.

Contract: :func:`load_numpy_single_threaded` imports numpy with ``OPENBLAS_NUM_THREADS=1`` set for the
moment the library loads (OpenBLAS sizes its thread pool then, and only then), and restores the
environment before returning, so every child process (the measured pytest child above all) inherits the
user's environment unchanged. A value the user set wins (it is left as it is). If numpy is already
imported it does nothing (too late to size the pool; a second call is free).

Why: the workbench's numeric work is small vectors (bootstraps, medians) that no BLAS call gets faster
with threads, while an OpenBLAS pool sized to the cores spins its threads on a many-core node. Measured
on the 16-core GPU machine (``bench/data/thread_cost-gpu-2026-12-02.json``, ``bench/thread_cost.py``):
a warm ``table`` at 1,000 configs used 5.08 CPU-s in 3.22 s of wall with the default pool and 2.28 CPU-s
in 2.32 s pinned to one thread; a second run (``bench/data/thread_cost-gpu-after-2026-12-02.json``) 3.47
CPU-s / 1.61 s against 1.44 / 1.50 s. The CPU halves in both; the wall gain is not consistent.
"""

from __future__ import annotations

import os
import sys

_POOL_VARIABLE = "OPENBLAS_NUM_THREADS"


def load_numpy_single_threaded() -> None:
    if "numpy" in sys.modules:
        return
    was_set = _POOL_VARIABLE in os.environ
    if not was_set:
        os.environ[_POOL_VARIABLE] = "1"
    try:
        import numpy  # noqa: F401  (loading it is the point: the pool is sized now)
    except ImportError:  # numpy is a dependency; without it the commands that need it say so themselves
        pass
    finally:
        if not was_set:
            os.environ.pop(_POOL_VARIABLE, None)
