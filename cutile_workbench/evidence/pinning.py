"""The reference's config, knob by knob: the trust's fits narrowed by the captured launch (issue 32).

Contract: :func:`pin_reference_configs` returns the :class:`~cutile_workbench.evidence.trust.KernelTrust`
with every reference config that several configs fit narrowed by
:func:`cutile_workbench.evidence.reference_config.pin_by_launch`: the reference's main kernel launch
of that row (grid, CUPTI cluster dims), the reference wrapper's grid function(s)
(``src/tilegym/ops/cutile/<kernel>.py``), the row's test params by the test's argnames, and the
GPU's SM count by name; then the reference autotuner's own record (its winner in the run's
``autotune`` events), when the run has one. Pure apart from reading the reference wrapper source; nothing is guessed:
a config stays open (both listed) when the evidence admits several.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from cutile_workbench.evidence.launches import pick_summaries
from cutile_workbench.evidence.reference_config import (
    grid_functions,
    params_env,
    pin_by_autotune,
    pin_by_launch,
    sm_count_for,
)
from cutile_workbench.model import LaunchSet


def pin_reference_configs(
    trust: Any,
    *,
    table: Any,
    launch_sets: Sequence[LaunchSet],
    candidate_backend: str,
    tilegym: Path | None,
    kernel: str,
    argnames: Mapping[str, Sequence[str]],
    gpu_name: str | None,
    autotune: Mapping[tuple[str, str], Any] | None = None,
) -> Any:
    """See the module docstring (``trust`` None or nothing to narrow: returned as is)."""
    if trust is None or table is None:
        return trust
    refs = dict(trust.reference_configs)
    if not any(len(rc.fits) > 1 for rc in refs.values()):
        return trust
    rel = f"src/tilegym/ops/cutile/{kernel}.py"
    source = Path(tilegym) / rel if tilegym else None
    fns = [(f, f"{rel}:{f.lineno}") for f in grid_functions(source)] if source and source.is_file() else []
    num_sms = sm_count_for(gpu_name)
    changed = False
    for row in table.matched:
        rc = refs.get(row.params)
        if rc is None or len(rc.fits) <= 1:
            continue
        # the reference's main launch from its summary (kept per config: the sets trust already
        # decoded are not decoded again, issue 31)
        _cand, base = pick_summaries(launch_sets, row, candidate_backend)
        grid, cluster = (base.grid, base.cluster) if base is not None else (None, None)
        env = params_env(argnames.get(row.func_key, ()), row.params)
        new = pin_by_launch(rc, grid=grid, cluster=cluster, grid_fns=fns, env=env, num_sms=num_sms)
        table = (autotune or {}).get((row.params, "reference"))
        if table is not None and table.winner is not None:
            new = pin_by_autotune(new, table.winner.config, "workbench/events.jsonl")
        if new is not rc:
            refs[row.params] = new
            changed = True
    return replace(trust, reference_configs=refs) if changed else trust
