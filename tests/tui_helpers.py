"""Test helpers for the TUI tests: deterministic AppData built from tests/tui_synthetic.py.

SYNTHETIC data, labelled as such in the app header (``source: synthetic``): the rms_norm medians
are real H200 numbers (gpu.md §4); CIs, timestamps, IR texts and the ncu probes' occupancy and
throughput are synthetic (``synthetic.pinned_probes``; the SOL column is the work model at the pinned
medians).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import tui_synthetic as syn

from cutile_workbench.model import PlannedFile, RatioRow, ReportPlan
from cutile_workbench.tui.data import AppData
from cutile_workbench.tui.ir_rows import build_ir_pair


def fake_plan(stage: str, kernel_dir: Path, ok: bool = True) -> ReportPlan:
    """A plan shaped like E's (synthetic content) — used where report_e is not the unit under test."""
    body = "VERDICT: INVESTIGATE\n\n## Performance Results: rms_norm\n\n| Config | ratio |\n|---|---|\n| a | 1.87x |\n"
    return ReportPlan(
        stage=stage,
        kernel="rms_norm",
        kernel_dir=kernel_dir,  # type: ignore[arg-type]
        files=[PlannedFile("reports/performance.md", body)],
        verdict="INVESTIGATE",
        validator_output="$ validate_agent_e.sh rms_norm\nOK\nexit=0"
        if ok
        else "$ validate_agent_e.sh rms_norm\nERROR: no table\nexit=1",
        ok=ok,
    )


def make_data(
    *,
    ir_lines: int = 120,
    runner: Any = None,
    plan_ok: bool = True,
    kernel_dir: Path | None = None,
    writes: list[ReportPlan] | None = None,
) -> AppData:
    table = syn.pinned_table()
    kdir = kernel_dir or Path("/nonexistent/rms_norm")

    def write(plan: ReportPlan) -> Any:
        if writes is not None:
            writes.append(plan)
        from cutile_workbench.artifacts.writer import WriteResult

        return WriteResult(written=[kdir / f.relpath for f in plan.files])

    return AppData(
        kernel="rms_norm",
        source="synthetic",
        gpu="NVIDIA H200, 580.159.04",
        table=table,
        launch_sets=syn.pinned_launch_sets(table),
        candidate_backend="cutile",
        ir_pairs=[
            build_ir_pair(
                "rms_norm",
                syn.ir_text(ir_lines),
                syn.ir_text(ir_lines, generated=True),
                ref_label="reference.mlir",
                gen_label="generated_canon.mlir",
            )
        ],
        plan_report=lambda stage: fake_plan(stage, kdir, plan_ok),
        write_report=write,
        read_existing=lambda plan: {f.relpath: None for f in plan.files},
        runner=runner,
        probes=syn.pinned_probes(),
        sol=syn.pinned_sol(table),
    )


class ScriptedRunner:
    """A LiveRunner that emits given events (optionally waiting for cancel between them)."""

    def __init__(self, events: Sequence[dict[str, Any]], *, block: bool = False) -> None:
        self.events = list(events)
        self.events_source = "events.jsonl"
        self.block = block
        self.calls: list[list[str]] = []

    def __call__(
        self, rows: Sequence[RatioRow], on_event: Callable[[Any], None], cancel: threading.Event
    ) -> int:
        self.calls.append([r.params for r in rows])
        for ev in self.events:
            if cancel.is_set():
                return 130
            on_event(ev)
        if self.block:
            cancel.wait(10)
            return 130 if cancel.is_set() else 0
        return 0


async def highlight_config(pilot: Any, table: Any, params: str) -> None:
    """Move the Ratios table's cursor down to the row of ``params`` (asserts it is there)."""
    for _ in range(len(table.shown_rows)):
        row = table.current_row
        if row is not None and row.params == params:
            break
        await pilot.press("down")
    assert table.current_row is not None and table.current_row.params == params
