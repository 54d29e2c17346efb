"""What a workspace's evidence says about WHO ran (candidate identity) and WHAT the reference ran (its config).

Contract: :func:`kernel_trust` reads, for one workspace and its E table, the per-launch captures
(``workbench/launches.json.gz``; a malformed file leaves every row ``unknown`` with the reader's message
naming file and key — E's table does not depend on it), the cutile-rs wrapper
(static delegation audit) and the reference wrapper (``@ct.kernel`` signatures and its configs function
for the session's GPU), analysis.json (variant constants, autotune configs) and, only when a capture
carries no reference symbol, ``workbench/ir/index.json``'s recorded entry symbol. It returns
:class:`KernelTrust`: :mod:`.candidate_identity` per row and :mod:`.reference_config` per matched row.
An absent input leaves the affected rows ``unknown`` with the reason; nothing is guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cutile_workbench.errors import InputError
from cutile_workbench.evidence.candidate_identity import (
    CandidateIdentity,
    candidate_identities,
    sets_for,
    side_launch,
    summary_line,
    wrapper_delegations,
)
from cutile_workbench.evidence.launches import same_backend
from cutile_workbench.evidence.reference_config import (
    ReferenceConfig,
    decode_cutile_symbol,
    names_for,
    reference_config,
)
from cutile_workbench.evidence.search_space import ConfigSpace, analysis_spaces, reference_wrapper_spaces
from cutile_workbench.model import LaunchSet, RatioRow, RatioTable

if TYPE_CHECKING:
    from cutile_workbench.artifacts.workspace import Workspace


@dataclass(frozen=True)
class KernelTrust:
    """Identity per row and the reference's config per matched row (see the module docstring)."""

    candidate_framework: str
    identities: Mapping[str, CandidateIdentity] = field(default_factory=dict)
    reference_configs: Mapping[str, ReferenceConfig] = field(default_factory=dict)
    wrapper_calls: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        return summary_line(self.identities, self.candidate_framework)

    @property
    def warning(self) -> bool:
        return any(i.not_candidate for i in self.identities.values())

    def mark(self, params: str) -> str:
        ident = self.identities.get(params)
        return ident.mark if ident is not None else "?"

    def as_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "warning": self.warning,
            "wrapper_calls": list(self.wrapper_calls),
            "rows": {p: i.as_dict() for p, i in self.identities.items()},
            "reference_configs": {
                p: {
                    "text": r.text,
                    "constants": dict(r.constants),
                    "fits": [c.label for c in r.fits],
                    "decided": r.decided,
                    "unknown": list(r.unknown),
                }
                for p, r in self.reference_configs.items()
            },
        }


def _space_for_function(function: str | None, spaces: list[ConfigSpace], analysis: Any) -> ConfigSpace | None:
    """The reference configs of the kernel ``function``: the wrapper's configs function that tunes it (the
    session's GPU resolved), else analysis.json's list of the variant whose kernel_function it is."""
    if function is None:
        return None
    stem = function.lstrip("_").lower()
    for s in spaces:
        if s.kernel and s.kernel.lstrip("_").lower() == stem:
            return s
    for s in analysis_spaces(analysis):
        if s.kernel and s.kernel.lstrip("_").lower() == stem:
            return s
    top = [s for s in analysis_spaces(analysis) if s.variant is None]
    if len(top) == 1 and len(getattr(analysis, "kernel_variants", ()) or ()) <= 1:
        return top[0]
    return spaces[0] if len(spaces) == 1 else None


