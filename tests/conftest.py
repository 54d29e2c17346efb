"""Suite-wide test configuration.

- ``@pytest.mark.gpu`` tests run only where torch sees a CUDA device (the H200 machine); on CI
  (no GPU, no torch) they are skipped with the reason shown.
- Hypothesis profiles: ``ci`` (default, small) and ``fuzz`` (``HYPOTHESIS_PROFILE=fuzz``: the
  ≥ 10,000-case slow profile of issue 6).
"""

from __future__ import annotations

import functools
import os

import pytest

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile("ci", max_examples=60, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("fuzz", max_examples=10_000, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # hypothesis is a dev extra; tests that need it importorskip it
    pass


#: fixtures hold test *files* as data (e.g. TileGym test-file excerpts): never collect them
collect_ignore_glob = ["fixtures/*"]


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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = None
    for item in items:
        if "gpu" in item.keywords:
            reason = reason or _gpu_reason()
            if reason:
                item.add_marker(pytest.mark.skip(reason=f"gpu: {reason}"))
