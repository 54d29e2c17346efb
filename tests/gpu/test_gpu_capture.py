"""GPU tests of the CUPTI capture engine and harness (run on the H200; skipped on CI).

Real kernels only: our Triton RMSNorm (1 launch per call), the hot-path-flawed wrapper
(``zeros_like(x).add_(x)`` + the kernel: 3 launches), torch copies (memcpy records).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
pytest.importorskip("cupti")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def xw():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    x = torch.randn((4096, 1024), dtype=torch.bfloat16, device="cuda")
    w = torch.randn((1024,), dtype=torch.bfloat16, device="cuda")
    return x, w


def _triton_rms(x, w):
    from cutile_workbench.profiles.rms_norm import kernels_triton

    return kernels_triton.rms_norm(x, w, 1e-5)


def test_clean_wrapper_has_one_launch_with_resources(xw):
    from cutile_workbench.run.capture.session import CuptiSession

    x, w = xw
    _triton_rms(x, w)  # compile outside the session
    s = CuptiSession("triton")
    with s:
        for _ in range(20):
            with s.call():
                _triton_rms(x, w)
    calls = s.captures()
    assert s.dropped == 0
    assert len(calls) == 20
    for c in calls:
        assert len(c.launches) == 1, [x.name for x in c.launches]
        k = c.launches[0]
        assert k.kind == "kernel" and "rms_norm_fwd_kernel" in k.name
        assert k.grid == (4096, 1, 1) and k.block[0] == 128  # 4 warps
        assert k.registers_per_thread and k.registers_per_thread > 0
        assert k.api_name and "Launch" in k.api_name
        assert c.host_start_ns <= k.start_ns <= k.end_ns <= c.host_end_ns
        assert 1_000 < k.duration_ns < 1_000_000


def test_hotpath_wrapper_shows_extra_named_launches(xw):
    from cutile_workbench.run.capture.session import CuptiSession

    x, w = xw
    s = CuptiSession("hotpath")
    with s:
        for _ in range(10):
            with s.call():
                _triton_rms(torch.zeros_like(x).add_(x), w)
    calls = s.captures()
    counts = {len(c.launches) for c in calls}
    assert counts == {3}, counts
    names = [x.display_name for x in calls[-1].launches]
    assert "rms_norm_fwd_kernel" in names[-1]
    assert any("fill" in n.lower() or "Fill" in n for n in names[:2]), names
    assert any("add" in n.lower() or "elementwise" in n.lower() for n in names[:2]), names


def test_memcpy_is_recorded_with_bytes(xw):  # xw: skips without CUDA
    from cutile_workbench.run.capture.session import CuptiSession

    host = torch.randn(1 << 20).pin_memory()
    dst = torch.empty(1 << 20, device="cuda")
    s = CuptiSession("copy")
    with s:
        with s.call():
            dst.copy_(host, non_blocking=True)
    (call,) = s.captures()
    copies = [x for x in call.launches if x.kind == "memcpy"]
    assert copies and copies[0].bytes == 4 << 20 and copies[0].copy_kind == "HtoD"


def test_harness_keys_and_sample_semantics(xw):
    from cutile_workbench.run.capture.harness import benchmark

    x, w = xw
    res = benchmark(
        lambda: _triton_rms(x, w), backend="triton", warmup_ms=20, rep_ms=10, max_rep=200, publish=False
    )
    for key in (
        "mean",
        "std",
        "rel_std",
        "median",
        "min",
        "max",
        "nrep",
        "peak_mem_mb",
        "kernel_name",
        "kernel_times",
        "samples",
        "launches_per_call",
        "capture_source",
    ):
        assert key in res, key
    assert res["capture_source"] == "cupti"
    assert res["nrep"] == len(res["samples"]) >= 2
    assert res["launches_per_call"] == 1
    assert res["min"] <= res["median"] <= res["max"]
    assert 0.001 < res["median"] < 1.0  # ms: a 4096x1024 bf16 RMSNorm on an H200 takes ~5-15 us
    (row,) = res["kernel_times"]
    assert row["count"] == 1 and "rms_norm_fwd_kernel" in row["name"]


def test_benchmark_pair_interleaves_and_separates_backends(xw):
    from cutile_workbench.run.capture.harness import benchmark_pair

    x, w = xw
    a, b = benchmark_pair(
        lambda: _triton_rms(x, w),
        lambda: _triton_rms(torch.zeros_like(x).add_(x), w),
        backends=("clean", "hotpath"),
        warmup_ms=20,
        rep_ms=10,
        max_rep=100,
        publish=False,
    )
    assert a["launches_per_call"] == 1 and b["launches_per_call"] == 3
    assert a["nrep"] == b["nrep"]
    assert b["median"] > a["median"]


def test_events_fallback_is_flagged_without_launch_data(xw):
    from cutile_workbench.run.capture.harness import benchmark

    x, w = xw
    res = benchmark(
        lambda: _triton_rms(x, w),
        backend="triton",
        warmup_ms=10,
        rep_ms=5,
        max_rep=50,
        capture="events",
        publish=False,
    )
    assert res["capture_source"] == "events"
    assert res["launches_per_call"] is None and "kernel_times" not in res
    assert res["median"] > 0


def _run_py(code: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_capture_after_kineto_session_restores_the_clock_or_refuses():
    """In a fresh child: CUPTI median, then a Kineto session (its TSC clock replaces CUPTI's), then
    the harness again: the clock is restored (or the capture refused), never a 2.1x median."""
    proc = _run_py("""
        import json, torch
        from torch.profiler import profile, ProfilerActivity
        from cutile_workbench.run.capture import conflicts
        from cutile_workbench.run.capture.harness import benchmark
        from cutile_workbench.errors import CaptureError
        from cutile_workbench.profiles.rms_norm import kernels_triton
        conflicts.install_tracker()
        x = torch.randn((4096, 1024), dtype=torch.bfloat16, device="cuda")
        w = torch.randn((1024,), dtype=torch.bfloat16, device="cuda")
        fn = lambda: kernels_triton.rms_norm(x, w, 1e-5)
        before = benchmark(fn, backend="t", warmup_ms=20, rep_ms=20, max_rep=300, publish=False)
        for _ in range(3):
            with profile(activities=[ProfilerActivity.CUDA]):
                fn(); torch.cuda.synchronize()
        try:
            after = benchmark(fn, backend="t", warmup_ms=20, rep_ms=20, max_rep=300, publish=False)
            result = {"before": before["median"], "after": after["median"], "clock": after["capture"]["clock"],
                      "check": after["capture_check"]["verdict"]}
        except CaptureError as e:
            result = {"before": before["median"], "refused": str(e)}
        print("RESULT " + json.dumps(result))
    """)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    result = json.loads(line[7:])
    print(result)
    if "refused" in result:
        assert "clock" in result["refused"]
    else:
        assert result["clock"]["ok"] and result["check"] == "ok"
        assert abs(result["after"] / result["before"] - 1) < 0.05, result


def test_refuses_while_torch_profiler_is_active():
    """In a child: a Kineto session poisons CUPTI state for the rest of its process."""
    proc = _run_py("""
        import torch
        from torch.profiler import ProfilerActivity, profile
        from cutile_workbench.run.capture.session import CuptiSession
        from cutile_workbench.errors import CaptureError
        from cutile_workbench.profiles.rms_norm import kernels_triton
        x = torch.randn((4096, 1024), dtype=torch.bfloat16, device="cuda")
        w = torch.randn((1024,), dtype=torch.bfloat16, device="cuda")
        with profile(activities=[ProfilerActivity.CUDA]):
            try:
                with CuptiSession("triton"):
                    kernels_triton.rms_norm(x, w, 1e-5)
                print("NOT REFUSED")
            except CaptureError as e:
                print("REFUSED " + str(e))
    """)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "REFUSED refusing to start a CUPTI capture: torch.profiler (Kineto) is active" in proc.stdout, (
        proc.stdout
    )


def test_kineto_fallback_runs_in_its_own_process():
    from cutile_workbench.run.capture.kineto_child import run_kineto_fallback

    res, launch_set = run_kineto_fallback(
        "cutile_workbench.profiles.rms_norm.backends:factory",
        {"framework": "triton", "m": 4096, "n": 1024},
        backend="triton",
        nrep=20,
    )
    assert res["capture_source"] == "kineto" and launch_set.source == "kineto"
    assert res["nrep"] == 20 and res["launches_per_call"] == 1
    assert "rms_norm_fwd_kernel" in launch_set.calls[0].launches[0].name


def test_launches_reach_the_event_stream_and_side_file(tmp_path, monkeypatch, xw):
    from cutile_workbench.artifacts import events, launches_io
    from cutile_workbench.run.capture.harness import benchmark

    x, w = xw
    monkeypatch.setenv("WORKBENCH_LAUNCHES_DIR", str(tmp_path / "side"))
    writer = events.EventWriter(tmp_path / "ev.jsonl")
    events.set_active(writer, None)
    try:
        benchmark(
            lambda: _triton_rms(x, w),
            backend="triton",
            warmup_ms=5,
            rep_ms=2,
            max_rep=20,
            nodeid="p::T::test_perf[triton-4096-1024]",
            params="4096-1024",
        )
    finally:
        events.set_active(None, None)
        writer.close()
    sets = launches_io.launch_sets_from_events(events.read_events(tmp_path / "ev.jsonl"))
    assert len(sets) == 1 and sets[0].params == "4096-1024" and len(sets[0].calls) >= 2
    (side,) = (tmp_path / "side").glob("launches.*.json.gz")
    assert launches_io.load_launch_sets(side)[0].calls[0].launches[0].grid == (4096, 1, 1)
