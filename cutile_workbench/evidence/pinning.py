"""The reference's config, knob by knob: one config's fits narrowed by its captured launch (issue 32).

Contract: :func:`pin_context` reads once, for one kernel dir, what pinning needs beyond a config's own
launch: the reference wrapper's grid function(s) (``src/tilegym/ops/cutile/<kernel>.py`` of the TileGym
checkout), each test's parametrize argnames (the checkout's test files, else the recorded session's),
the GPU's SM count by name, and the reference autotuner's own winners (the run's ``autotune`` events,
``workbench/events.jsonl``). :func:`pin_config` then narrows one
:class:`~cutile_workbench.evidence.reference_config.ReferenceConfig` that several configs fit with
:func:`~cutile_workbench.evidence.reference_config.pin_by_launch` (the reference's main kernel launch
of that config: grid, CUPTI cluster dims) and then
:func:`~cutile_workbench.evidence.reference_config.pin_by_autotune`.

Trust (:mod:`cutile_workbench.evidence.trust`) applies it where each config's reference config is
derived, so E's table, performance.md, the TUI, ``timeline`` and F state the same pinned config.
Nothing is guessed: a config stays open (every fit listed) when the evidence admits several; an
unreadable events file pins nothing from it and says so (:attr:`PinContext.notes`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cutile_workbench.errors import InputError
from cutile_workbench.evidence.reference_config import (
    ReferenceConfig,
    grid_functions,
    params_env,
    pin_by_autotune,
    pin_by_launch,
    sm_count_for,
)

#: where the reference's autotune winners come from (as F's reports name it)
AUTOTUNE_SOURCE = "workbench/events.jsonl"


@dataclass(frozen=True)
class PinContext:
    """What pinning reads once per kernel dir (module docstring)."""

    grid_fns: tuple[tuple[ast.FunctionDef, str], ...] = ()
    argnames: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    num_sms: int | None = None
    #: ``{params: the reference autotuner's winner config repr}``
    winners: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def key_text(self) -> str:
        """What decides every config's pinning besides that config's own inputs (part of its cache key;
        the grid functions' source is the reference wrapper's bytes, keyed by trust already)."""
        fns = ",".join(where for _fn, where in self.grid_fns)
        names = repr(sorted(self.argnames.items()))
        return f"pin\0{fns}\0{names}\0{self.num_sms}\0{'|'.join(self.notes)}"


def pin_context(
    *,
    kernel: str,
    tilegym: Path | None,
    func_keys: Iterable[str],
    gpu_name: str | None,
    events_path: Path | None,
) -> PinContext:
    """See the module docstring."""
    from cutile_workbench.evidence.sol import recorded_argnames, test_argnames

    rel = f"src/tilegym/ops/cutile/{kernel}.py"
    source = Path(tilegym) / rel if tilegym else None
    fns = (
        tuple((f, f"{rel}:{f.lineno}") for f in grid_functions(source)) if source and source.is_file() else ()
    )
    argnames = {**recorded_argnames(kernel), **test_argnames(tilegym, func_keys)}
    winners, notes = autotune_winners(events_path)
    return PinContext(fns, argnames, sm_count_for(gpu_name), winners, notes)


def autotune_winners(events_path: Path | None) -> tuple[dict[str, str], tuple[str, ...]]:
    """``{params: winner}`` of the reference's autotune tables in the events file (none when absent)."""
    from cutile_workbench.artifacts.events import read_events
    from cutile_workbench.evidence.autotune import tables_from_events

    if events_path is None or not events_path.is_file():
        return {}, ()
    try:
        tables = tables_from_events(read_events(events_path, allow_truncated_tail=True))
    except InputError as exc:  # the launch evidence still pins; the record is not used, and says why
        return {}, (f"autotune events unreadable, the reference's own record is not used: {exc}",)
    out = {
        params: t.winner.config
        for (params, side), t in tables.items()
        if side == "reference" and t.winner is not None
    }
    return out, ()


def pin_config(
    rc: ReferenceConfig,
    *,
    func_key: str,
    grid: Sequence[int] | None,
    cluster: Sequence[int] | None,
    ctx: PinContext,
) -> ReferenceConfig:
    """``rc`` narrowed by its launch (``grid``, ``cluster``: the reference's main kernel of that config)
    and then by the reference autotuner's winner; returned as is when one or no config fits."""
    if len(rc.fits) <= 1:
        return rc
    env = params_env(ctx.argnames.get(func_key, ()), rc.params)
    new = pin_by_launch(rc, grid=grid, cluster=cluster, grid_fns=ctx.grid_fns, env=env, num_sms=ctx.num_sms)
    winner = ctx.winners.get(rc.params)
    if winner is not None:
        new = pin_by_autotune(new, winner, AUTOTUNE_SOURCE)
    return new
