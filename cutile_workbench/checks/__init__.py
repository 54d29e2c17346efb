"""TileGym-side checks that E and F start with (no Textual; CLI twins in :mod:`.cli`).

- :mod:`.precondition` — E Step 1: ``from tilegym.backend.cutile_rs import autotune_launch`` in a
  child process with the user's Python; BLOCKED files on failure.
- :mod:`.wiring` — E Step 2: ``test_perf -k cutile_rs --collect-only`` count and the one guarded
  test edit (add cutile-rs to test_perf's backend parametrize, in the correctness test's style).
- :mod:`.kselect` — ``-k`` expressions for candidate and baseline from analysis.json's
  ``test_perf_configs``; node-id set comparison; pytest's ``-k`` matcher applied to static ids.
- :mod:`.wrapper_audit` — static ``ast`` audit of ``src/tilegym/ops/cutile_rs/<kernel>.py``
  returning ``model.Finding(kind="wrapper")`` for F.
- :mod:`.testfile` / :mod:`.static_eval` — test files read with ``ast``; ids derived like pytest.
- :mod:`.childproc` — child processes in the TileGym environment (cwd, PYTHONPATH=src, timeout).
"""

from cutile_workbench.checks.kselect import (
    KSelection,
    KTarget,
    SelectionDiff,
    build_k_expressions,
    compare_selections,
    simulate_k,
)
from cutile_workbench.checks.precondition import PreconditionResult, check_precondition
from cutile_workbench.checks.wiring import (
    WiringEdit,
    WiringStatus,
    analyse_wiring,
    apply_wiring,
    check_wiring,
)
from cutile_workbench.checks.wrapper_audit import audit_wrapper

__all__ = [
    "KSelection",
    "KTarget",
    "PreconditionResult",
    "SelectionDiff",
    "WiringEdit",
    "WiringStatus",
    "analyse_wiring",
    "apply_wiring",
    "audit_wrapper",
    "build_k_expressions",
    "check_precondition",
    "check_wiring",
    "compare_selections",
    "simulate_k",
]
