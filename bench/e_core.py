"""E core speed, side by side in one run (CPU only; no GPU needed).

1. Bootstrap of a ratio table (``cutile_workbench.stages.e.stats``): the numpy-vectorised order-statistic median
   draw used in production vs the earlier pure-Python one (``tests/stats_reference.bootstrap``, the
   code before issue 26), same rows (n_boot=2000), and the CI agreement.
2. Validators: the in-process twins vs the real TileGym shell scripts on the same kernel dir
   (needs ``.fetched/TileGym`` or ``--tilegym``; skipped otherwise).
3. Guarded writer: one ``write_plan`` of an E report set (5 files, fsync + journal + backup).

Usage: ``python bench/e_core.py [--rows 10] [--samples 385] [--tilegym DIR]``. Samples are
SYNTHETIC (gaussian noise around the REAL H200 medians of gpu.md §4); timings are what matter.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from cutile_workbench.artifacts.writer import write_plan  # noqa: E402
from cutile_workbench.model import PerfLog, PerfRecord, PhaseStats, PlannedFile, ReportPlan  # noqa: E402
from cutile_workbench.stages.e import stats  # noqa: E402
from cutile_workbench.stages.e.validators import validate_agent_e  # noqa: E402

REAL_MEDIANS_MS = [
    (0.00701, 0.01014),
    (0.08278, 0.04416),
    (0.07466, 0.07624),
    (0.2781, 0.348959),
    (0.5391, 0.5481),
]


def logs(rows: int, n: int) -> tuple[PerfLog, PerfLog]:
    rng = random.Random(0)
    cand, base = PerfLog("cand"), PerfLog("base")
    for i in range(rows):
        c, b = REAL_MEDIANS_MS[i % len(REAL_MEDIANS_MS)]
        cs = tuple(c * (1 + rng.gauss(0, 0.02)) for _ in range(n))
        bs = tuple(b * (1 + rng.gauss(0, 0.02)) for _ in range(n))
        for lg, fw, med, s in ((cand, "cutile-rs", c, cs), (base, "cutile", b, bs)):
            lg.records.append(
                PerfRecord(
                    f"t::f[{fw}-p{i}]",
                    "t::f",
                    fw,
                    f"p{i}",
                    {"forward": PhaseStats(median_ms=med, samples_ms=s)},
                )
            )
    return cand, base


def timed(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10)
    ap.add_argument("--samples", type=int, default=385)
    ap.add_argument("--tilegym", type=Path, default=ROOT / ".fetched" / "TileGym")
    a = ap.parse_args()
    cand, base = logs(a.rows, a.samples)
    fast = timed(lambda: stats.build_ratio_table("k", cand, {"cutile": base}, None, n_boot=2000), 1)
    t_fast = stats.build_ratio_table("k", cand, {"cutile": base}, None, n_boot=2000)
    import stats_reference

    original = stats._bootstrap
    stats._bootstrap = stats_reference.bootstrap  # type: ignore[assignment]
    try:
        slow = timed(lambda: stats.build_ratio_table("k", cand, {"cutile": base}, None, n_boot=2000), 1)
        t_slow = stats.build_ratio_table("k", cand, {"cutile": base}, None, n_boot=2000)
    finally:
        stats._bootstrap = original
    assert t_fast.geomean_ci and t_slow.geomean_ci
    print(
        f"bootstrap rows={a.rows} samples={a.samples} n_boot=2000: numpy {fast:.3f}s, "
        f"pure Python (before) {slow:.3f}s, speed-up {slow / fast:.1f}x"
    )
    print(
        f"  geomean CI numpy {t_fast.geomean_ci[0]:.4f}-{t_fast.geomean_ci[1]:.4f} vs before "
        f"{t_slow.geomean_ci[0]:.4f}-{t_slow.geomean_ci[1]:.4f}"
    )

    with tempfile.TemporaryDirectory() as tmp:
        k = Path(tmp) / "k"
        (k / "reports/agent_logs").mkdir(parents=True)
        log_text = (
            "t::f[cutile_rs-a] PASSED\n-------------------- Performance Test Results --------------------\n"
            "forward: median_ms=0.1\n" * 200
        )
        files = [
            PlannedFile(
                "reports/performance.md", "VERDICT: DONE\n\ngeomean_ratio=0.9989\n" + "| r |\n" * 200
            ),
            PlannedFile("perf_cutile_rs.txt", log_text),
            PlannedFile("reports/agent_logs/perf_investigation.log", ""),
            PlannedFile("reports/agent_logs/agent_e.md", "# Agent E log\n" * 50),
            PlannedFile("reports/agent_e.md", "# Agent E report\n" * 20),
        ]
        (k / "baseline_perf_cutile.txt").write_text(log_text)
        plan = ReportPlan("E", "k", k, files, "DONE", "", True)
        w = timed(lambda: write_plan(plan), 5)
        print(f"write_plan (5 files, lock + fsync + journal + backup): {w * 1000:.1f} ms")
        inproc = timed(lambda: validate_agent_e(k), 5)
        script = (
            a.tilegym / "skills/tilegym-converting-cutile-triton-to-cutile-rs/scripts/validate_agent_e.sh"
        )
        if script.is_file():
            env = {"PATH": "/usr/bin:/bin", "CUTILE_KERNEL_OUT_ROOT": tmp, "LC_ALL": "C.UTF-8"}
            real = timed(
                lambda: subprocess.run(["bash", str(script), "k"], env=env, capture_output=True, check=False),
                5,
            )
            print(
                f"validate_agent_e: in-process {inproc * 1000:.2f} ms, real script {real * 1000:.1f} ms "
                f"({real / inproc:.0f}x)"
            )
        else:
            print(f"validate_agent_e: in-process {inproc * 1000:.2f} ms (real script absent)")


if __name__ == "__main__":
    main()
