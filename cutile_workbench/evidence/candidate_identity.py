"""Candidate identity per config: did the candidate run a kernel of its own framework?

Contract: :func:`candidate_identities` decides, per E row, from the per-launch captures
(``workbench/launches.json.gz``) — the main kernel's symbol, grid, block, registers, smem and the
launches per call of each side — and, where the wrapper source is at hand, the static audit
:func:`wrapper_delegations`, one :class:`CandidateIdentity` whose ``kind`` is:

- ``candidate``: the main kernel is one of the candidate framework's (cutile-rs: ``<fn>_entry``;
  a stand-in candidate: its own framework's symbol family) and not the reference's symbol;
- ``reference``: the candidate's main kernel IS a kernel the reference (or another captured backend)
  ran for that config (same symbol), or a kernel of the reference's framework (a cuTile-mangled symbol
  under cutile-rs): a wrapper that delegates to the reference, or a silent fallback;
- ``library``: the main kernel is a PyTorch ATen or vendor-library kernel (cuBLAS, CUTLASS, cuDNN…),
  whoever else ran it;
- ``none``: the captured calls launched no GPU kernel at all (nothing measurable);
- ``unknown``: no capture of the candidate for the config, a capture without launch records
  (CUDA events only) or without kernel symbols, or a symbol of no recognisable family — ``why``
  says which; never a guessed identity.

A capture without resources (grid/registers) still decides from the symbol, and lists the
resources as unknown. :attr:`CandidateIdentity.mark` is the one-word row mark every face shows.
Pure: captures and paths in, dataclasses out (the wrapper read is the only file access).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cutile_workbench.evidence.launches import (
    LaunchSummary,
    SetFacts,
    is_native,
    same_backend,
    summarize_launch_set,
)
from cutile_workbench.model import LaunchSet, RatioRow

IdentityKind = Literal["candidate", "reference", "library", "none", "unknown"]
#: the kinds that mean "this row does not measure the candidate" (F: FIXABLE, E: a warning)
NOT_CANDIDATE: frozenset[str] = frozenset({"reference", "library", "none"})
MARKS: dict[str, str] = {
    "candidate": "own",
    "reference": "REF",
    "library": "LIB",
    "none": "NONE",
    "unknown": "?",
}

_CUTILE_MANGLED = re.compile(r"_K[a-z]\d+_[A-Z]")
#: vendor-library kernel names (cuBLAS/cuBLASLt ``sm90_xmma_…``/``nvjet_…``, CUTLASS, cuDNN, cuTENSOR)
_LIBRARY = re.compile(
    r"cutlass|cublas|cudnn|nvjet|xmma|cutensor|^(?:sm\d+|ampere|volta|turing|hopper)_", re.IGNORECASE
)


def symbol_family(name: str) -> str:
    """``cutile-rs`` | ``cuTile Python`` | ``PyTorch ATen`` | ``library`` | ``plain`` (Triton-like) | ``unknown``."""
    if not name:
        return "unknown"
    if is_native(name):
        return "PyTorch ATen"
    # the JIT families first: a cuTile/cutile-rs kernel may well be called ``gemv_…`` or ``sm90_…``
    if _CUTILE_MANGLED.search(name):
        return "cuTile Python"
    if name.endswith("_entry") and re.fullmatch(r"[A-Za-z_]\w*", name):
        return "cutile-rs"
    if _LIBRARY.search(name) or name.startswith("_Z"):
        return "library"
    if re.fullmatch(r"[A-Za-z_]\w*", name):
        return "plain"
    return "unknown"


def expected_family(framework: str) -> str:
    """The symbol family a candidate framework's own kernels have."""
    low = framework.lower().replace("_", "-")
    if low.startswith("cutile-rs"):
        return "cutile-rs"
    if low.startswith("cutile"):
        return "cuTile Python"
    if low.startswith("triton"):
        return "plain"
    return "unknown"


