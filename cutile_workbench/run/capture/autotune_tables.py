"""Both sides' autotune tables on every run (issue 32): one ``autotune`` event per tuning.

Contract: inside a measuring pytest process (the ``--workbench-harness`` swap,
:mod:`cutile_workbench.run.capture.tilegym_swap`):

- the reference's ``cuda.tile.tune.exhaustive_search`` is replaced by :func:`exhaustive_search`, which
  calls the original and emits ``autotune {nodeid, params, side: "reference", kernel, rows}`` from its
  ``TuningResult`` (every succeeded config: ``mean_us``, ``error_margin_us`` = half its 95% interval,
  ``num_samples``; failed configs with their error);
- the candidate's cutile-rs autotuner times each config through
  :func:`cutile_workbench.run.capture.tilegym_timing.bench_config_cupti`, which calls
  :func:`record_candidate_config`: one ``autotune`` event with ``side: "candidate"`` and one row
  (median and half a 95% interval of its timed calls, from their spread).

Rows are ``{config, mean_us, error_us, samples}`` (``error_us`` None when not known); ``config`` is the
config's ``repr``. Recording never changes what the tuner returns, and a failure to record is
swallowed (the tables are evidence, not part of the measurement). The reader is
:mod:`cutile_workbench.evidence.autotune`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

ORIGINAL_ATTR = "_workbench_original_exhaustive_search"


def _emit(side: str, kernel: str, rows: list[dict[str, Any]], failures: int = 0) -> None:
    try:
        from cutile_workbench.artifacts import events
        from cutile_workbench.run.capture.harness import current_test

        nodeid, params = current_test()
        events.emit(
            None,
            "autotune",
            nodeid=nodeid,
            params=params,
            side=side,
            kernel=kernel,
            rows=rows,
            failures=failures,
        )
    except Exception:
        return


def _kernel_name(kernel: Any) -> str:
    for attr in ("__name__", "name", "_name"):
        value = getattr(kernel, attr, None)
        if isinstance(value, str) and value:
            return value
    inner = getattr(kernel, "_pyfunc", None) or getattr(kernel, "func", None)
    return getattr(inner, "__name__", type(kernel).__name__)


def exhaustive_search(
    search_space: Sequence[Any], stream: Any, grid_fn: Any, kernel: Any, *args: Any, **kwargs: Any
) -> Any:
    """cuda.tile's ``exhaustive_search``, unchanged, plus the reference's ``autotune`` event."""
    import cuda.tile.tune as tune

    original = getattr(tune, ORIGINAL_ATTR, None)
    if original is None:  # the swap stores the original before patching; never recurse into ourselves
        from cuda.tile.tune import _tune

        original = _tune.exhaustive_search
    result = original(search_space, stream, grid_fn, kernel, *args, **kwargs)
    try:
        rows = [
            {
                "config": repr(m.config),
                "mean_us": float(m.mean_us),
                "error_us": float(m.error_margin_us),
                "samples": int(m.num_samples),
            }
            for m in result.successes
        ]
        name = (
            _kernel_name(kernel) if not callable(kernel) or hasattr(kernel, "replace_hints") else "kernel_fn"
        )
        _emit("reference", name, rows, len(getattr(result, "failures", ()) or ()))
    except Exception:
        pass
    return result


def record_candidate_config(kernel: str, cfg: Any, times_us: Sequence[float]) -> None:
    """One candidate config's timing (cutile-rs autotuner): median and half a 95% interval."""
    if not times_us:
        return
    ordered = sorted(times_us)
    median = ordered[len(ordered) // 2]
    err = 1.96 * statistics.stdev(ordered) / math.sqrt(len(ordered)) if len(ordered) > 1 else None
    _emit(
        "candidate",
        kernel,
        [{"config": repr(cfg), "mean_us": float(median), "error_us": err, "samples": len(ordered)}],
    )
