"""The overview of an out root: one row per kernel dir of a conversion campaign (pure core).

Contract:
- :func:`kernel_dirs` lists the children of an out root that are kernel dirs in the TileGym
  artifact layout (a perf log, ``reports/``, ``workbench/`` or ``reference/`` inside), sorted by
  name; hidden dirs and plain files are not kernels.
- :func:`read_performance_md` reads what E wrote (first line ``VERDICT:``, the one
  ``geomean_ratio=`` line, ``Severity:``, the ``Rows:`` counts and the main table's ratios). It
  returns ``None`` for a file it cannot read as E's report: the caller then computes from the logs.
- :func:`performance_md_is_current` — E's report is *current* when it is newer than every perf
  log it was computed from (the candidate log, its full tee, the baselines): a re-run after the
  report makes it stale, and the overview then says so and computes from the logs.
- :func:`f_verdicts` — ``reports/perf_investigation_<scope>.md`` first lines, per scope.
- :class:`OverviewRow` is one kernel; a broken or half-written dir is a row whose ``problem``
  says what is wrong (never an exception). :class:`Overview` adds the totals: kernels per
  severity and the geomean of the geomeans.
- :data:`SCHEMA_VERSION` versions :meth:`Overview.as_dict` (the ``overview --json`` document);
  a field is only ever added within a version.

Nothing here reads a GPU, runs a child or imports Textual; the service
(:mod:`cutile_workbench.services.overview`) fills the rows from the workspaces.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cutile_workbench.model import E_SOURCE_SHORT as E_SOURCE_SHORT  # values the faces show: in the model
from cutile_workbench.model import OverviewRow as OverviewRow
from cutile_workbench.stages.e.stats import DONE_MAX, round4

SCHEMA_VERSION = 1
#: the entries whose presence makes a child of the out root a kernel dir
KERNEL_MARKERS = ("perf_cutile_rs.txt", "reports", "workbench", "reference", "generated")
#: performance.md larger than this is not E's report (E writes a few KiB per 100 configs)
MAX_REPORT_BYTES = 8 << 20
BAND_WIDTH = 40  # cells of the geomean strip
#: ``OverviewRow.e_source`` as the text and TUI tables abbreviate it (md = the current performance.md)
SEVERITY_ORDER = ("DONE", "MILD_GAP", "MODERATE_GAP", "LARGE_GAP")

_VERDICT_RE = re.compile(r"^VERDICT: (DONE|INVESTIGATE|FIXABLE|ALIGNED|BLOCKED)\s*$")
_GEOMEAN_RE = re.compile(r"^geomean_ratio=([0-9]+(?:\.[0-9]+)?)\s*$", re.M)
_SEVERITY_RE = re.compile(r"^Severity: *\**([A-Z_]+)", re.M)
_IDENTITY_RE = re.compile(r"^candidate identity: (.+)$", re.M)
_ROWS_RE = re.compile(r"^Rows: (\d+); matched: (\d+); missing/failed: (\d+)", re.M)


@dataclass(frozen=True)
class ReportSummary:
    """What E's performance.md says (parsed, not recomputed)."""

    verdict: str
    geomean: float
    severity: str | None
    rows: int | None
    matched: int | None
    missing: int | None
    worst_config: str | None
    worst_ratio: float | None
    identity: str | None = None  # E's "candidate identity:" line


@dataclass(frozen=True)
class Overview:
    """Every kernel of an out root, plus the campaign's totals."""

    root: str
    rows: tuple[OverviewRow, ...]

    @property
    def per_severity(self) -> dict[str, int]:
        out = dict.fromkeys((*SEVERITY_ORDER, "none"), 0)
        for r in self.rows:
            out[r.severity if r.severity in out else "none"] += 1
        return out

    @property
    def geomean_of_geomeans(self) -> float | None:
        gs = [r.geomean for r in self.rows if r.geomean is not None and r.geomean > 0]
        return math.exp(sum(math.log(g) for g in gs) / len(gs)) if gs else None

    @property
    def broken(self) -> int:
        return sum(1 for r in self.rows if r.problem)

    def as_dict(self) -> dict[str, Any]:
        """The ``overview --json`` document (schema :data:`SCHEMA_VERSION`, README "Overview")."""
        g = self.geomean_of_geomeans
        return {
            "schema_version": SCHEMA_VERSION,
            "root": self.root,
            "totals": {
                "kernels": len(self.rows),
                "per_severity": self.per_severity,
                "broken": self.broken,
                "geomean_of_geomeans": g,
                "done_band": DONE_MAX,
            },
            "kernels": [{**asdict(r), "notes": list(r.notes), "in_band": r.in_band} for r in self.rows],
        }


def kernel_dirs(root: Path) -> list[Path]:
    """Children of ``root`` that hold the TileGym artifact layout (module contract)."""
    out = []
    for child in sorted(root.iterdir(), key=lambda p: p.name):
        if child.name.startswith(".") or child.is_symlink() or not child.is_dir():
            continue
        if any((child / m).exists() or (child / m).is_symlink() for m in KERNEL_MARKERS) or any(
            child.glob("baseline_perf_*.txt")
        ):
            out.append(child)
    return out