def reference_configs_for(
    rows: list[RatioRow],
    launch_sets: Sequence[LaunchSet],
    *,
    analysis: Any,
    reference_wrapper: Path | None,
    capability: tuple[int, int],
    ir_entries: Mapping[str, str] | None = None,
) -> tuple[dict[str, ReferenceConfig], list[str]]:
    """``{params: ReferenceConfig}`` for the matched rows, and notes on what could not be read."""
    notes: list[str] = []
    spaces: list[ConfigSpace] = []
    if reference_wrapper is not None and reference_wrapper.is_file():
        try:
            spaces, wnotes = reference_wrapper_spaces(reference_wrapper, capability)
            notes += wnotes
        except InputError as exc:  # the reference's configs stay unknown; the reason is kept
            notes.append(f"reference wrapper unreadable, its configs are not matched: {exc}")
    out: dict[str, ReferenceConfig] = {}
    for row in rows:
        if row.status != "OK":
            continue
        base_set = next(
            (
                s
                for s in sets_for(launch_sets, row.params)
                if s.calls and same_backend(s.backend, row.baseline_backend)
            ),
            None,
        )
        side = side_launch(base_set) if base_set is not None else None
        symbol = side.symbol if side is not None else None
        grid = block = regs = smem = None
        if side is not None:
            grid, block, regs, smem = side.grid, side.block, side.registers, side.smem
        if not symbol and ir_entries and ir_entries.get(row.params):
            symbol = ir_entries[row.params]  # the compile the IR filing matched to CUPTI's kernel
        decoded = decode_cutile_symbol(symbol) if symbol else None
        names, src = names_for(symbol, analysis=analysis, reference_wrapper=reference_wrapper)
        space = (
            _space_for_function(decoded.function if decoded else None, spaces, analysis)
            if decoded
            else (spaces[0] if len(spaces) == 1 else None)
        )
        out[row.params] = reference_config(
            row.params,
            row.baseline_backend,
            symbol,
            space=space,
            constant_names=names,
            names_source=src,
            grid=grid,
            block=block,
            registers=regs,
            smem=smem,
        )
    return out, notes


def _ir_entries(kernel_dir: Path) -> dict[str, str]:
    from cutile_workbench.ir.filing import read_index

    out: dict[str, str] = {}
    for params, sides in read_index(kernel_dir)["configs"].items():
        ref = sides.get("reference") if isinstance(sides, dict) else None
        if isinstance(ref, dict) and isinstance(ref.get("entry"), str):
            out[str(params)] = ref["entry"]
    return out


def kernel_trust(
    ws: Workspace,
    table: RatioTable,
    *,
    candidate_framework: str,
    launch_sets: Sequence[LaunchSet] | None = None,
) -> KernelTrust:
    """See the module docstring (``launch_sets`` given: the captures are not re-read)."""
    from cutile_workbench.artifacts.launch_store import open_store
    from cutile_workbench.evidence.gpu import gpu_facts

    paths = ws.paths
    notes: list[str] = []
    unreadable = ""
    if launch_sets is None:
        try:
            # the per-config store (issue 26), confined to the kernel dir (issue 25)
            launch_sets = (
                open_store(paths.launches_json, kernel_dir=paths.root)
                if paths.launches_json.is_file()
                else []
            )
        except InputError as exc:  # E's table still stands; every row says why its identity is unknown
            unreadable, launch_sets = f"the per-launch capture file is malformed: {exc}", []
    evidence = "workbench/launches.json.gz" if paths.launches_json.is_file() else ""
    wrapper = ws.wrapper_source() if hasattr(ws, "wrapper_source") else None
    calls = tuple(wrapper_delegations(wrapper)) if wrapper is not None else ()
    if wrapper is None:
        notes.append("cutile-rs wrapper source not read (no TileGym checkout): no static delegation audit")
    cand_backend = candidate_framework.replace("-", "_")
    identities = candidate_identities(
        table.rows,
        launch_sets,
        candidate_backend=cand_backend,
        candidate_framework=candidate_framework,
        wrapper_calls=calls,
        evidence=evidence,
    )
    if unreadable:
        notes.append(unreadable)
        identities = {
            p: CandidateIdentity(
                p,
                "unknown",
                unreadable,
                unknown=(f"identity: {unreadable}",),
                wrapper_calls=calls,
                evidence=evidence,
            )
            for p in identities
        }
    tilegym = getattr(ws, "tilegym", None)
    ref_wrapper = (
        Path(tilegym) / "src" / "tilegym" / "ops" / "cutile" / f"{ws.kernel}.py" if tilegym else None
    )
    gpu = gpu_facts(ws.session_meta())
    try:
        ir_entries = _ir_entries(paths.root)
    except InputError as exc:
        ir_entries, notes = {}, [*notes, f"IR index unreadable, its entry symbols are not used: {exc}"]
    refs, rnotes = reference_configs_for(
        table.rows,
        launch_sets,
        analysis=ws.analysis,
        reference_wrapper=ref_wrapper,
        capability=gpu.capability,
        ir_entries=ir_entries,
    )
    return KernelTrust(candidate_framework, identities, refs, calls, tuple(notes + rnotes))
