"""Reference vs generated Tile IR as a service: find the pairs, diff the canonical texts, audit the raw ones.

Contract: :func:`diff_pair` loads one pair (:mod:`cutile_workbench.ir.loader`: guarded reads,
canonicalization), diffs the canonical lines (:mod:`cutile_workbench.ir.diffmodel`) and audits the raw
texts with ``diff_ir.sh`` parity (:mod:`cutile_workbench.ir.audit`) into an :class:`IRDiff`.
:func:`diff_variant` is one variant of a workspace (``InputError`` naming the pairs there are when
the variant has none); :func:`diff_all` is every pair, a bad pair becoming a problem while the
others still load (a truncated file is not refused: its pair is diffed, the structural diff
text-diffs what it cannot parse, and the file's damage is a note and a problem naming file and line); :func:`diff_configs` is the IR each config *ran* (``run --dump-ir``:
``workbench/ir/index.json``), labelled by config with how each side was chosen, and tied to the
launch evidence of that config (registers, shared memory, grid of the kernel whose name is the IR's
entry symbol in ``launches.json.gz``) where captures exist. Audit file names are the names the caller
passes (the CLI shows full paths, the TUI file names).
Every :class:`IRDiff` carries the structural diff (:mod:`cutile_workbench.ir.structdiff`: op graphs matched
by structure and dataflow, hunks ranked by perf relevance, each naming its audit row) beside the
``diff_ir.sh``-parity audit, which stays byte-for-byte TileGym's script; ``diff`` (the canonical
line diff) is kept for callers that still read it.
:func:`diff_pairs` is what ``diff <kernel>`` shows: one variant, or every pair when none is named,
the variant slowest in E's table (per-variant geomean ratio) first, or only that one (``--slowest``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cutile_workbench.artifacts.workspace import Workspace
from cutile_workbench.errors import InputError, WorkbenchError
from cutile_workbench.ir.audit import IRAudit as IRAudit
from cutile_workbench.ir.audit import audit_texts as audit_texts
from cutile_workbench.ir.diffmodel import DiffRow as DiffRow
from cutile_workbench.ir.diffmodel import Fold as Fold
from cutile_workbench.ir.diffmodel import SideBySide as SideBySide
from cutile_workbench.ir.diffmodel import diff_lines
from cutile_workbench.ir.loader import (
    MAX_DIFF_LINES,
    IRInventory,
    IRPair,
    IRPairPaths,
    discover_ir,
    load_pair,
)
from cutile_workbench.ir.structdiff import SRow as SRow
from cutile_workbench.ir.structdiff import StructDiff as StructDiff
from cutile_workbench.ir.structdiff import structural_diff as structural_diff


def get_lexer() -> Any:
    """The Tile IR lexer the TUI highlights with (:func:`cutile_workbench.ir.lexer.get_lexer`; pygments is
    imported on first use only)."""
    from cutile_workbench.ir.lexer import get_lexer as lexer

    return lexer()


def highlight_terminal(text: str) -> str:
    """Tile IR highlighted for a terminal (:func:`cutile_workbench.ir.lexer.highlight_terminal`; pygments
    is imported on first use only)."""
    from cutile_workbench.ir.lexer import highlight_terminal as highlight

    return highlight(text)


@dataclass(frozen=True)
class IRDiff:
    """One pair: both loaded files, their canonical side-by-side diff and the raw-text audit."""

    label: str  # the variant, or "single"
    pair: IRPair
    diff: SideBySide
    audit: IRAudit
    notes: list[str] = field(default_factory=list)  # inventory notes (how the files were paired)
    structure: StructDiff | None = None
    launch_evidence: list[str] = field(default_factory=list)  # one line per side, where captured
    #: what is wrong with a file that still loaded (a truncated dump): callers report these as problems
    file_problems: list[WorkbenchError] = field(default_factory=list)

    @property
    def struct(self) -> StructDiff:
        """The structural diff (computed on first use when a caller built this object without it)."""
        if self.structure is None:
            object.__setattr__(
                self, "structure", structural_diff(self.pair.reference.text, self.pair.generated.text)
            )
        assert self.structure is not None
        return self.structure

    def audit_row_of(self, check: str | None) -> str | None:
        """``check`` when the audit has such a row (what a hunk links to), else None."""
        if check is None:
            return None
        return check if any(r.check == check for r in self.audit.rows) else None


def _full_path(p: Path) -> str:
    return str(p)


def diff_pair(
    paths: IRPairPaths, *, name: Callable[[Path], str] = _full_path, notes: list[str] | None = None
) -> IRDiff:
    """Load, diff and audit one pair; InputError naming the bad file and line."""
    # a truncated file is diffed, its damage reported; one over MAX_DIFF_LINES is refused (its cost)
    pair = load_pair(paths, damaged_ok=True, max_lines=MAX_DIFF_LINES)
    sbs = diff_lines(pair.reference.canon.lines, pair.generated.canon.lines)
    audit = audit_texts(
        pair.reference.text,
        pair.generated.text,
        ref_name=name(pair.reference.path),
        gen_name=name(pair.generated.path),
    )
    damaged = [f.damage for f in (pair.reference, pair.generated) if f.damage is not None]
    notes = list(notes or [])
    for d in damaged:
        where = f"{name(Path(d.path))}:{d.line}" if d.path is not None and d.line else str(d.path)
        notes.append(
            f"{where}: {d.message}; the structural diff reads what is there and text-diffs the "
            "lines it cannot parse (no structural claim about them)"
        )
    return IRDiff(
        paths.label,
        pair,
        sbs,
        audit,
        notes,
        structural_diff(pair.reference.text, pair.generated.text),
        file_problems=list(damaged),
    )


def variant_slowness(ws: Workspace) -> dict[str, float]:
    """Per-variant geomean ratio (candidate/baseline) of E's table, slowest first; {} when the
    table cannot be built (no logs) or has no variants."""
    from cutile_workbench.services.stage_e import ratio_table

    try:
        table = ratio_table(ws)
    except WorkbenchError:
        return {}
    return dict(sorted(table.variant_geomeans.items(), key=lambda kv: -kv[1]))


def diff_pairs(
    ws: Workspace, variant: str | None, *, slowest: bool = False, config: str | None = None
) -> list[IRDiff]:
    """``variant``'s pair; ``config``'s (the IR that config ran, any spelling of the config naming); or
    (neither) every pair of the workspace — the variant pairs, the variant slowest in E's table first (a
    note says the order and its figures), then the IR each config ran, the same set the TUI's IR screen
    shows; ``slowest``: only that variant's pair (InputError when E's table gives no variant figures).
    InputError when there is no pair or a pair cannot be loaded (the error names the file and line)."""
    if config is not None:
        return [_config_diff(ws, config)]
    inv: IRInventory = discover_ir(ws.paths)
    if variant is None and not slowest:
        configs = _config_diffs(ws)
        if not inv.pairs and configs:
            return configs
        if inv.pairs or not configs:
            return _variant_diffs(ws, inv, None, slowest=False) + configs
    return _variant_diffs(ws, inv, variant, slowest=slowest)


def _config_diffs(ws: Workspace) -> list[IRDiff]:
    """The IR each config ran, diffed (:func:`diff_configs`); a pair that cannot be loaded raises."""
    configs, problems = diff_configs(ws)
    damaged = {id(p) for c in configs for p in c.diff.file_problems}
    for problem in problems:
        if id(problem) not in damaged:
            raise problem
    return [c.diff for c in configs]


def _config_diff(ws: Workspace, config: str) -> IRDiff:
    """The IR ``config`` ran; InputError naming the configs that have one when it has none."""
    from cutile_workbench.ir.filing import read_index
    from cutile_workbench.stages.session.kernel import KernelSession

    params = KernelSession.of(ws).resolve_config(config)
    have = [str(p) for p in read_index(ws.paths.root)["configs"]]
    if params not in have:
        raise InputError(
            f"no recorded IR for config {params} (run --dump-ir files it); configs with IR: "
            + (", ".join(have) or "none"),
            path=ws.paths.root,
            key="--config",
        )
    found = [d for d in _config_diffs(ws) if d.label == f"config {params}"]
    return found[0]


def _variant_diffs(ws: Workspace, inv: IRInventory, variant: str | None, *, slowest: bool) -> list[IRDiff]:
    if variant is not None or (len(inv.pairs) <= 1 and not slowest):
        return [diff_variant(ws, variant)]
    order = variant_slowness(ws)
    have = {p.label: p for p in inv.pairs}
    ranked = [v for v in order if v in have]
    if slowest:
        if not ranked:
            raise InputError(
                "--slowest: E's table gives no per-variant ratio for the IR pairs "
                f"({', '.join(have) or 'none'}); name one with --variant",
                path=ws.paths.root,
                key="--slowest",
            )
        v = ranked[0]
        note = f"slowest variant in E's table: {v} (geomean {order[v]:.3f}x candidate/baseline)"
        return [diff_pair(have[v], notes=[*inv.notes, note])]
    pairs = [have[v] for v in ranked] + [p for p in inv.pairs if p.label not in order]
    notes = list(inv.notes)
    if ranked:
        notes.append(
            "ordered by E's table (slowest variant first): "
            + ", ".join(f"{v} {order[v]:.3f}x" for v in ranked)
            + (
                f"; not in the table: {', '.join(p.label for p in pairs[len(ranked) :])}"
                if len(pairs) > len(ranked)
                else ""
            )
        )
    else:
        notes.append("E's table gives no per-variant ratio here: pairs in name order")
    return [diff_pair(p, notes=notes) for p in pairs]


def diff_variant(ws: Workspace, variant: str | None) -> IRDiff:
    """The pair of ``variant`` (None = the single pair, or the only one); InputError if there is none."""
    inv: IRInventory = discover_ir(ws.paths)
    paths = inv.pair(variant)
    if paths is None:
        have = ", ".join(p.label for p in inv.pairs) or "none"
        extra = [str(p) for p in inv.unpaired_reference + inv.unpaired_generated]
        raise InputError(
            f"no IR pair for variant {variant or '(single)'}; pairs: {have}"
            + (f"; unpaired: {', '.join(extra)}" if extra else ""),
            path=ws.paths.root,
            key="--variant",
        )
    return diff_pair(paths, notes=inv.notes)


def diff_all(
    ws: Workspace, *, name: Callable[[Path], str] = _full_path
) -> tuple[list[IRDiff], list[WorkbenchError]]:
    """Every pair of the workspace, and the problems of the pairs that could not be loaded."""
    diffs: list[IRDiff] = []
    problems: list[WorkbenchError] = []
    for paths in discover_ir(ws.paths).pairs:
        try:
            d = diff_pair(paths, name=name)
            diffs.append(d)
            problems.extend(d.file_problems)
        except WorkbenchError as e:
            problems.append(e)
    return diffs, problems


@dataclass(frozen=True)
class ConfigIRDiff:
    """The recorded IR one config ran, diffed: ``how`` says how each side was chosen (the index)."""

    params: str
    how: str
    ref_dialect: str
    gen_dialect: str
    diff: IRDiff


def diff_configs(
    ws: Workspace, *, name: Callable[[Path], str] = _full_path
) -> tuple[list[ConfigIRDiff], list[WorkbenchError]]:
    """One diff per config of ``workbench/ir/index.json`` (both sides present); bad entries are problems."""
    from cutile_workbench.ir.filing import INDEX_RELPATH, index_file, read_index

    out: list[ConfigIRDiff] = []
    problems: list[WorkbenchError] = []
    try:
        index = read_index(ws.paths.root)["configs"]
    except WorkbenchError as e:
        return out, [e]
    for params, sides in index.items():
        try:
            ref, gen = sides["reference"], sides["candidate"]
            paths = IRPairPaths(
                None,
                index_file(ws.paths.root, ref, str(params), "reference"),
                index_file(ws.paths.root, gen, str(params), "candidate"),
            )
            d = diff_pair(paths, name=name)
            evidence = launch_evidence(ws, str(params), d.pair)
            out.append(
                ConfigIRDiff(
                    str(params),
                    f"reference: {ref.get('how', '')}; candidate: {gen.get('how', '')}",
                    str(ref.get("dialect", "reference")),
                    str(gen.get("dialect", "generated")),
                    IRDiff(
                        f"config {params}",
                        d.pair,
                        d.diff,
                        d.audit,
                        d.notes,
                        d.structure,
                        evidence,
                        d.file_problems,
                    ),
                )
            )
            problems.extend(d.file_problems)
        except WorkbenchError as e:
            problems.append(e)
        except (KeyError, TypeError) as e:
            problems.append(
                InputError(
                    f"malformed IR index entry for {params!r}: {e}", path=ws.paths.root / INDEX_RELPATH
                )
            )
    return out, problems


def launch_evidence(ws: Workspace, params: str, pair: IRPair) -> list[str]:
    """Registers, shared memory and grid of the kernels this config launched whose name is the entry
    symbol of each IR side (first recorded call); [] when there are no captures (never a guess)."""
    from cutile_workbench.artifacts.launches_io import load_launch_sets
    from cutile_workbench.ir.graph import parse_ir

    path = ws.paths.launches_json
    if not path.is_file():
        return []
    try:
        sets = load_launch_sets(path)
    except WorkbenchError:
        return []
    out: list[str] = []
    for role, ir in (("reference", pair.reference), ("candidate", pair.generated)):
        entries = set(parse_ir(ir.text).entries)
        for s in sets:
            if s.params != params:
                continue
            hit = next((x for c in s.calls for x in c.launches if x.name in entries), None)
            if hit is None:
                continue
            grid = "x".join(map(str, hit.grid)) if hit.grid else "?"
            block = "x".join(map(str, hit.block)) if hit.block else "?"
            smem = (hit.static_smem or 0) + (hit.dynamic_smem or 0)
            out.append(
                f"{role} ({s.backend}): grid {grid}, block {block}, "
                f"{hit.registers_per_thread if hit.registers_per_thread is not None else '?'} regs/thread, "
                f"smem {smem} B (launch capture, {path.name})"
            )
            break
    return out
