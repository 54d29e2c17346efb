"""Suite-wide test configuration.

- ``@pytest.mark.gpu`` tests run only where torch sees a CUDA device (the H200 machine); on CI
  (no GPU, no torch) they are skipped with the reason shown.
- ``@pytest.mark.slurm`` tests run wherever a SLURM cluster answers (``.ci/run`` starts one with
  ``.ci/slurm-up.sh``). They are skipped only when none can be used, and the run's summary says
  why (with what the bring-up script reported). If the bring-up reported the cluster up, they are
  never skipped: a SLURM that stopped answering fails them.
- TileGym parity tests read ``.fetched/TileGym``: ``pytest_configure`` unpacks it from
  ``../shared/tilegym/tilegym-75a1430.tar.xz`` when it is missing (``tilegym_snapshot.py``). With
  ``WORKBENCH_REQUIRE_TILEGYM=1`` (``.ci/run`` sets it) a test skipped for want of the snapshot
  *fails*, and the summary lists them: CI cannot pass without the real-TileGym checks.
- Hypothesis profiles: ``ci`` (default, small) and ``fuzz`` (``HYPOTHESIS_PROFILE=fuzz``: the
  ≥ 10,000-case slow profile of issue 6).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
import tilegym_snapshot

SLURM_STATUS = Path(__file__).resolve().parent.parent / ".ci" / ".slurm-up.status"

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.register_profile(
        "fuzz", max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # hypothesis is a dev extra; tests that need it importorskip it
    pass


#: fixtures hold test *files* as data (e.g. TileGym test-file excerpts): never collect them
collect_ignore_glob = ["fixtures/*"]


def pytest_configure(config: pytest.Config) -> None:
    # Before collection: the parity test modules test for the snapshot at import time.
    try:
        tilegym_snapshot.ensure_snapshot()
    except tilegym_snapshot.SnapshotUnavailable as exc:
        raise pytest.UsageError(str(exc)) from exc


_snapshot_skips: list[str] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.skipped and tilegym_snapshot.snapshot_required() and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2])
        if tilegym_snapshot.is_snapshot_skip(reason):
            _snapshot_skips.append(item.nodeid)
            report.outcome = "failed"
            report.longrepr = (
                f"{tilegym_snapshot.REQUIRE_ENV}=1 but this TileGym-parity test skipped: {reason}"
            )


@functools.lru_cache(maxsize=1)
def _gpu_reason() -> str | None:
    """None when a CUDA GPU is usable, else why not (computed once per session)."""
    try:
        import torch
    except ImportError:
        return "no torch in this environment (GPU tests run on the H200 machine)"
    try:
        if not torch.cuda.is_available():
            return "torch sees no CUDA device"
    except Exception as exc:  # a broken driver must skip, not error, the GPU tests
        return f"CUDA probe failed: {exc}"
    return None


@functools.lru_cache(maxsize=1)
def slurm_reason() -> str | None:
    """None when a SLURM cluster answers (or the bring-up said it is up), else why the tests skip."""
    said = SLURM_STATUS.read_text(encoding="utf-8").strip() if SLURM_STATUS.is_file() else ""
    hint = (
        f".ci/slurm-up.sh said: {said}"
        if said
        else "run .ci/slurm-up.sh (root or sudo) to start a one-node cluster"
    )
    if said.startswith("up"):
        return None
    missing = [c for c in ("sbatch", "squeue", "scancel", "sinfo") if shutil.which(c) is None]
    if missing:
        return f"no {', '.join(missing)} on PATH; {hint}"
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"sinfo failed ({exc}); {hint}"
    if proc.returncode != 0 or not any(
        s.startswith(("idle", "mix", "alloc", "comp")) for s in proc.stdout.split()
    ):
        return f"no SLURM node up (sinfo: {(proc.stderr or proc.stdout).strip()[:200] or 'no nodes'}); {hint}"
    return None


_skipped_slurm: list[str] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = None
    # a test marked slow runs only when asked (-m slow): the README's command stays the fast profile
    # even where a slow test forgets its own markexpr check
    slow_asked = "slow" in (config.getoption("markexpr") or "")
    for item in items:
        if "slow" in item.keywords and not slow_asked:
            item.add_marker(pytest.mark.skip(reason="slow: run with -m slow"))
        if "gpu" in item.keywords:
            reason = reason or _gpu_reason()
            if reason:
                item.add_marker(pytest.mark.skip(reason=f"gpu: {reason}"))
        if "slurm" in item.keywords and slurm_reason():
            _skipped_slurm.append(item.nodeid)
            item.add_marker(pytest.mark.skip(reason=f"slurm: {slurm_reason()}"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _snapshot_skips:
        terminalreporter.write_line(
            f"TileGym snapshot: {len(_snapshot_skips)} parity test(s) skipped for want of "
            f"it and were failed ({tilegym_snapshot.REQUIRE_ENV}=1)",
            red=True,
        )
    if _skipped_slurm:  # shown even with -q: a silently skipped cluster test would look like a pass
        terminalreporter.write_line(f"SLURM: {len(_skipped_slurm)} slurm test(s) skipped: {slurm_reason()}")


@pytest.fixture(autouse=True, scope="session")
def _private_user_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The user cache dir (converted captures, E tables of read-only sessions) is the test run's own:
    no test reads a cache another run left, none writes into the real ~/.cache."""
    os.environ["CUTILE_WORKBENCH_CACHE"] = str(tmp_path_factory.mktemp("user-cache"))


# the test kind folders, importable by bare module name (`from test_history_faces import …` across kinds)
def _kind_dirs_on_path() -> None:
    import sys

    for kind in ("fuzz", "golden", "gpu", "slurm", "tui", "unit"):
        path = str(Path(__file__).resolve().parent / kind)
        if path not in sys.path:
            sys.path.append(path)


_kind_dirs_on_path()
