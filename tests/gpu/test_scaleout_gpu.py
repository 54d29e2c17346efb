"""``run --gpus`` on real GPUs (``-m gpu``; skipped unless at least two GPUs are visible).

Suite: tests/fixtures/scaleout/perf_gpu_identity.py (torch matmul stand-ins that record torch's own
UUID of the one device they saw). Proves on hardware what the CPU tests prove on plumbing: one
worker per GPU, each config measured entirely on one GPU, a row's candidate and baseline on the
same GPU, and provenance naming the GPU that really ran each row.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from cutile_workbench.artifacts.events import read_events
from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.run.scaleout.devices import resolve_devices, visible_gpus
from cutile_workbench.run.scaleout.plan import RoleRun, row_key
from cutile_workbench.run.scaleout.service import ScaleoutRequest, run_scaled
from cutile_workbench.run.spec import RunSpec, backend_k_expr

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _uuid(text: str) -> str:
    return text.lower().removeprefix("gpu-")


@pytest.mark.gpu
def test_two_gpus_each_config_on_one_gpu_and_provenance_names_it(tmp_path):
    pytest.importorskip("torch")
    gpus = visible_gpus()
    if len(gpus) < 2:
        pytest.skip(f"needs 2 visible GPUs, sees {len(gpus)}")
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(FIXTURES / "scaleout" / "perf_gpu_identity.py", suite / "test_rms_norm.py")
    shutil.copy(FIXTURES / "runner" / "host_conftest.py", suite / "conftest.py")
    roles = tuple(
        RoleRun(
            backend,
            role,
            RunSpec(
                kernel="rms_norm",
                test_target="test_rms_norm.py",
                cwd=suite,
                role=role,
                k_expr=backend_k_expr(token),
                backend_token=token,
                per_test_timeout_s=120,
                env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            ),
        )
        for backend, token, role in (
            ("cutile-rs", "cutile_rs", "candidate"),
            ("triton", "triton", "baseline_triton_tileir"),
        )
    )
    out = KernelPaths.under(tmp_path / "out", "rms_norm")
    devices = tuple(resolve_devices(gpus[:2]))  # probed: names and UUIDs from nvidia-smi
    result = run_scaled(
        ScaleoutRequest(kernel="rms_norm", out=out, roles=roles, mode="local", devices=devices)
    )
    if os.environ.get("OUT"):
        shutil.copytree(out.root, Path(os.environ["OUT"]) / "scaleout_gpu_kernel_dir", dirs_exist_ok=True)
    assert result.merged is not None and result.rc == 0, [s.detail for s in result.statuses.values()]
    session = json.loads(out.session_json.read_text())
    seen_by_row: dict[tuple[str, str], set[str]] = {}
    for ev in read_events(out.events_jsonl):
        if ev.event != "record":
            continue
        fwd = ev["benchmark"][ev["framework"]]["forward"]
        where = session["runs"][ev["role"]]["measured_on"][ev["nodeid"]]
        assert _uuid(fwd["device_uuid"]) == _uuid(where["gpu_uuid"])  # torch's device == the shard's GPU
        assert fwd["device_name"] == where["gpu_name"]
        seen_by_row.setdefault(row_key(ev["nodeid"]), set()).add(where["gpu_uuid"])
    assert len(seen_by_row) == 4 and all(len(u) == 1 for u in seen_by_row.values())  # a row on one GPU
    assert len({u for us in seen_by_row.values() for u in us}) == 2  # both GPUs measured
    assert not result.merged.mixed.rows
