"""The workbench's own process: what a face does once, first thing, before any command runs.

- :func:`prepare_process` — numpy loaded with a one-thread BLAS pool, the environment left as found
  (:mod:`cutile_workbench.infra.numeric_threads` says why and what was measured).
"""

from __future__ import annotations

from cutile_workbench.infra.numeric_threads import load_numpy_single_threaded


def prepare_process() -> None:
    load_numpy_single_threaded()
