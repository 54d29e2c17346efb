"""Candidate-vs-baseline measurement conditions of E's ratios (header, CLI, performance.md).

Contract of :func:`ratio_conditions`: for the candidate log and each baseline log a ratio table
used (``cutile`` → ``baseline_perf_cutile.txt``, ``triton_tileir`` →
``baseline_perf_triton_tileir.txt``), the provenance as :func:`~cutile_workbench.history.importer.
provenance_for_log` finds it in the artifact tree (events, session.json, log header), and the
:class:`~cutile_workbench.history.compat.Comparability` of the pair. It reads files but never raises on
their content: an unreadable log or session.json leaves that side's provenance ``None`` (shown as
"not recorded"). The baselines usually come from Agent A's run, hours earlier, possibly on
another node: this is where that shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cutile_workbench.artifacts.events import Event
from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.history.compat import Comparability, compare_provenance, render_conditions_section
from cutile_workbench.history.importer import provenance_for_log, read_context
from cutile_workbench.history.provenance import Provenance
from cutile_workbench.model import PerfLog

#: ratio-table baseline key → (role, KernelPaths attribute of its log)
BASELINE_ROLES: dict[str, tuple[str, str]] = {
    "cutile": ("baseline_cutile", "baseline_cutile"),
    "triton_tileir": ("baseline_triton_tileir", "baseline_triton_tileir"),
}


@dataclass(frozen=True)
class BaselineConditions:
    baseline: str  # the ratio table's baseline key
    provenance: Provenance | None
    comparability: Comparability


@dataclass(frozen=True)
class RatioConditions:
    candidate: Provenance | None
    baselines: tuple[BaselineConditions, ...]

    @property
    def comparable(self) -> bool:
        return all(b.comparability.comparable for b in self.baselines)

    def summary(self) -> str:
        """One line per baseline, for the Ratios screen header and the CLI."""
        return "\n".join(f"{b.baseline}: {b.comparability.summary()}" for b in self.baselines)

    def section(self) -> str:
        """performance.md's "Measurement conditions" section ("" without baselines)."""
        return render_conditions_section(
            self.candidate, [(b.baseline, b.provenance, b.comparability) for b in self.baselines]
        )


def _provenance(
    role: str,
    path: Path | None,
    log: PerfLog | None,
    session: Mapping[str, Any] | None,
    evs: list[Event] | None,
    root: Path,
) -> Provenance | None:
    if path is None:
        return None
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None
    rel = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
    if log is None:
        from cutile_workbench.artifacts.perflog.parser import parse_perf_log

        log = parse_perf_log(path, text=text, strict=False)  # lenient: it only names the harness here
    return provenance_for_log(role, text, log, session=session, events=evs, source=rel)[0]


def ratio_conditions(
    paths: KernelPaths,
    baseline_keys: Iterable[str],
    *,
    candidate_log: Path | None,
    candidate: PerfLog | None = None,
    baselines: Mapping[str, PerfLog] | None = None,
    clock_tolerance: float = 0.05,
) -> RatioConditions:
    """Conditions of the candidate and each used baseline, and each pair's comparability."""
    session, evs = read_context(paths, [])  # unusable files: that side's facts are "not recorded"
    cand = _provenance("candidate", candidate_log, candidate, session, evs, paths.root)
    out = []
    for key in sorted(set(baseline_keys)):
        if key not in BASELINE_ROLES:
            continue
        role, attr = BASELINE_ROLES[key]
        path = Path(getattr(paths, attr))
        prov = _provenance(
            role, path if path.is_file() else None, (baselines or {}).get(key), session, evs, paths.root
        )
        out.append(
            BaselineConditions(
                key,
                prov,
                compare_provenance(
                    cand,
                    prov,
                    a_label="candidate",
                    b_label=f"baseline {key}",
                    clock_tolerance=clock_tolerance,
                ),
            )
        )
    return RatioConditions(cand, tuple(out))
