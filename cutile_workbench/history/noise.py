"""A noise floor per row: the run-to-run spread of each side's medians (an A/A estimate), and calibration.

Contract:
- :func:`side_spread` of one backend's medians for one config over its runs in the history is
  ``(max - min) / min`` (numpy); None with fewer than two runs. Conservative on purpose: it grows
  with the number of runs instead of averaging a bad run away.
- Only runs of **the same code** count (an A/A estimate, not a trend): the runs whose code identity
  equals that of the side's latest run -- TileGym commit and cutile-rs library sha256 for a
  candidate run, the TileGym commit for a baseline run (:func:`run_identity`). A latest run whose
  identity is not recorded gives no floor, and says so: a fix between two runs is never "noise".
- :func:`row_noise` combines a row's two sides: the floor is the larger spread of the sides that
  have two or more runs; ``text`` says from how many runs of which backend, or why there is none.
  A ratio whose distance from 1 is within the floor is what an identical candidate could show.
- :func:`read_noise` reads the kernel dir's ``workbench/history.sqlite`` **only if it exists**, read-only
  (:meth:`HistoryStore.open` with ``read_only``: reached by descriptor, no link followed, a copy
  in memory, an older schema migrated there; nothing under the out root changes, and on a
  read-only mount the floors are still shown); nothing is created or imported (``run`` fills it);
  forward phase only. A store it cannot read (a link, a hard-linked or corrupt file, orphaned
  rows) gives no floor and says why, naming the file.
  :func:`with_noise_floors` puts the result on E's rows (``RatioRow.noise_floor`` / ``noise_text``).
- :func:`calibrate` is the A/A test: two runs of the baseline, the second as the "candidate";
  the rows E would flag (ratio > 1.05) are counted (the goal is zero) with the largest deviation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.errors import WorkbenchError
from cutile_workbench.history.entries import ConfigResult
from cutile_workbench.model import RatioRow, RatioTable

#: E's row gate: an A/A ratio above it is a row an identical candidate would have flagged
FLAG_RATIO = 1.05
RowKey = tuple[str, str]  # (func_key, params)


def side_spread(medians: Sequence[float]) -> float | None:
    """(max - min) / min of one side's medians across runs; None with fewer than two."""
    values = np.asarray([m for m in medians if m > 0], dtype=float)
    if values.size < 2:
        return None
    return float(np.ptp(values) / values.min())


@dataclass(frozen=True)
class SideNoise:
    backend: str
    runs: int  # runs of the same code as the latest (the ones the spread is over)
    spread: float | None
    why: str = ""  # why there is no spread beyond "1 run"


def run_identity(provenance: Any, roles: Sequence[str]) -> tuple[str, ...] | None:
    """The code a run measured (module contract); None when a part of it is not recorded."""
    candidate = "candidate" in roles
    parts = (
        (provenance.tilegym_commit, provenance.cutile_rs_lib_sha256)
        if candidate
        else (provenance.tilegym_commit,)
    )
    return None if any(p is None for p in parts) else tuple(str(p) for p in parts)


@dataclass(frozen=True)
class RowNoise:
    floor: float | None
    text: str


def row_noise(candidate: SideNoise | None, baseline: SideNoise | None) -> RowNoise:
    """The row's floor and its explanation (module contract)."""
    sides = [s for s in (candidate, baseline) if s is not None]
    known = [s for s in sides if s.spread is not None]
    if not known:
        runs = (
            ", ".join(s.why or f"{s.backend} {s.runs} run{'s' if s.runs != 1 else ''}" for s in sides)
            or "no run"
        )
        return RowNoise(
            None, f"no A/A estimate: fewer than 2 runs of the same code on a side in the history ({runs})"
        )
    floor = max(s.spread for s in known if s.spread is not None)
    parts = [
        f"{s.backend} {s.spread:.1%} over {s.runs} runs" if s.spread is not None else f"{s.backend} 1 run"
        for s in sides
    ]
    return RowNoise(floor, f"±{floor:.1%} run-to-run (A/A: {', '.join(parts)})")


def spreads_by_config(
    results: Iterable[tuple[tuple[str, ...] | None, ConfigResult]],
) -> dict[tuple[str, str, str], SideNoise]:
    """(func_key, params, backend) → that side's noise over the runs of its latest run's code
    (``results``: (run identity, result) in run order; forward phase only)."""
    by_side: dict[tuple[str, str, str], list[tuple[tuple[str, ...] | None, float]]] = {}
    for identity, r in results:
        if r.phase == "forward":
            by_side.setdefault((r.func_key, r.params, r.backend), []).append((identity, r.median_ms))
    out = {}
    for key, points in by_side.items():
        latest = points[-1][0]
        if latest is None:
            out[key] = SideNoise(
                key[2],
                1,
                None,
                f"{key[2]}: {len(points)} run(s), the latest without a recorded "
                "code identity (TileGym commit / cutile-rs library)",
            )
            continue
        same = [m for identity, m in points if identity == latest]
        out[key] = SideNoise(key[2], len(same), side_spread(same))
    return out


