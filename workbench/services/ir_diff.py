"""Reference vs generated Tile IR as a service: find the pairs, diff the canonical texts, audit the raw ones.

Contract: :func:`diff_pair` loads one pair (:mod:`workbench.ir.loader`: guarded reads,
canonicalization), diffs the canonical lines (:mod:`workbench.ir.diffmodel`) and audits the raw
texts with ``diff_ir.sh`` parity (:mod:`workbench.ir.audit`) into an :class:`IRDiff`.
:func:`diff_variant` is one variant of a workspace (``InputError`` naming the pairs there are when
the variant has none); :func:`diff_all` is every pair, a bad pair becoming a problem while the
others still load; :func:`diff_configs` is the IR each config *ran* (``run --dump-ir``:
``workbench/ir/index.json``), labelled by config with how each side was chosen. Audit file names are the names the caller passes (the CLI shows full paths,
the TUI file names).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from workbench.errors import InputError, WorkbenchError
from workbench.ir.audit import IRAudit, audit_texts
from workbench.ir.diffmodel import SideBySide, diff_lines
from workbench.ir.loader import IRInventory, IRPair, IRPairPaths, discover_ir, load_pair
from workbench.workspace import Workspace


@dataclass(frozen=True)
class IRDiff:
    """One pair: both loaded files, their canonical side-by-side diff and the raw-text audit."""

    label: str  # the variant, or "single"
    pair: IRPair
    diff: SideBySide
    audit: IRAudit
    notes: list[str] = field(default_factory=list)  # inventory notes (how the files were paired)


def _full_path(p: Path) -> str:
    return str(p)


def diff_pair(paths: IRPairPaths, *, name: Callable[[Path], str] = _full_path,
              notes: list[str] | None = None) -> IRDiff:
    """Load, diff and audit one pair; InputError naming the bad file and line."""
    pair = load_pair(paths)
    sbs = diff_lines(pair.reference.canon.lines, pair.generated.canon.lines)
    audit = audit_texts(pair.reference.text, pair.generated.text, ref_name=name(pair.reference.path),
                        gen_name=name(pair.generated.path))
    return IRDiff(paths.label, pair, sbs, audit, list(notes or []))


def diff_variant(ws: Workspace, variant: str | None) -> IRDiff:
    """The pair of ``variant`` (None = the single pair, or the only one); InputError if there is none."""
    inv: IRInventory = discover_ir(ws.paths)
    paths = inv.pair(variant)
    if paths is None:
        have = ", ".join(p.label for p in inv.pairs) or "none"
        extra = [str(p) for p in inv.unpaired_reference + inv.unpaired_generated]
        raise InputError(f"no IR pair for variant {variant or '(single)'}; pairs: {have}"
                         + (f"; unpaired: {', '.join(extra)}" if extra else ""), path=ws.paths.root,
                         key="--variant")
    return diff_pair(paths, notes=inv.notes)


def diff_all(ws: Workspace, *, name: Callable[[Path], str] = _full_path) -> tuple[list[IRDiff], list[WorkbenchError]]:
    """Every pair of the workspace, and the problems of the pairs that could not be loaded."""
    diffs: list[IRDiff] = []
    problems: list[WorkbenchError] = []
    for paths in discover_ir(ws.paths).pairs:
        try:
            diffs.append(diff_pair(paths, name=name))
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


def diff_configs(ws: Workspace, *, name: Callable[[Path], str] = _full_path
                 ) -> tuple[list[ConfigIRDiff], list[WorkbenchError]]:
    """One diff per config of ``workbench/ir/index.json`` (both sides present); bad entries are problems."""
    from workbench.ir.filing import INDEX_RELPATH, index_file, read_index

    out: list[ConfigIRDiff] = []
    problems: list[WorkbenchError] = []
    try:
        index = read_index(ws.paths.root)["configs"]
    except WorkbenchError as e:
        return out, [e]
    for params, sides in index.items():
        try:
            ref, gen = sides["reference"], sides["candidate"]
            paths = IRPairPaths(None, index_file(ws.paths.root, ref, str(params), "reference"),
                                index_file(ws.paths.root, gen, str(params), "candidate"))
            d = diff_pair(paths, name=name)
            out.append(ConfigIRDiff(str(params), f"reference: {ref.get('how', '')}; candidate: {gen.get('how', '')}",
                                    str(ref.get("dialect", "reference")), str(gen.get("dialect", "generated")),
                                    IRDiff(f"config {params}", d.pair, d.diff, d.audit, d.notes)))
        except WorkbenchError as e:
            problems.append(e)
        except (KeyError, TypeError) as e:
            problems.append(InputError(f"malformed IR index entry for {params!r}: {e}",
                                       path=ws.paths.root / INDEX_RELPATH))
    return out, problems
