"""Paths of the TileGym artifact layout under ``$CUTILE_KERNEL_OUT_ROOT/{kernel}/`` (contract §1.2).

Contract: the only place that spells artifact file names. ``workbench/`` (a sub-dir of the kernel
dir) holds the workbench's own evidence — per-launch captures, event streams, session metadata —
which TileGym's validators never read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class KernelPaths:
    """Every path E and F read or write, for one kernel dir."""

    root: Path  # $CUTILE_KERNEL_OUT_ROOT/{kernel}
    kernel: str

    @classmethod
    def under(cls, out_root: Path, kernel: str) -> KernelPaths:
        return cls(root=Path(out_root) / kernel, kernel=kernel)

    # --- inputs from A/B/C/D
    @property
    def reference_dir(self) -> Path:
        return self.root / "reference"

    @property
    def analysis_json(self) -> Path:
        return self.reference_dir / "analysis.json"

    @property
    def generated_dir(self) -> Path:
        return self.root / "generated"

    @property
    def baseline_cutile(self) -> Path:
        return self.root / "baseline_perf_cutile.txt"

    @property
    def baseline_triton_tileir(self) -> Path:
        return self.root / "baseline_perf_triton_tileir.txt"

    @property
    def baseline_winner(self) -> Path:
        return self.root / "baseline_perf.txt"

    # --- E outputs
    @property
    def perf_cutile_rs(self) -> Path:
        return self.root / "perf_cutile_rs.txt"

    def perf_cutile_rs_variant(self, variant: str) -> Path:
        return self.root / f"perf_cutile_rs_{variant}.txt"

    @property
    def reports_dir(self) -> Path:
        return self.root / "reports"

    @property
    def agent_logs_dir(self) -> Path:
        return self.reports_dir / "agent_logs"

    @property
    def performance_md(self) -> Path:
        return self.reports_dir / "performance.md"

    @property
    def perf_full_log(self) -> Path:
        return self.agent_logs_dir / "perf_cutile_rs.full.txt"

    def perf_full_log_variant(self, variant: str) -> Path:
        """Raw pytest tee of one variant's E run (multi-variant kernels)."""
        return self.agent_logs_dir / f"perf_cutile_rs_{variant}.full.txt"

    @property
    def perf_investigation_log(self) -> Path:
        return self.agent_logs_dir / "perf_investigation.log"

    @property
    def agent_e_log(self) -> Path:
        return self.agent_logs_dir / "agent_e.md"

    @property
    def agent_e_report(self) -> Path:
        return self.reports_dir / "agent_e.md"

    # --- F outputs
    def perf_investigation_md(self, scope: str) -> Path:
        return self.reports_dir / f"perf_investigation_{scope}.md"

    @property
    def agent_f_report(self) -> Path:
        return self.reports_dir / "agent_f.md"

    @property
    def agent_f_log(self) -> Path:
        return self.agent_logs_dir / "agent_f.md"

    @property
    def blocked_marker(self) -> Path:
        return self.root / "SKILL_METHODOLOGY_BLOCKED.txt"

    # --- workbench-owned evidence (never read by TileGym validators)
    @property
    def workbench_dir(self) -> Path:
        return self.root / "workbench"

    @property
    def launches_json(self) -> Path:
        """Per-launch captures: gzip JSON ``{"version":1,"sets":[LaunchSet...]}``."""
        return self.workbench_dir / "launches.json.gz"

    @property
    def events_jsonl(self) -> Path:
        return self.workbench_dir / "events.jsonl"

    @property
    def session_json(self) -> Path:
        """Run metadata: GPU, driver, versions, command, date, candidate/baseline backends."""
        return self.workbench_dir / "session.json"

    @property
    def tileir_dir(self) -> Path:
        """Raw ``CUDA_TILE_DUMP_TILEIR`` dumps of a run (reference IR evidence)."""
        return self.workbench_dir / "tileir"
