"""gpu.smi: the one nvidia-smi launcher behind the runner's GPU facts, the shard devices and the GPU probe.

SYNTHETIC GPUs: the fake ``nvidia-smi`` of ``scaleout_helpers`` (csv,noheader answers, -i honoured).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scaleout_helpers import fake_nvidia_smi

from cutile_workbench.gpu.smi import query_gpu, run_nvidia_smi

GPUS = (
    "0, GPU-0a0a0a0a-0000-0000-0000-000000000000, NVIDIA H200\n"
    "1, GPU-1b1b1b1b-1111-1111-1111-111111111111, NVIDIA A100-SXM4-80GB, 8.0"
)


def test_query_rows_and_a_selected_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvidia_smi(tmp_path, monkeypatch, GPUS)
    assert query_gpu("index,name") == ["0, NVIDIA H200", "1, NVIDIA A100-SXM4-80GB"]
    assert query_gpu("compute_cap", ["-i", "1"]) == ["8.0"]
    assert query_gpu("compute_cap", ["-i", "7"]) is None  # "No devices were found", exit 6


def test_no_nvidia_smi_is_an_answer_not_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty dir: no nvidia-smi
    assert query_gpu("name") is None
    proc, why = run_nvidia_smi(["-L"], timeout_s=5)
    assert proc is None and why == "nvidia-smi not found"


def test_the_runner_and_the_shard_devices_ask_through_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cutile_workbench.gpu import visible
    from cutile_workbench.run.scaleout import devices

    fake_nvidia_smi(tmp_path, monkeypatch, GPUS)
    asked: list[str] = []
    real = query_gpu

    def spy(
        fields: str, extra: list[str] | tuple[str, ...] = (), *, timeout_s: float = 30.0
    ) -> list[str] | None:
        asked.append(fields)
        return real(fields, extra, timeout_s=timeout_s)

    monkeypatch.setattr(visible, "query_gpu", spy)
    monkeypatch.setattr(devices, "query_gpu", spy)
    assert (
        visible.gpu_query("compute_cap", {"CUDA_VISIBLE_DEVICES": "GPU-1b1b1b1b-1111-1111-1111-111111111111"})
        == "8.0"
    )
    assert [g.name for g in devices.nvidia_smi_gpus()] == ["NVIDIA H200", "NVIDIA A100-SXM4-80GB"]
    assert asked == ["compute_cap", "index,uuid,name"]