@dataclass(frozen=True)
class SideLaunch:
    """One side's main kernel for one config, as captured."""

    backend: str
    symbol: str
    family: str
    launches_per_call: int
    kernels: tuple[str, ...]  # every kernel symbol of the common per-call signature
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    registers: int | None = None
    static_smem: int | None = None
    dynamic_smem: int | None = None

    @property
    def smem(self) -> int | None:
        if self.static_smem is None and self.dynamic_smem is None:
            return None
        return (self.static_smem or 0) + (self.dynamic_smem or 0)

    @property
    def resources(self) -> tuple[object, ...]:
        return (self.grid, self.block, self.registers, self.smem)


@dataclass(frozen=True)
class CandidateIdentity:
    """What the candidate ran for one config (see the module docstring)."""

    params: str
    kind: IdentityKind
    why: str
    candidate: SideLaunch | None = None
    baseline: SideLaunch | None = None
    same_launch: bool = False  # symbol, grid, block, registers and smem all equal the reference's
    unknown: tuple[str, ...] = ()  # what is unknown and why
    wrapper_calls: tuple[str, ...] = ()  # "file:line: ..." where the static audit finds a delegation
    evidence: str = ""  # the capture file

    @property
    def mark(self) -> str:
        return MARKS[self.kind]

    @property
    def not_candidate(self) -> bool:
        return self.kind in NOT_CANDIDATE

    def as_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "mark": self.mark,
            "why": self.why,
            "candidate_kernel": self.candidate.symbol if self.candidate else None,
            "baseline_kernel": self.baseline.symbol if self.baseline else None,
            "same_launch": self.same_launch,
            "unknown": list(self.unknown),
            "wrapper_calls": list(self.wrapper_calls),
        }


#: a launch set as identity reads it: decoded, or its :class:`~cutile_workbench.evidence.launches.SetFacts`
SetLike = LaunchSet | SetFacts


def _n_calls(s: SetLike) -> int:
    return s.n_calls if isinstance(s, SetFacts) else len(s.calls)


def _kernel_names(s: SetLike) -> Iterable[str]:
    if isinstance(s, SetFacts):
        return s.kernel_names
    return (x.name for c in s.calls for x in c.launches if x.kind == "kernel")


def side_launch(ls: SetLike, summary: LaunchSummary | bool | None = False) -> SideLaunch | None:
    """The main kernel of a set's common per-call signature (None: no kernel launch in it);
    ``summary``: the set's :func:`summarize_launch_set` when the caller has it already (a
    :class:`~cutile_workbench.evidence.launches.SetFacts` carries its own)."""
    if summary is False and isinstance(ls, SetFacts):
        summary = ls.summary
    s = summarize_launch_set(ls) if summary is False and isinstance(ls, LaunchSet) else summary
    if not isinstance(s, LaunchSummary):
        return None
    kernels = tuple(g.name for g in s.groups if g.kind == "kernel")
    return SideLaunch(
        ls.backend,
        s.main_name,
        symbol_family(s.main_name),
        s.launches_per_call,
        kernels,
        s.grid,
        s.block,
        s.registers_per_thread,
        s.static_smem,
        s.dynamic_smem,
    )


def sets_for(sets: Sequence[Any], params: str) -> list[Any]:
    """One config's sets: looked up by params in a per-config store (no scan, no decoding of the others)."""
    from cutile_workbench.artifacts.launch_store import LaunchStore

    if isinstance(sets, LaunchStore):
        return sets.for_params(params)
    return [s for s in sets if s.params == params]


