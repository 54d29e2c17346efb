"""The History screen's rows: the history service's values as ``cutile_workbench.tui.widgets.history_view`` rows.

Contract: pure conversion (no I/O). :func:`series_rows` gives one :class:`~cutile_workbench.tui.widgets.history_view.SeriesRow`
per series of one config, candidate first (as ``KernelHistory.series_for`` orders them); each
run's change, its reason, the difference of its conditions from the previous run, and every
provenance fact the service states, in the service's words.
"""

from __future__ import annotations

from dataclasses import replace

from cutile_workbench.services.history import HistoryPoint, HistorySeries, KernelHistory
from cutile_workbench.tui.widgets.history_view import RunRow, SeriesRow


def run_row(point: HistoryPoint) -> RunRow:
    run, change = point.run, point.change
    origin = "appended by the runner" if run.source == "live" else "imported"
    facts = (*run.facts, ("source", f"{origin} ({', '.join(run.roles) or 'no role'})"))
    row = RunRow(
        key=run.run_key,
        when=run.when_text.removesuffix(" UTC"),
        median_ms=point.median_ms,
        n_samples=point.n_samples,
        gpu=run.gpu,
        driver=run.driver,
        harness=run.harness,
        clocks=run.clocks.removesuffix(" MHz"),
        throttling=run.throttling,
        facts=facts,
    )
    if change is None:
        return row
    return replace(
        row,
        change=change.kind,
        symbol=change.symbol,
        ratio=change.ratio,
        ci=change.ci,
        p_value=change.p_value,
        reason=change.reason,
        condition_flags=change.condition_flags,
        notes=change.notes,
    )


def series_row(series: HistorySeries) -> SeriesRow:
    return SeriesRow(
        key=f"{series.func_key}\x1f{series.params}\x1f{series.backend}\x1f{series.phase}",
        label=series.label,
        role="candidate" if series.is_candidate else "baseline",
        trend=series.trend,
        runs=tuple(run_row(p) for p in series.points),
    )


def series_rows(history: KernelHistory, params: str, func_key: str | None = None) -> list[SeriesRow]:
    """The rows of one config (all its func keys when ``func_key`` is None or unknown)."""
    chosen = history.series_for(params, func_key) or history.series_for(params)
    return [series_row(s) for s in chosen]
