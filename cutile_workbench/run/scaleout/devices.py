"""GPU slots for local shards: ``--gpus`` parsing, enumeration and identity (name, UUID).

Contract:
- :func:`parse_gpus` accepts ``all`` or a comma list of GPU indices / UUIDs (``0,1``,
  ``GPU-3f…``); an entry may repeat (``0,0``: two shards on GPU 0 — their measurements interfere,
  so :attr:`Device.shared` marks them and the plan says so). Anything else is an InputError naming
  ``--gpus``.
- :func:`visible_gpus` lists the GPUs this process may use, in the order CUDA numbers them under
  ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (nvidia-smi's order): ``CUDA_VISIBLE_DEVICES`` when set (a SLURM
  allocation sets it), else every GPU ``nvidia-smi`` lists. No nvidia-smi → an empty list.
- :func:`count_visible_gpus` is the cheap count (no nvidia-smi: ``CUDA_VISIBLE_DEVICES``, else the
  ``/dev/nvidia<N>`` device nodes) a face may call at start-up to decide whether to offer sharding.
- :func:`resolve_devices` turns a selection into :class:`Device` slots; ``probe=False`` passes the
  entries through unchecked (CPU-only suites, tests). A worker is pinned with
  ``CUDA_VISIBLE_DEVICES=<Device.visible>`` (one entry: each config runs on exactly one GPU) and
  ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (so CUDA's index and nvidia-smi's agree).
- :func:`identify` names the GPU behind one ``CUDA_VISIBLE_DEVICES`` entry from nvidia-smi:
  ``(name, uuid, source)``; ``"unknown"`` for what it cannot tell (no GPU, no nvidia-smi, a MIG
  instance it cannot map). It never imports torch or CUDA.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cutile_workbench.errors import InputError
from cutile_workbench.gpu.smi import query_gpu

UNKNOWN = "unknown"
_ENTRY = re.compile(r"^(?:\d+|GPU-[0-9A-Fa-f-]+|MIG-[0-9A-Za-z/-]+)$")


@dataclass(frozen=True)
class GpuInfo:
    index: int  # position in nvidia-smi's (PCI bus) order
    uuid: str
    name: str


@dataclass(frozen=True)
class Device:
    """One worker slot: the ``CUDA_VISIBLE_DEVICES`` value its shards run with (None: no pinning)."""

    visible: str | None
    name: str = UNKNOWN
    uuid: str = UNKNOWN
    shared: bool = False  # another slot uses the same GPU

    @property
    def label(self) -> str:
        return "cpu" if self.visible is None else f"gpu {self.visible}"


def parse_gpus(text: str) -> list[str] | None:
    """``None`` for ``all``, else the entries in order (repeats kept)."""
    value = text.strip()
    if value.lower() == "all":
        return None
    entries = [e.strip() for e in value.split(",")]
    bad = [e for e in entries if not _ENTRY.match(e)]
    if not entries or bad:
        raise InputError(
            f"--gpus expects 'all' or a comma list of GPU indices/UUIDs (e.g. 0,1), got {text!r}",
            key="--gpus",
        )
    return entries


def nvidia_smi_gpus() -> list[GpuInfo]:
    rows = query_gpu("index,uuid,name", timeout_s=30)
    if rows is None:
        return []
    gpus: list[GpuInfo] = []
    for line in rows:
        parts = [p.strip() for p in line.split(",", 2)]
        if len(parts) == 3 and parts[0].isdigit():
            gpus.append(GpuInfo(index=int(parts[0]), uuid=parts[1], name=parts[2]))
    return gpus


def visible_gpus(environ: Mapping[str, str] | None = None) -> list[str]:
    """``CUDA_VISIBLE_DEVICES`` entries when set (empty/``-1``: none), else nvidia-smi's indices."""
    env = os.environ if environ is None else environ
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        entries = [e.strip() for e in cvd.split(",") if e.strip()]
        # CUDA stops at the first invalid entry ("-1" hides every GPU)
        valid: list[str] = []
        for e in entries:
            if not _ENTRY.match(e):
                break
            valid.append(e)
        return valid
    return [str(g.index) for g in nvidia_smi_gpus()]


def count_visible_gpus(environ: Mapping[str, str] | None = None, dev: Path = Path("/dev")) -> int:
    """How many GPUs this process may use, without running nvidia-smi (see the module contract)."""
    env = os.environ if environ is None else environ
    if env.get("CUDA_VISIBLE_DEVICES") is not None:
        return len(visible_gpus(env))
    return sum(1 for p in dev.glob("nvidia*") if re.fullmatch(r"nvidia\d+", p.name))


def identify(visible: str | None, gpus: Sequence[GpuInfo] | None = None) -> tuple[str, str, str]:
    """``(name, uuid, source)`` of the GPU a ``CUDA_VISIBLE_DEVICES`` entry selects."""
    if visible is None:
        return UNKNOWN, UNKNOWN, "no GPU pinned"
    table = nvidia_smi_gpus() if gpus is None else list(gpus)
    if not table:
        return UNKNOWN, visible if visible.startswith(("GPU-", "MIG-")) else UNKNOWN, "nvidia-smi unavailable"
    for g in table:
        if visible == g.uuid or (visible.isdigit() and int(visible) == g.index):
            return g.name, g.uuid, "nvidia-smi"
    return (
        UNKNOWN,
        visible if visible.startswith(("GPU-", "MIG-")) else UNKNOWN,
        f"nvidia-smi lists no GPU {visible}",
    )


def resolve_devices(entries: Sequence[str] | None, *, probe: bool = True) -> list[Device]:
    """Slots for a ``--gpus`` selection (``None`` = all visible GPUs); see the module contract."""
    if entries is None:
        visible = visible_gpus()
        if not visible:
            raise InputError(
                "--gpus all: no GPU is visible here (CUDA_VISIBLE_DEVICES is empty or nvidia-smi lists none)",
                key="--gpus",
            )
        entries = visible
    table = nvidia_smi_gpus() if probe else []
    if probe and not table:
        raise InputError(
            "--gpus: nvidia-smi lists no GPU on this machine (use --skip-gpu-check to pin "
            "CPU-only suites anyway)",
            key="--gpus",
        )
    devices: list[Device] = []
    for e in entries:
        name, uuid = UNKNOWN, UNKNOWN
        if probe:
            name, uuid, _ = identify(e, table)
            if name == UNKNOWN:
                have = ", ".join(f"{g.index} ({g.name}, {g.uuid})" for g in table)
                raise InputError(f"--gpus: no GPU {e!r} here (nvidia-smi lists: {have})", key="--gpus")
        devices.append(Device(visible=e, name=name, uuid=uuid))
    counts: dict[str, int] = {}
    for d in devices:
        key = d.uuid if d.uuid != UNKNOWN else str(d.visible)
        counts[key] = counts.get(key, 0) + 1
    return [
        Device(d.visible, d.name, d.uuid, shared=counts[d.uuid if d.uuid != UNKNOWN else str(d.visible)] > 1)
        for d in devices
    ]


def pinned_env(visible: str | None) -> dict[str, str]:
    """Environment that pins a worker to one GPU slot (nothing for an unpinned CPU slot)."""
    if visible is None:
        return {}
    return {"CUDA_VISIBLE_DEVICES": visible, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