def identify(
    row: RatioRow,
    launch_sets: Sequence[SetLike],
    candidate_backend: str,
    candidate_framework: str,
    *,
    wrapper_calls: Sequence[str] = (),
    evidence: str = "",
    any_capture: bool | None = None,
    side: Callable[[Any], SideLaunch | None] = side_launch,
) -> CandidateIdentity:
    """One row's identity (see the module docstring). ``launch_sets`` may be that config's sets alone
    (decoded, or their :class:`~cutile_workbench.evidence.launches.SetFacts`: nothing decoded);
    ``any_capture`` then says whether the session has a capture file at all (default: any set given);
    ``side``: :func:`side_launch`, or one answering from summaries the caller has already."""
    same = sets_for(launch_sets, row.params)
    cand_sets = [s for s in same if same_backend(s.backend, candidate_backend)]
    if not cand_sets:
        others = [s for s in same if not same_backend(s.backend, row.baseline_backend)]
        cand_sets = others if len({s.backend for s in others}) == 1 else []
    # by position: an equal set of another backend cannot exist (equal sets share their backend)
    base_sets = [s for s in same if not any(s is c for c in cand_sets)]
    calls = tuple(wrapper_calls)
    if not cand_sets:
        why = (
            "no per-launch capture of the candidate for this config"
            if (bool(launch_sets) if any_capture is None else any_capture)
            else "no per-launch capture (workbench/launches.json.gz absent)"
        )
        return CandidateIdentity(
            row.params, "unknown", why, unknown=(f"identity: {why}",), wrapper_calls=calls, evidence=evidence
        )
    cset = cand_sets[0]
    if cset.source == "events" or not _n_calls(cset):
        why = (
            "the candidate's capture holds CUDA-event timings only (no launch records)"
            if cset.source == "events"
            else "the candidate's capture holds no calls"
        )
        return CandidateIdentity(
            row.params, "unknown", why, unknown=(f"identity: {why}",), wrapper_calls=calls, evidence=evidence
        )
    cand = side(cset)
    base = next(
        (b for b in (side(s) for s in base_sets if same_backend(s.backend, row.baseline_backend)) if b),
        None,
    )
    ran_by: dict[str, str] = {}  # kernel symbol → the (first) other backend whose capture ran it
    for s in base_sets:
        for name in _kernel_names(s):
            ran_by.setdefault(name, s.backend)
    if cand is None:
        return CandidateIdentity(
            row.params,
            "none",
            f"the candidate's {_n_calls(cset)} captured call(s) launched no GPU kernel: nothing measurable",
            None,
            base,
            wrapper_calls=calls,
            evidence=evidence,
        )
    unknown: list[str] = []
    if cand.grid is None or cand.registers is None:
        unknown.append(
            f"launch resources: the {cset.source} capture carries no grid/registers for the candidate"
        )
    if not cand.symbol:
        return CandidateIdentity(
            row.params,
            "unknown",
            "the capture carries no kernel symbol for the candidate's launches",
            cand,
            base,
            unknown=("identity: no kernel symbol", *unknown),
            wrapper_calls=calls,
            evidence=evidence,
        )
    same_launch = (
        base is not None
        and cand.symbol == base.symbol
        and cand.resources == base.resources
        and cand.grid is not None
    )
    own = expected_family(candidate_framework)
    ref_fam = base.family if base is not None else None
    kind: IdentityKind
    if cand.family in ("PyTorch ATen", "library"):
        # a helper kernel the reference's test also ran (an ATen add in a backward) is still a library kernel
        kind, why = (
            "library",
            f"the candidate's main kernel is a {cand.family} kernel (`{cand.symbol}`), not {own}",
        )
    elif cand.symbol in ran_by:
        kind = "reference"
        who = (
            "the reference's own kernel"
            if same_backend(ran_by[cand.symbol], row.baseline_backend)
            else f"{ran_by[cand.symbol]}'s kernel"
        )
        why = f"the candidate ran {who} `{cand.symbol}`" + (
            " with the same grid, block, registers and smem" if same_launch else ""
        )
    elif cand.family == own and own != "unknown":
        kind, why = "candidate", f"a {own} kernel (`{cand.symbol}`)"
    elif ref_fam is not None and cand.family == ref_fam and cand.family != "unknown":
        kind, why = (
            "reference",
            (
                f"the candidate ran a {cand.family} kernel (`{cand.symbol}`), the reference's "
                f"framework, not a {own} kernel"
            ),
        )
    else:
        kind = "unknown"
        why = f"the symbol `{cand.symbol}` is of no recognisable family (expected a {own} kernel)"
        unknown.append("identity: " + why)
    return CandidateIdentity(row.params, kind, why, cand, base, same_launch, tuple(unknown), calls, evidence)


