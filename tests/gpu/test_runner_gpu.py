"""Runner fault isolation with REAL GPU faults on the H200 (``-m gpu``; skipped without a GPU).

The suite (tests/fixtures/runner/perf_cuda_faults.py) has a real illegal memory access (Triton
store 2**40 past a buffer), a real device hang (a kernel spinning on a flag) and a Python raise,
between configs that time ``torch.nn.functional.rms_norm`` bf16 for real.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.run.results import write_results
from cutile_workbench.run.runner import run
from cutile_workbench.run.spec import RunSpec

FIXTURES = Path(__file__).parent.parent / "fixtures" / "runner"


@pytest.mark.gpu
def test_real_gpu_faults_are_isolated_and_other_configs_complete(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(FIXTURES / "perf_cuda_faults.py", suite / "test_rms_norm.py")
    shutil.copy(FIXTURES / "host_conftest.py", suite / "conftest.py")
    out = KernelPaths.under(tmp_path / "out", "rms_norm")
    spec = RunSpec(
        kernel="rms_norm",
        test_target="test_rms_norm.py",
        cwd=suite,
        per_test_timeout_s=20,
        kill_grace_s=5,
        startup_timeout_s=120,
        env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    t0 = time.monotonic()
    result = run(spec, out)
    wall = time.monotonic() - t0
    write_results(result, spec, out)
    if os.environ.get("OUT"):  # on the device machine: bring the evidence back
        dest = Path(os.environ["OUT"])
        shutil.copy(out.perf_full_log, dest / "runner_gpu_raw_log.txt")
        shutil.copy(out.session_json, dest / "runner_gpu_session.json")
        shutil.copy(out.events_jsonl, dest / "runner_gpu_events.jsonl")
    print(f"\nwall {wall:.1f}s; {result.summary_line()}")
    for a in result.attempts:
        print(f"  attempt {a.index}: {a.ended} rc={a.rc} {a.duration_s:.1f}s {a.detail}")
    for nodeid, reason in result.failed.items():
        print(f"  FAILED {nodeid}: {reason}")
    for e in result.events:
        if e.event == "record":
            print(
                f"  record {e['params']} {e['framework']}: median "
                f"{e['benchmark'][e['framework']]['forward']['median'] * 1000:.2f} us"
            )

    ids = {n.split("[", 1)[1].split("-", 1)[0]: [] for n in result.collected}
    for n in result.collected:
        ids[n.split("[", 1)[1].split("-", 1)[0]].append(n)
    assert all(result.outcomes.get(n) == "passed" for n in ids["torch"]), result.failed
    for n in ids["illegal"]:
        assert "illegal memory access" in result.failed[n]
    for n in ids["hang"]:
        assert "without progress" in result.failed[n]
    for n in ids["raise"]:
        assert "unsupported shape" in result.failed[n]
    assert not result.not_run
    assert result.raw_log_text.count("Performance Test Results") == len(ids["torch"])