def _table_ratios(text: str) -> list[tuple[str, float]]:
    """(config, ratio) of the first markdown table whose header has a ``ratio`` column."""
    out: list[tuple[str, float]] = []
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            if header is not None and out:
                break
            header = None if not out else header
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = [c.lower() for c in cells]
            continue
        if set(line.replace("|", "").strip()) <= set("-: "):
            continue
        if "ratio" not in header or "config" not in header:
            continue
        cell = cells[header.index("ratio")] if len(cells) > header.index("ratio") else ""
        m = re.match(r"([0-9]+(?:\.[0-9]+)?)x$", cell)
        if m:
            out.append((cells[header.index("config")], float(m.group(1))))
    return out


def read_performance_md(text: str) -> ReportSummary | None:
    """E's own summary of a kernel, or None when ``text`` is not a readable E report."""
    first = text.split("\n", 1)[0]
    m = _VERDICT_RE.match(first)
    geos = _GEOMEAN_RE.findall(text)
    if m is None or m.group(1) not in ("DONE", "INVESTIGATE") or len(geos) != 1:
        return None
    sev = _SEVERITY_RE.search(text)
    rows = _ROWS_RE.search(text)
    ratios = _table_ratios(text)
    worst = max(ratios, key=lambda cr: cr[1]) if ratios else None
    return ReportSummary(
        verdict=m.group(1),
        geomean=float(geos[0]),
        severity=sev.group(1) if sev else None,
        rows=int(rows.group(1)) if rows else None,
        matched=int(rows.group(2)) if rows else None,
        missing=int(rows.group(3)) if rows else None,
        worst_config=worst[0] if worst else None,
        worst_ratio=worst[1] if worst else None,
        identity=ident.group(1).strip().rstrip(".") if (ident := _IDENTITY_RE.search(text)) else None,
    )


#: E writes its report set file by file (temp + rename): a log E rewrote in that same write is
#: at most this much newer than performance.md and still its input
SAME_WRITE_NS = 10 * 1_000_000_000


def performance_md_is_current(
    report: Path, inputs: Iterable[Path], *, written_with: Iterable[Path] = ()
) -> bool:
    """Newer than every perf log it was computed from (module contract); False if unreadable.

    ``written_with``: inputs that E itself rewrites in the same write set (the sanitized
    ``perf_cutile_rs.txt`` when no full tee exists): newer by less than :data:`SAME_WRITE_NS` is
    the same write, not a new run."""
    same = set(written_with)
    try:
        written = report.stat().st_mtime_ns
        return all(
            p.stat().st_mtime_ns <= written + (SAME_WRITE_NS if p in same else 0)
            for p in inputs
            if p.exists()
        )
    except OSError:
        return False


def f_verdicts(reports_dir: Path, read_first_line: Any) -> dict[str, str]:
    """``{scope: verdict}`` of every ``perf_investigation_<scope>.md`` (``?`` when unreadable)."""
    out: dict[str, str] = {}
    if not reports_dir.is_dir():
        return out
    for p in sorted(reports_dir.glob("perf_investigation_*.md")):
        scope = p.name[len("perf_investigation_") : -len(".md")]
        line = read_first_line(p)
        m = _VERDICT_RE.match(line or "")
        out[scope] = m.group(1) if m else "?"
    return out


def sort_rows(rows: Sequence[OverviewRow], key: str) -> list[OverviewRow]:
    """Rows in a stated order: ``geomean`` (worst first), ``kernel``, ``severity``, ``last_run``."""
    if key == "kernel":
        return sorted(rows, key=lambda r: r.kernel)
    if key == "severity":
        rank = {s: i for i, s in enumerate(SEVERITY_ORDER)}
        return sorted(rows, key=lambda r: (-rank.get(r.severity or "", -1), r.kernel))
    if key == "last_run":
        return sorted(rows, key=lambda r: (r.last_run or "", r.kernel), reverse=True)
    # geomean: the worst kernel first; broken and unmeasured rows last
    return sorted(rows, key=lambda r: (r.geomean is None, -(r.geomean or 0.0), r.kernel))


def geomean_strip(ov: Overview, width: int = BAND_WIDTH, *, legend: bool = True) -> list[str]:
    """One line per kernel: its geomean as a bar on a log scale, the 1.05 band edge marked ``|``."""
    gs = [r.geomean for r in ov.rows if r.geomean]
    if not gs:
        return []
    lo, hi = min(min(gs), 0.9), max(max(gs), 1.2)

    def col(g: float) -> int:
        return round((math.log(g) - math.log(lo)) / (math.log(hi) - math.log(lo)) * (width - 1))

    band = col(DONE_MAX)
    name_w = max(len(r.kernel) for r in ov.rows)
    head = f"{lo:.2f}".ljust(band) + "| 1.05"
    head = head + f"{hi:.2f}".rjust(width - len(head)) if len(head) + 5 <= width else head
    lines = [
        f"{'':{name_w}}  {head}" + ("   (geomean on a log scale; | = E's DONE band edge)" if legend else "")
    ]
    for r in ov.rows:
        if not r.geomean:
            continue
        n = col(r.geomean)
        cells = ["█" if i <= n else " " for i in range(width)]
        cells[band] = "|" if n < band else "┃"
        mark = "" if round4(r.geomean) <= DONE_MAX else "  over"
        lines.append(f"{r.kernel:{name_w}}  {''.join(cells)} {r.geomean:.4f}{mark}")
    return lines
