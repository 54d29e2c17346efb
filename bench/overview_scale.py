"""Time ``overview`` over an out root of N kernel dirs built from the REAL recorded sessions.

Usage: python bench/overview_scale.py --n 200 --out bench/results/overview_scale.json [--runs 5]

The out root is built once in a temp dir: kernel dir i is a copy of one of the recorded sessions
(profiles/tilegym/session/{matmul,silu_and_mul}, profiles/rms_norm/session/{rms_norm,
rms_norm_hotpath}, cutile_workbench/profiles/softmax/session/softmax; round robin) named ``<session>_<i>``. Two
states are timed as whole processes (``python -m cutile_workbench overview --json``): ``logs`` (no
report written: every geomean computed from the perf logs) and ``md`` (``report e --yes`` written in
every dir first: E's current performance.md read). Two broken dirs (a garbage candidate log, an
empty ``reports/``) ride along in both. Medians/min/max of ``--runs`` runs, wall seconds and peak
RSS (``resource.getrusage`` of the children), in one JSON file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SESSIONS = [
    ROOT / "cutile_workbench/profiles/tilegym/session/matmul",
    ROOT / "cutile_workbench/profiles/tilegym/session/silu_and_mul",
    ROOT / "cutile_workbench/profiles/rms_norm/session/rms_norm",
    ROOT / "cutile_workbench/profiles/rms_norm/session/rms_norm_hotpath",
    ROOT / "cutile_workbench/profiles/softmax/session/softmax",
]


def build(out_root: Path, n: int) -> None:
    for i in range(n):
        src = SESSIONS[i % len(SESSIONS)]
        shutil.copytree(
            src, out_root / f"{src.name}_{i:03d}", ignore=shutil.ignore_patterns("launches.json.gz")
        )
        # the kernel dir's name is the kernel: rename the per-kernel files that carry the session's own name
        kdir = out_root / f"{src.name}_{i:03d}"
        for p in kdir.rglob(f"*{src.name}*"):
            p.rename(p.with_name(p.name.replace(src.name, kdir.name)))
    (out_root / "zz_broken").mkdir()
    (out_root / "zz_broken" / "perf_cutile_rs.txt").write_text("garbage\n")
    (out_root / "zz_half" / "reports").mkdir(parents=True)


def run_once(out_root: Path, cache: Path) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUTILE_WORKBENCH_CACHE": str(cache)}
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "cutile_workbench", "overview", "--out-root", str(out_root), "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"overview failed: {proc.stderr}")
    doc = json.loads(proc.stdout)
    assert doc["totals"]["kernels"] == len(list(p for p in out_root.iterdir())), doc["totals"]
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cold-runs", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    result: dict[str, object] = {
        "n_kernels": a.n,
        "runs": a.runs,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }
    with tempfile.TemporaryDirectory() as tmp:
        out_root = Path(tmp) / "out"
        out_root.mkdir()
        build(out_root, a.n)
        caches = Path(tmp) / "caches"

        def timed(state: str) -> None:
            # cold: an empty row cache (every row computed: E's table from the logs, or performance.md
            # read); warm: the same cache again (rows whose files did not change are reused)
            cold = [run_once(out_root, caches / f"{state}-cold-{i}")[0] for i in range(a.cold_runs)]
            run_once(out_root, caches / state)
            warm = [run_once(out_root, caches / state)[0] for _ in range(a.runs)]
            result[state] = {
                "cold_wall_s": cold,
                "cold_median_s": statistics.median(cold),
                "warm_wall_s": warm,
                "warm_median_s": statistics.median(warm),
            }

        run_once(out_root, caches / "bytecode")  # bytecode and file caches warm
        timed("logs")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        for kdir in sorted(out_root.iterdir()):
            if not kdir.name.startswith("zz_"):
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "cutile_workbench",
                        "report",
                        "e",
                        kdir.name,
                        "--out-root",
                        str(out_root),
                        "--yes",
                    ],
                    capture_output=True,
                    env=env,
                    cwd=ROOT,
                    check=False,
                )
        timed("md")
        result["peak_rss_mib_children"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k in ("logs", "md")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
