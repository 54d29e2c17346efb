"""GPU tests of the harness's NVML clock readings (issue 18 §3; run on the H200, skipped elsewhere).

Real kernel: our Triton RMSNorm. What the record's ``clocks`` key must hold on a real GPU, and
what discard-on-throttle does with it.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
pytest.importorskip("pynvml")


@pytest.fixture(scope="module")
def xw():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    x = torch.randn((4096, 1024), dtype=torch.bfloat16, device="cuda")
    w = torch.randn((1024,), dtype=torch.bfloat16, device="cuda")
    return x, w


def _rms(x, w):
    from cutile_workbench.profiles.rms_norm import kernels_triton

    return kernels_triton.rms_norm(x, w, 1e-5)


def test_benchmark_records_one_clock_reading_per_kept_sample(xw):
    from cutile_workbench.clock_exposure import exposure_from_dict
    from cutile_workbench.run.capture.harness import benchmark

    x, w = xw
    res = benchmark(lambda: _rms(x, w), backend="triton", publish=False)
    clocks = res["clocks"]
    assert clocks.get("unavailable") is None, clocks
    exposure = exposure_from_dict(clocks)
    assert exposure.samples == res["nrep"] == len(res["samples"])
    assert exposure.sm_min_mhz is not None and 300 <= exposure.sm_min_mhz <= exposure.sm_max_mhz <= 2100
    assert 0 <= exposure.throttled <= exposure.samples


def test_switched_off_and_discard_on_throttle(xw, monkeypatch):
    from cutile_workbench.run.capture.harness import benchmark

    x, w = xw
    monkeypatch.setenv("WORKBENCH_CLOCKS", "0")
    assert benchmark(lambda: _rms(x, w), backend="triton", publish=False)["clocks"] == {
        "source": "nvml",
        "unavailable": "clock sampling switched off (WORKBENCH_CLOCKS=0)",
    }
    monkeypatch.setenv("WORKBENCH_CLOCKS", "1")
    monkeypatch.setenv("WORKBENCH_DISCARD_THROTTLED", "1")
    res = benchmark(lambda: _rms(x, w), backend="triton", publish=False)
    clocks = res["clocks"]
    assert clocks["throttled"] == 0  # what is kept ran unthrottled; what was dropped is counted
    assert clocks["samples"] == len(res["samples"]) and res["nrep"] == len(res["samples"])
    print(
        "discarded on throttle:",
        clocks.get("discarded", 0),
        "of",
        clocks["samples"] + clocks.get("discarded", 0),
    )
