"""Swap TileGym's torch.profiler call sites for the workbench capture (``--workbench-harness``).

Contract: :func:`install(config)` patches, now or the moment each module is imported (an import
hook wraps the module's loader):
- ``tests.common.benchmark_fn_cupti`` → :func:`benchmark_fn_cupti` below: TileGym's exact signature
  (TileGym's ``benchmark`` calls it positionally: ``fn, warmup, rep, min_rep, initial_rep,
  grad_to_none, fast_flush`` plus the keyword ``kernel_filter``) and keys, plus the harness's
  (``samples``, ``launches_per_call``, ``capture_source``, ``harness``, ``capture``,
  ``capture_check``), so TileGym's own tests yield per-launch timelines;
- ``tests.common._extract_kernel_times_from_profile`` and
  ``tilegym.backend.cutile_rs.autotuner._bench_config_cupti`` → their twins in
  :mod:`cutile_workbench.run.capture.tilegym_timing`, so no torch.profiler (Kineto) session ever starts in a
  measuring process (one CUPTI client per process; see ``conflicts``);
- ``cuda.tile.tune.exhaustive_search`` (the reference's tuner) → the same search plus an ``autotune``
  event with its table (:mod:`cutile_workbench.run.capture.autotune_tables`; issue 32).
It also installs the Kineto start tracker (``conflicts.install_tracker``) as soon as torch is
imported, so any other torch.profiler session is seen. Without ``install`` TileGym is untouched.
The backend is the first id token of the running test (``PYTEST_CURRENT_TEST``).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from cutile_workbench.run.capture import conflicts

#: (module, attribute) -> "module:function" of its workbench twin
TARGETS: dict[tuple[str, str], str] = {
    ("tests.common", "benchmark_fn_cupti"): "cutile_workbench.run.capture.tilegym_swap:benchmark_fn_cupti",
    (
        "tests.common",
        "_extract_kernel_times_from_profile",
    ): "cutile_workbench.run.capture.tilegym_timing:extract_kernel_times",
    (
        "tilegym.backend.cutile_rs.autotuner",
        "_bench_config_cupti",
    ): "cutile_workbench.run.capture.tilegym_timing:bench_config_cupti",
    # issue 32: the reference's autotune table (the search itself is cuda.tile's, unchanged)
    ("cuda.tile.tune", "exhaustive_search"): "cutile_workbench.run.capture.autotune_tables:exhaustive_search",
}
_MODULES = frozenset(m for m, _ in TARGETS)
_ORIGINAL_PREFIX = "_workbench_original_"


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
    from cutile_workbench.artifacts.testids import split_nodeid
    from cutile_workbench.run.capture.harness import benchmark, current_test

    nodeid, params = current_test()
    token = split_nodeid(nodeid)[1] if nodeid else ""
    return benchmark(
        fn,
        backend=token or "unknown",
        warmup_ms=warmup,
        rep_ms=rep,
        min_rep=min_rep,
        initial_rep=initial_rep,
        grad_to_none=grad_to_none,
        flush_l2=True,
        kernel_filter=kernel_filter,
        nodeid=nodeid,
        params=params,
        capture=os.environ.get("WORKBENCH_CAPTURE", "auto"),
    )


def _twin(spec: str) -> Callable[..., Any]:
    import importlib

    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _patch(module: Any) -> None:
    conflicts.install_tracker()  # torch is imported by now (every target module imports it)
    for (mod_name, attr), spec in TARGETS.items():
        if mod_name != module.__name__ or not hasattr(module, attr):
            continue
        if getattr(module, _ORIGINAL_PREFIX + attr, None) is None:
            setattr(module, _ORIGINAL_PREFIX + attr, getattr(module, attr))
        setattr(module, attr, _twin(spec))


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the real loader of a target module to patch after it executes."""

    def find_spec(
        self, fullname: str, path: Any, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _MODULES:
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
    """Patch the loaded targets now, the others as soon as they are imported. Idempotent."""
    conflicts.install_tracker()
    for name in _MODULES:
        module = sys.modules.get(name)
        if module is not None:
            _patch(module)
    if not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
    _rebind_loaded_users()


def _rebind_loaded_users() -> None:
    """TileGym modules loaded before the swap bound ``from cuda.tile.tune import exhaustive_search``
    to the original: point them at the twin too (modules imported later bind the patched name)."""
    tune = sys.modules.get("cuda.tile.tune")
    original = getattr(tune, _ORIGINAL_PREFIX + "exhaustive_search", None) if tune is not None else None
    if original is None:
        return
    twin = getattr(tune, "exhaustive_search", None)
    for name, module in list(sys.modules.items()):
        if name.startswith("tilegym.") and getattr(module, "exhaustive_search", None) is original:
            setattr(module, "exhaustive_search", twin)  # noqa: B010 (a module of any type)


def uninstall() -> None:
    """Restore TileGym's originals and remove the import hook (used by tests)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _PatchOnImport)]
    for mod_name, attr in TARGETS:
        module = sys.modules.get(mod_name)
        original = getattr(module, _ORIGINAL_PREFIX + attr, None) if module is not None else None
        if original is not None:
            setattr(module, attr, original)
