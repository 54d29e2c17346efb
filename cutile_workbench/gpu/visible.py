"""The GPU a child process sees as its device 0, asked of nvidia-smi (moved out of ``run/runner.py``).

Contract: :func:`gpu_query` answers ``nvidia-smi --query-gpu=<fields>`` for the first
``CUDA_VISIBLE_DEVICES`` entry of an environment (a UUID exactly; an index only where nvidia-smi's
order is CUDA's, or every GPU answers the same), or None. Never raises.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from cutile_workbench.gpu.smi import query_gpu

#: a ``CUDA_VISIBLE_DEVICES`` entry CUDA accepts (it stops at the first other one: ``-1`` hides every GPU)
_VISIBLE_ENTRY = re.compile(r"\d+|GPU-[0-9A-Fa-f-]+|MIG-[0-9A-Za-z/-]+")


def gpu_query(fields: str, env: Mapping[str, str] | None = None) -> str | None:
    """``nvidia-smi --query-gpu=<fields>`` for the GPU a child with environment ``env`` (default: ours)
    sees as device 0 (e.g. ``compute_cap`` → ``"9.0"``), or None.

    That GPU is the first ``CUDA_VISIBLE_DEVICES`` entry (unset: CUDA's device 0). A UUID names it
    exactly; an index is nvidia-smi's (PCI bus order) only under ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` —
    CUDA's default numbers the fastest GPU first — so otherwise the answer is given only when every
    GPU answers the same. None: no nvidia-smi, an entry that hides every GPU, or no GPU it names.
    F resolves the wrappers' arch-conditional autotune configs from the recorded compute capability."""
    environ = os.environ if env is None else env
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    first = "0" if visible is None else visible.split(",")[0].strip()
    if not _VISIBLE_ENTRY.fullmatch(first):
        return None
    if not first.isdigit():
        rows = query_gpu(fields, ["-i", first], timeout_s=10)
        return rows[0] if rows else None
    indexed = query_gpu(f"index,{fields}", timeout_s=10)
    answers = dict(r.split(", ", 1) for r in indexed or [] if ", " in r)
    if environ.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID" or len(set(answers.values())) == 1:
        return answers.get(first)
    return None
