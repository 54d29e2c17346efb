"""History entries: one measured pytest session (one perf log) = one :class:`RunEntry`.

Contract:
- :func:`entry_from_log` turns a parsed :class:`~cutile_workbench.model.PerfLog` plus its provenance into
  a :class:`RunEntry` with one :class:`ConfigResult` per (record, phase) whose median is finite
  and positive; records without one are counted in ``notes``, never stored as numbers.
- ``run_key`` = sha256 of the kernel name and the canonical JSON of the log's records (node id,
  framework, every phase's stats as recorded). It depends on the measurement only: the raw tee and
  the sanitized ``perf_cutile_rs.txt`` of one run, or one log used both as candidate and as cuTile
  baseline, give the same key, so importing twice (or importing what the runner already
  appended) adds nothing.
- The harness name is completed from the records when the provenance leaves it ``unknown``:
  ``workbench`` if every record carries ``capture_source`` (our harness writes it), else
  ``tilegym``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from cutile_workbench.history.provenance import HarnessInfo, Provenance
from cutile_workbench.model import PerfLog, PerfRecord

EntrySource = Literal["live", "import"]


@dataclass(frozen=True)
class ConfigResult:
    """One config of one backend in one run (ms)."""

    func_key: str
    params: str
    backend: str  # the record's framework key, e.g. "cutile-rs", "cutile", "triton"
    phase: str
    nodeid: str
    median_ms: float
    samples_ms: tuple[float, ...] | None = None  # raw per-call samples (workbench harness only)
    nrep: int | None = None
    rel_std_pct: float | None = None
    launches_per_call: int | None = None
    kernel_name: str | None = None
    capture_source: str | None = None  # "cupti" | "kineto" | "events" (workbench harness); None: TileGym's
    capture_check: str | None = None  # the record's capture self-check verdict, when it carries one

    @property
    def series_key(self) -> tuple[str, str, str, str]:
        return (self.func_key, self.params, self.backend, self.phase)


@dataclass(frozen=True)
class RunEntry:
    """One run: provenance + per-config results, with where it was seen."""

    run_key: str
    kernel: str
    role: str  # candidate | baseline_cutile | baseline_triton_tileir (the role it was seen in)
    source: EntrySource
    recorded_at: float | None  # Unix seconds; None when nothing tells
    recorded_at_origin: str  # where recorded_at came from ("provenance", "events.jsonl session_start", ...)
    provenance: Provenance
    configs: tuple[ConfigResult, ...]
    log_path: str
    log_sha256: str
    notes: tuple[str, ...] = ()


def _canonical(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value


def run_key_of(kernel: str, records: Sequence[PerfRecord]) -> str:
    """Content hash of a run's measurements (see module doc)."""
    body = sorted(([r.nodeid, r.framework, _canonical(r.raw)] for r in records), key=lambda x: (x[0], x[1]))
    text = json.dumps({"kernel": kernel, "records": body}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _capture_check(stats: Any) -> str | None:
    value = stats.get("capture_check") if isinstance(stats, dict) else None
    if value is None:
        return None
    if isinstance(value, dict):
        verdict = value.get("verdict")
        return str(verdict) if verdict is not None else json.dumps(value, sort_keys=True, default=str)
    return str(value)


def config_results(log: PerfLog) -> tuple[list[ConfigResult], list[str]]:
    """Stored rows of a log, plus notes on the records that yield none."""
    rows: list[ConfigResult] = []
    notes: list[str] = []
    for rec in log.records:
        for phase, st in rec.phases.items():
            if not (math.isfinite(st.median_ms) and st.median_ms > 0):
                notes.append(f"{rec.nodeid} {phase}: median {st.median_ms!r} not stored")
                continue
            phase_raw = rec.raw.get(phase)
            raw: dict[str, Any] = phase_raw if isinstance(phase_raw, dict) else {}
            source = raw.get("capture_source")
            rows.append(
                ConfigResult(
                    func_key=rec.func_key,
                    params=rec.params,
                    backend=rec.framework,
                    phase=phase,
                    nodeid=rec.nodeid,
                    median_ms=st.median_ms,
                    samples_ms=st.samples_ms,
                    nrep=st.nrep,
                    rel_std_pct=st.rel_std_pct,
                    launches_per_call=st.launches_per_iter,
                    kernel_name=st.kernel_name,
                    capture_source=str(source) if isinstance(source, str) else None,
                    capture_check=_capture_check(raw),
                )
            )
    if log.truncated:
        notes.append(f"{log.path}: last record block was truncated and ignored")
    return rows, notes


def complete_harness(prov: Provenance, rows: Sequence[ConfigResult]) -> Provenance:
    """Name the harness from the records when the provenance could not (see module doc)."""
    if not rows or (prov.harness is not None and prov.harness.name != "unknown"):
        return prov
    ours = all(r.capture_source is not None for r in rows)
    name: Literal["workbench", "tilegym"] = "workbench" if ours else "tilegym"
    sources = sorted({r.capture_source for r in rows if r.capture_source})
    why = (
        f"records carry capture_source ({', '.join(sources)})"
        if ours
        else "records carry no capture_source (TileGym's benchmark_fn_cupti / CUDA events)"
    )
    old = prov.harness or HarnessInfo(name="unknown")
    detail = f"{old.detail}; {why}" if old.detail else why
    return replace(prov, harness=replace(old, name=name, detail=detail))


def entry_from_log(
    kernel: str,
    role: str,
    log: PerfLog,
    provenance: Provenance,
    *,
    source: EntrySource,
    log_sha256: str,
    recorded_at: float | None,
    recorded_at_origin: str,
    notes: Sequence[str] = (),
) -> RunEntry | None:
    """The entry for one log, or None when it holds no storable record."""
    rows, row_notes = config_results(log)
    if not rows:
        return None
    return RunEntry(
        run_key=run_key_of(kernel, log.records),
        kernel=kernel,
        role=role,
        source=source,
        recorded_at=recorded_at,
        recorded_at_origin=recorded_at_origin,
        provenance=complete_harness(provenance, rows),
        configs=tuple(rows),
        log_path=log.path,
        log_sha256=log_sha256,
        notes=tuple(notes) + tuple(row_notes),
    )