def read_noise(paths: KernelPaths) -> tuple[dict[tuple[str, str, str], SideNoise], str]:
    """Spreads from ``workbench/history.sqlite`` if it exists, and why there are none otherwise."""
    from cutile_workbench.history.store import HISTORY_FILE, HistoryStore

    db = Path(paths.workbench_dir) / HISTORY_FILE
    if not (db.exists() or db.is_symlink()):
        return (
            {},
            "no run history here (workbench/history.sqlite absent; `run` records runs into it)",
        )
    try:
        store = HistoryStore.open(db, read_only=True, root=paths.root)
    except WorkbenchError as exc:
        return {}, f"run history unreadable ({exc})"
    try:
        runs = {r.run_id: r for r in store.runs()}
        order = sorted(runs, key=lambda rid: (runs[rid].when, rid))
        rank = {rid: i for i, rid in enumerate(order)}
        rows = sorted(store.configs(phase="forward"), key=lambda rc: rank[rc[0]])  # no orphan: store.configs
        return spreads_by_config(
            (run_identity(runs[rid].provenance, runs[rid].roles), c) for rid, c in rows
        ), ""
    except WorkbenchError as exc:
        return {}, f"run history unreadable ({exc})"
    finally:
        store.close()


_BASELINE_FRAMEWORK = {"cutile": "cutile", "triton_tileir": "triton"}


def table_with_noise(
    table: RatioTable, paths: KernelPaths, candidate_frameworks: Iterable[str]
) -> RatioTable:
    """E's table with the noise floors the kernel dir's run history gives (:func:`read_noise`)."""
    spreads, why = read_noise(paths)
    return with_noise_floors(table, spreads, why, candidate_frameworks)


def with_noise_floors(
    table: RatioTable,
    spreads: Mapping[tuple[str, str, str], SideNoise],
    why_none: str = "",
    candidate_frameworks: Iterable[str] = ("cutile-rs",),
) -> RatioTable:
    """``table`` with each matched row's ``noise_floor``/``noise_text`` (module contract)."""
    frameworks = tuple(candidate_frameworks)
    rows: list[RatioRow] = []
    for r in table.rows:
        if r.status != "OK":
            rows.append(r)
            continue
        cand = next((spreads[k] for f in frameworks if (k := (r.func_key, r.params, f)) in spreads), None)
        base_fw = _BASELINE_FRAMEWORK.get(r.baseline_backend or "", r.baseline_backend or "")
        base = spreads.get((r.func_key, r.params, base_fw))
        noise = row_noise(cand, base) if spreads else RowNoise(None, f"no A/A estimate: {why_none}")
        rows.append(dataclasses.replace(r, noise_floor=noise.floor, noise_text=noise.text))
    return dataclasses.replace(table, rows=rows)


@dataclass(frozen=True)
class Calibration:
    """The A/A test of one baseline backend: run ``second`` as a candidate against run ``first``."""

    backend: str
    first: str
    second: str
    ratios: tuple[tuple[str, float], ...]  # (params, second/first) per config in both runs

    @property
    def flagged(self) -> tuple[tuple[str, float], ...]:
        return tuple((p, r) for p, r in self.ratios if r > FLAG_RATIO)

    @property
    def worst(self) -> float | None:
        return max((abs(r - 1.0) for _p, r in self.ratios), default=None)


def calibrate(
    backend: str, first: tuple[str, Sequence[ConfigResult]], second: tuple[str, Sequence[ConfigResult]]
) -> Calibration:
    """A/A ratios of ``backend`` between two runs (module contract); configs in one run only are skipped."""
    base = {
        (c.func_key, c.params): c.median_ms for c in first[1] if c.phase == "forward" and c.backend == backend
    }
    ratios = tuple(
        (c.params, c.median_ms / base[(c.func_key, c.params)])
        for c in second[1]
        if c.phase == "forward" and c.backend == backend and base.get((c.func_key, c.params), 0) > 0
    )
    return Calibration(backend, first[0], second[0], ratios)


def noise_lines(rows: Sequence[RatioRow]) -> list[str]:
    """What a face prints about the matched rows' noise floors (one line, plus the rows it changes)."""
    matched = [r for r in rows if r.status == "OK" and r.ratio is not None]
    if not matched:
        return []
    known = [r for r in matched if r.noise_floor is not None]
    if not known:
        reasons = sorted({r.noise_text.removeprefix("no A/A estimate: ") for r in matched})
        return [f"noise floor: no A/A estimate for any row: {'; '.join(reasons)}"]
    out = [
        f"noise floor: run-to-run spread of each side's medians across the run history (A/A) for "
        f"{len(known)} of {len(matched)} row(s); ratio ±floor"
    ]
    for r in known:
        assert r.ratio is not None and r.noise_floor is not None
        if r.ratio > FLAG_RATIO and r.ratio <= 1.0 + r.noise_floor:
            out.append(
                f"  within noise {r.params}: {r.ratio:.3f}x is inside its ±{r.noise_floor:.1%} "
                f"run-to-run spread: {r.noise_text}"
            )
    return out


def ratio_with_noise(row: RatioRow, ratio_text: str) -> str:
    """``1.140x`` → ``1.140x ±0.8%`` when the row has a noise floor (the faces' ratio cell)."""
    return f"{ratio_text} ±{row.noise_floor:.1%}" if row.noise_floor is not None else ratio_text
