"""The GPU a session ran on: compute capability and the measured peaks speed-of-light uses.

Contract: :func:`gpu_facts` reads ``workbench/session.json`` (already parsed; ``None`` when absent)
and returns :class:`GpuFacts`. The capability comes from an explicit ``compute_capability`` key
(top level, ``versions`` or any ``runs[*]``; ``"9.0"``, ``"sm_90"``, ``[9, 0]``), else from the GPU
name (``gpu`` / ``versions.gpu`` / ``runs[*].gpu``, e.g. ``"NVIDIA H200, 580.159.04"``) through
:data:`CAPABILITY_BY_NAME`, else the default H200 assumption (sm_90) — ``capability_source`` always
says which, and callers print it next to anything derived from it (arch-conditional configs).

Peaks (:data:`MEASURED_PEAKS`) are only the numbers measured on the workplace H200 (docs gpu.md §5:
copy ~4.3 TB/s read+write, dense bf16/fp16 matmul ~790 TFLOP/s). Any other GPU or dtype has no
peak here: speed-of-light is then refused rather than computed against a datasheet figure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_CAPABILITY = (9, 0)

#: GPU-name fragments (upper case) → compute capability; the first match wins (most specific first)
CAPABILITY_BY_NAME: tuple[tuple[str, tuple[int, int]], ...] = (
    ("GH200", (9, 0)),
    ("H200", (9, 0)),
    ("H100", (9, 0)),
    ("H800", (9, 0)),
    ("H20", (9, 0)),
    ("GB200", (10, 0)),
    ("B200", (10, 0)),
    ("B100", (10, 0)),
    ("GB300", (10, 3)),
    ("B300", (10, 3)),
    ("RTX PRO 6000 BLACKWELL", (12, 0)),
    ("RTX 50", (12, 0)),
    ("A100", (8, 0)),
    ("A800", (8, 0)),
    ("A30", (8, 0)),
    ("A10", (8, 6)),
    ("A40", (8, 6)),
    ("L40", (8, 9)),
    ("L4", (8, 9)),
)


@dataclass(frozen=True)
class Peak:
    """A measured peak with where it was measured."""

    value: float  # bytes/s for "dram", FLOP/s for a dtype
    source: str


#: (GPU-name fragment, metric) → measured peak. metric: "dram" (read+write bytes/s) or a dtype.
MEASURED_PEAKS: dict[tuple[str, str], Peak] = {
    ("H200", "dram"): Peak(4.3e12, "gpu.md §5: H200 copy bandwidth ~4.3 TB/s read+write"),
    ("H200", "bfloat16"): Peak(790e12, "gpu.md §5: H200 dense bf16 matmul ~790 TFLOP/s"),
    ("H200", "float16"): Peak(
        790e12, "gpu.md §5: H200 dense bf16 matmul ~790 TFLOP/s (fp16 runs at the bf16 rate)"
    ),
}


@dataclass(frozen=True)
class GpuFacts:
    """What F knows about the session's GPU."""

    name: str | None
    capability: tuple[int, int]
    capability_source: str

    @property
    def sm(self) -> str:
        return f"sm_{self.capability[0]}{self.capability[1]}"

    def peak(self, metric: str) -> Peak | None:
        """Measured peak for ``metric`` ("dram" or a dtype name) on this GPU, or None."""
        if not self.name:
            return None
        upper = self.name.upper()
        for (fragment, m), peak in MEASURED_PEAKS.items():
            if m == metric and fragment in upper:
                return peak
        return None


def _parse_capability(value: Any) -> tuple[int, int] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(x, int) for x in value):
        return (int(value[0]), int(value[1]))
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(?:sm_?)?(\d+)[.,]?(\d)\s*", value)
        if m:
            return (int(m.group(1)), int(m.group(2)))
    return None


def _sources(meta: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    yield "session.json", meta
    versions = meta.get("versions")
    if isinstance(versions, Mapping):
        yield "session.json versions", versions
    runs = meta.get("runs")
    if isinstance(runs, Mapping):
        for role, run in runs.items():
            if isinstance(run, Mapping):
                yield f"session.json runs.{role}", run


def capability_for_name(name: str) -> tuple[int, int] | None:
    upper = name.upper()
    return next((cap for fragment, cap in CAPABILITY_BY_NAME if fragment in upper), None)


def gpu_facts(meta: Mapping[str, Any] | None) -> GpuFacts:
    """Resolve the session's GPU (see the module docstring for the order)."""
    name: str | None = None
    for where, src in _sources(meta or {}):
        for key in ("compute_capability", "capability", "cc"):
            cap = _parse_capability(src.get(key))
            if cap is not None:
                gpu = src.get("gpu")
                return GpuFacts(
                    str(gpu).split(",")[0].strip() if isinstance(gpu, str) else name, cap, f"{where} {key}"
                )
        gpu = src.get("gpu")
        if name is None and isinstance(gpu, str) and gpu.strip() and not gpu.startswith("unavailable"):
            name = gpu.split(",")[0].strip()
    if name is not None:
        cap = capability_for_name(name)
        if cap is not None:
            return GpuFacts(name, cap, f"GPU name {name!r} in session.json")
        return GpuFacts(name, DEFAULT_CAPABILITY, f"unknown GPU {name!r}: assumed sm_90 (H200)")
    return GpuFacts(None, DEFAULT_CAPABILITY, "no GPU recorded in session.json: assumed sm_90 (H200)")
