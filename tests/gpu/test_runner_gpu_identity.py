"""Which GPU ``session.json`` names for a run: the one the pytest child used, never blindly GPU 0.

SYNTHETIC GPUs: a fake ``nvidia-smi`` (``scaleout_helpers.FAKE_NVIDIA_SMI``) lists them, and the
``provenance`` events are built with the provenance package's own dataclasses.
"""

from __future__ import annotations

from scaleout_helpers import fake_nvidia_smi

from cutile_workbench.artifacts.events import Event
from cutile_workbench.gpu.visible import gpu_query
from cutile_workbench.history.provenance import Provenance
from cutile_workbench.history.provenance.gpu import GpuIdentity
from cutile_workbench.run.results import gpu_description

TWO_MODELS = (
    "0, GPU-0a0a0a0a-0000-0000-0000-000000000000, NVIDIA H200\n"
    "1, GPU-1b1b1b1b-1111-1111-1111-111111111111, NVIDIA A100-SXM4-80GB, 8.0"
)
TWO_H200 = (
    "0, GPU-0a0a0a0a-0000-0000-0000-000000000000, NVIDIA H200\n"
    "1, GPU-2c2c2c2c-2222-2222-2222-222222222222, NVIDIA H200"
)


def test_the_first_visible_entry_is_asked_for_not_gpu_0(tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path, monkeypatch, TWO_MODELS)
    pci = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert gpu_description({**pci, "CUDA_VISIBLE_DEVICES": "1,0"}) == "NVIDIA A100-SXM4-80GB, 580.159.04"
    assert gpu_query("compute_cap", {**pci, "CUDA_VISIBLE_DEVICES": "1"}) == "8.0"
    assert gpu_description({**pci}) == "NVIDIA H200, 580.159.04"  # unset: CUDA's device 0
    # a UUID names its GPU whatever the device order
    assert gpu_description({"CUDA_VISIBLE_DEVICES": "GPU-1b1b1b1b-1111-1111-1111-111111111111"}).startswith(
        "NVIDIA A100"
    )


def test_an_index_under_cudas_default_order_is_refused_when_the_gpus_differ(tmp_path, monkeypatch):
    """Without CUDA_DEVICE_ORDER=PCI_BUS_ID, CUDA numbers the fastest GPU first: its index 1 need not be
    nvidia-smi's GPU 1, so on a node of two models the name is unknown rather than perhaps wrong."""
    fake_nvidia_smi(tmp_path, monkeypatch, TWO_MODELS)
    assert gpu_description({"CUDA_VISIBLE_DEVICES": "1"}) is None
    assert gpu_description({}) is None
    fake_nvidia_smi(tmp_path, monkeypatch, TWO_H200)  # same model everywhere: any index is an H200
    assert gpu_description({"CUDA_VISIBLE_DEVICES": "1"}) == "NVIDIA H200, 580.159.04"


def test_hidden_or_unknown_gpus_give_none(tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path, monkeypatch, TWO_MODELS)
    pci = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    for visible in ("", "-1", "NoDevFiles", "7", "GPU-99999999-0000-0000-0000-000000000000"):
        assert gpu_description({**pci, "CUDA_VISIBLE_DEVICES": visible}) is None, visible


def test_the_childs_own_nvml_reading_wins_over_nvidia_smi(tmp_path, monkeypatch):
    fake_nvidia_smi(tmp_path, monkeypatch, TWO_MODELS)
    gpu = GpuIdentity(
        name="NVIDIA H100 80GB HBM3",
        uuid="GPU-3d3d",
        pci_bus_id=None,
        driver_version="580.1",
        cuda_driver_version="13.0",
        mig_mode="disabled",
        mig_pending="disabled",
        selected_by="UUID GPU-3d3d (the CUDA device in use)",
    )
    ev = Event(
        "provenance", 1.0, {"phase": "finish", "provenance": Provenance(source="live", gpu=gpu).to_dict()}
    )
    env = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "0"}
    assert gpu_description(env, [ev]) == "NVIDIA H100 80GB HBM3, 580.1"
    no_gpu = Event(
        "provenance",
        1.0,
        {
            "phase": "start",
            "provenance": Provenance(
                source="live", unknown={"gpu": "unavailable: pynvml not importable"}
            ).to_dict(),
        },
    )
    assert gpu_description(env, [no_gpu]) == "NVIDIA H200, 580.159.04"  # no reading: nvidia-smi's answer
    broken = Event("provenance", 1.0, {"phase": "start", "provenance": {"source": "nonsense"}})
    assert gpu_description(env, [broken]) == "NVIDIA H200, 580.159.04"
