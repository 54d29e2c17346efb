"""Swap TileGym's ``tests.common.benchmark_fn_cupti`` for the workbench harness (``--workbench-harness``).

Contract: :func:`install(config)` replaces ``tests.common.benchmark_fn_cupti`` with
:func:`benchmark_fn_cupti` below, which has TileGym's exact signature (TileGym's ``benchmark`` calls
it positionally: ``fn, warmup, rep, min_rep, initial_rep, grad_to_none, fast_flush`` plus the keyword
``kernel_filter``) and returns the same keys (plus ``samples``, ``launches_per_call``,
``capture_source``), so TileGym's own tests yield per-launch timelines. If ``tests.common`` is not
imported yet, an import hook patches it the moment it is. Without ``install`` TileGym is untouched.
The backend is the first id token of the running test (``PYTEST_CURRENT_TEST``).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

TARGET_MODULE = "tests.common"
TARGET_NAME = "benchmark_fn_cupti"
_ORIGINAL_ATTR = "_workbench_original_benchmark_fn_cupti"


def benchmark_fn_cupti(
    fn: Callable[[], Any],
    warmup: float = 100.0,
    rep: float = 50.0,
    min_rep: int = 2,
    initial_rep: int = 5,
    grad_to_none: Sequence[Any] | None = None,
    fast_flush: bool = True,
    kernel_filter: str | Sequence[str] | None = None,
) -> dict[str, Any]:
    """Drop-in for TileGym's function (same signature and keys) backed by the workbench harness."""
    from workbench.capture.harness import benchmark
    from workbench.testids import split_nodeid

    cur = os.environ.get("PYTEST_CURRENT_TEST", "")
    nodeid = cur.rsplit(" (", 1)[0] if cur else ""
    _func, token, params = split_nodeid(nodeid) if nodeid else ("", "", "")
    return benchmark(
        fn, backend=token or "unknown", warmup_ms=warmup, rep_ms=rep, min_rep=min_rep, initial_rep=initial_rep,
        grad_to_none=grad_to_none, flush_l2=True, kernel_filter=kernel_filter, nodeid=nodeid, params=params,
        capture=os.environ.get("WORKBENCH_CAPTURE", "auto"),
    )


def _patch(module: Any) -> None:
    if getattr(module, _ORIGINAL_ATTR, None) is None and hasattr(module, TARGET_NAME):
        setattr(module, _ORIGINAL_ATTR, getattr(module, TARGET_NAME))
    setattr(module, TARGET_NAME, benchmark_fn_cupti)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the real loader of ``tests.common`` to patch after it executes."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != TARGET_MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                loader = spec.loader
                original_exec = loader.exec_module

                def exec_module(module: Any, _orig: Any = original_exec) -> None:
                    _orig(module)
                    _patch(module)

                loader.exec_module = exec_module  # type: ignore[method-assign]
                return spec
        return None


def install(config: Any = None) -> None:
    """Patch now if ``tests.common`` is loaded, else as soon as it is imported. Idempotent."""
    module = sys.modules.get(TARGET_MODULE)
    if module is not None:
        _patch(module)
        return
    if not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())


def uninstall() -> None:
    """Restore TileGym's original function and remove the import hook (used by tests)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _PatchOnImport)]
    module = sys.modules.get(TARGET_MODULE)
    if module is not None and getattr(module, _ORIGINAL_ATTR, None) is not None:
        setattr(module, TARGET_NAME, getattr(module, _ORIGINAL_ATTR))
