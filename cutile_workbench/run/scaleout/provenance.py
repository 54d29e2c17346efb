"""Which host and GPU measured each row, and rows whose candidate and baseline GPUs differ.

Contract (minimal on purpose; a fuller provenance model can absorb these fields):
- A merged run records, in ``workbench/session.json`` ``runs[<role>]["measured_on"]``, one entry
  per node id: ``{"shard", "host", "gpu_name", "gpu_uuid", "device", "gpu_source"}`` — the GPU
  identity the pytest child's NVML reading gave (:mod:`cutile_workbench.history.provenance`), else the worker's
  nvidia-smi identity of its pinned GPU (``"unknown"`` where neither could tell; ``gpu_source``
  says which). A single-process run has no ``measured_on``: all its rows were measured where
  ``runs[<role>]["host"]``/``["gpu"]`` say (``gpu``: ``name, driver`` of the GPU its child used,
  :func:`cutile_workbench.run.results.gpu_description`).
- :func:`row_gpus` gives ``{role: {(func_key, params): gpu model}}`` from either shape.
- :func:`mixed_gpu_rows` flags every row whose candidate and baseline (each baseline role
  present) were measured on different GPU **models** (name compared case-insensitively; rows with
  an unknown side are not flagged, they are counted in ``unknown``). Different GPUs of the same model
  are not flagged: the plan keeps a row's roles on one GPU, and the same model is comparable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cutile_workbench.run.scaleout.devices import UNKNOWN
from cutile_workbench.run.scaleout.plan import row_key


@dataclass(frozen=True)
class MixedGpuRow:
    func_key: str
    params: str
    candidate_gpu: str
    baseline_role: str
    baseline_gpu: str

    def describe(self) -> str:
        return (
            f"{self.params or self.func_key}: candidate on {self.candidate_gpu}, "
            f"{self.baseline_role} on {self.baseline_gpu}"
        )


@dataclass(frozen=True)
class MixedGpuReport:
    rows: tuple[MixedGpuRow, ...]
    unknown: int  # rows where one side's GPU model is unknown
    models: tuple[str, ...]  # every GPU model seen across roles


def gpu_model(text: object) -> str:
    """A GPU model from a ``gpu_name`` or a runner ``gpu`` string (``"NVIDIA H200, 580.159.04"``)."""
    if not isinstance(text, str) or not text.strip():
        return UNKNOWN
    return text.split(",")[0].strip() or UNKNOWN


def row_gpus(session: Mapping[str, Any]) -> dict[str, dict[tuple[str, str], str]]:
    out: dict[str, dict[tuple[str, str], str]] = {}
    runs = session.get("runs")
    if not isinstance(runs, Mapping):
        return out
    for role, meta in runs.items():
        if not isinstance(meta, Mapping):
            continue
        per_row: dict[tuple[str, str], str] = {}
        measured = meta.get("measured_on")
        outcomes = meta.get("outcomes") if isinstance(meta.get("outcomes"), Mapping) else {}
        if isinstance(measured, Mapping):
            for nodeid, where in measured.items():
                name = where.get("gpu_name") if isinstance(where, Mapping) else None
                per_row[row_key(str(nodeid))] = gpu_model(name)
        else:
            model = gpu_model(meta.get("gpu"))
            for nodeid in outcomes or {}:
                per_row[row_key(str(nodeid))] = model
        out[str(role)] = per_row
    return out


def mixed_gpu_rows(session: Mapping[str, Any]) -> MixedGpuReport:
    per_role = row_gpus(session)
    cand = per_role.get("candidate", {})
    rows: list[MixedGpuRow] = []
    unknown = 0
    for role, gpus in per_role.items():
        if role == "candidate":
            continue
        for key, base_gpu in gpus.items():
            cand_gpu = cand.get(key)
            if cand_gpu is None:
                continue
            if UNKNOWN in (cand_gpu, base_gpu):
                unknown += 1
            elif cand_gpu.casefold() != base_gpu.casefold():
                rows.append(MixedGpuRow(key[0], key[1], cand_gpu, role, base_gpu))
    models = sorted({m for gpus in per_role.values() for m in gpus.values() if m != UNKNOWN})
    return MixedGpuReport(rows=tuple(rows), unknown=unknown, models=tuple(models))