def candidate_identities(
    rows: Sequence[RatioRow],
    launch_sets: Sequence[SetLike],
    *,
    candidate_backend: str,
    candidate_framework: str,
    wrapper_calls: Sequence[str] = (),
    evidence: str = "",
) -> dict[str, CandidateIdentity]:
    """``{params: identity}`` for every row that has a candidate side (NO_BASELINE rows too)."""
    out: dict[str, CandidateIdentity] = {}
    for r in rows:
        if r.params not in out:
            out[r.params] = identify(
                r,
                launch_sets,
                candidate_backend,
                candidate_framework,
                wrapper_calls=wrapper_calls,
                evidence=evidence,
            )
    return out


def summary_line(identities: Mapping[str, CandidateIdentity], candidate_framework: str) -> str:
    """One line for under a table: how many rows ran the candidate's own kernels, and what the others ran."""
    if not identities:
        return "candidate identity: unknown (no rows)"
    counts: dict[str, int] = {}
    for ident in identities.values():
        counts[ident.kind] = counts.get(ident.kind, 0) + 1
    n = len(identities)
    own = counts.get("candidate", 0)
    if own == n:
        return f"candidate identity: all {n} rows ran {candidate_framework}'s own kernels (captured symbols)"
    words = {
        "reference": "ran the REFERENCE's kernel",
        "library": "ran a PyTorch/library kernel",
        "none": "launched no kernel",
        "unknown": "unknown (see the row marks)",
    }
    parts = [f"{counts[k]} {words[k]}" for k in ("reference", "library", "none", "unknown") if counts.get(k)]
    lead = "WARNING: " if any(counts.get(k) for k in NOT_CANDIDATE) else ""
    return (
        f"{lead}candidate identity: {own} of {n} rows ran {candidate_framework}'s own kernels; "
        + "; ".join(parts)
    )


# --------------------------------------------------------------------------- static wrapper audit

_REFERENCE_MODULE = re.compile(r"^tilegym\.ops\.(?!cutile_rs\b)[\w.]+$|^cuda\.tile\b")
_OTHER_BACKENDS = ("cutile", "triton", "torch", "pytorch", "tilecpp")


def wrapper_delegations(path: Path) -> list[str]:
    """``file:line: …`` for each call of the cutile-rs wrapper that reaches another backend's implementation:
    a name imported from ``tilegym.ops.<other>`` or ``cuda.tile``, an attribute of such a module, or a call
    with ``backend="<other backend>"``. Unreadable source → [] (the wrapper audit reports it)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return []
    display = _display(Path(path))
    imported: dict[str, str] = {}  # local name → module it came from
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and _REFERENCE_MODULE.match(node.module):
            for a in node.names:
                imported[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if _REFERENCE_MODULE.match(a.name):
                    imported[a.asname or a.name.split(".")[0]] = a.name
    out: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        root = node.func
        while isinstance(root, ast.Attribute):
            root = root.value
        dotted = ast.unparse(node.func)
        if isinstance(root, ast.Name) and root.id in imported:
            out.append(f"{display}:{node.lineno}: calls `{dotted}` ({imported[root.id]})")
            continue
        if dotted.startswith(("tilegym.ops.", "cuda.tile.")) and not dotted.startswith(
            "tilegym.ops.cutile_rs"
        ):
            out.append(f"{display}:{node.lineno}: calls `{dotted}`")
            continue
        for kw in node.keywords:
            if (
                kw.arg == "backend"
                and isinstance(kw.value, ast.Constant)
                and isinstance(kw.value.value, str)
                and kw.value.value.lower() in _OTHER_BACKENDS
            ):
                out.append(f"{display}:{node.lineno}: calls `{dotted}` with backend={kw.value.value!r}")
    return sorted(set(out), key=lambda s: int(s.split(":")[1]) if s.split(":")[1].isdigit() else 0)


def _display(path: Path) -> str:
    parts = path.resolve().parts
    if "src" in parts:
        return "/".join(parts[len(parts) - 1 - parts[::-1].index("src") :])
    return str(path)
