"""Wall time of the same N configs: one process (today's ``run``) vs 1 shard vs 2 shards (``run --gpus``).

Every variant is the real CLI (``cutile-workbench run … [--gpus G]``) in a fresh out root, timed
from outside, so it includes collection, the shard workers' start-up and the merge — what a user
waits for. Variants (``--variants``, comma list):
  single   ``run`` without ``--gpus`` (the baseline: today's single process)
  1gpu     ``--gpus 0``          one shard
  2gpu     ``--gpus 0,1``        two shards, two GPUs (needs two GPUs: the ``nvidia-h200-x2`` kind)
  2on1     ``--gpus 0,0``        two shards on ONE GPU — labelled as such: their timings interfere;
                                 it measures the scale-out plumbing, not a speed-up
A discarded warm-up run of the first variant fills the Triton/cuTile caches first; then each round
runs every variant once, in the given order, ``--rounds`` times. Per run it also checks the merged
layout: number of configs with a record and E's geomean (``table --json``), so a faster run that
lost configs cannot pass for a speed-up.

Usage (GPU machine):
  python bench/scaleout_gpus.py --out scaleout_gpus.json --variants single,1gpu,2gpu -- \\
      silu_and_mul --tilegym $TILEGYM_PATH -b cutile-rs -b cutile [other run flags]
Everything after ``--`` is passed to ``cutile-workbench run`` (minus ``--out-root``/``--gpus``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {"single": [], "1gpu": ["--gpus", "0"], "2gpu": ["--gpus", "0,1"], "2on1": ["--gpus", "0,0"]}
LABELS = {
    "single": "one process (run)",
    "1gpu": "1 shard, GPU 0",
    "2gpu": "2 shards, GPUs 0 and 1",
    "2on1": "2 shards on ONE GPU (labelled: timings interfere)",
}


def cli() -> list[str]:
    exe = Path(sys.executable).with_name("cutile-workbench")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "cutile_workbench"]


def one_run(variant: str, run_args: list[str], work: Path) -> dict[str, Any]:
    out_root = work / f"{variant}-{time.monotonic_ns()}"
    argv = [*cli(), "run", *run_args, "--out-root", str(out_root), *VARIANTS[variant]]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    kernel = run_args[0]
    table = subprocess.run(
        [*cli(), "table", kernel, "--out-root", str(out_root), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    doc: dict[str, Any] = {}
    try:
        doc = json.loads(table.stdout)
    except ValueError:
        pass
    rows = doc.get("rows") or []
    result = {
        "variant": variant,
        "label": LABELS[variant],
        "wall_s": round(wall, 2),
        "rc": proc.returncode,
        "ok_rows": sum(1 for r in rows if r.get("status") == "OK"),
        "rows": len(rows),
        "geomean_ratio": doc.get("geomean_ratio"),
        "stdout_tail": proc.stdout.splitlines()[-6:],
        "stderr_tail": proc.stderr.splitlines()[-6:],
    }
    shutil.rmtree(out_root, ignore_errors=True)
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--variants", default="single,1gpu,2gpu")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("run_args", nargs=argparse.REMAINDER, help="-- <kernel> [cutile-workbench run flags]")
    args = p.parse_args()
    run_args = [a for a in args.run_args if a != "--"]
    if not run_args:
        p.error("give the run arguments after --, e.g. -- rms_norm --tilegym DIR -k EXPR")
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        p.error(f"unknown variant(s) {unknown}; known: {', '.join(VARIANTS)}")
    work = Path(tempfile.mkdtemp(prefix="scaleout-bench-"))
    env_note = {
        k: os.environ[k] for k in ("CUDA_VISIBLE_DEVICES", "CUPTI", "WARMUP", "REP") if k in os.environ
    }
    smi = (
        subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        if shutil.which("nvidia-smi")
        else None
    )
    report: dict[str, Any] = {
        "run_args": run_args,
        "env": env_note,
        "gpus": smi.stdout.splitlines() if smi else [],
        "warmup": one_run(variants[0], run_args, work),
        "runs": [],
    }
    for _ in range(args.rounds):
        for v in variants:
            r = one_run(v, run_args, work)
            report["runs"].append(r)
            print(
                f"{r['label']:<50} {r['wall_s']:8.2f} s  rc={r['rc']}  rows OK {r['ok_rows']}/{r['rows']}  "
                f"geomean {r['geomean_ratio']}",
                flush=True,
            )
    summary = {}
    for v in variants:
        walls = [r["wall_s"] for r in report["runs"] if r["variant"] == v]
        summary[v] = {"label": LABELS[v], "wall_s": walls, "best_s": min(walls)}
    if "1gpu" in summary and "2gpu" in summary:
        summary["speedup_2gpu_vs_1gpu"] = round(summary["1gpu"]["best_s"] / summary["2gpu"]["best_s"], 3)
    if "single" in summary and "1gpu" in summary:
        summary["overhead_1gpu_vs_single_s"] = round(
            summary["1gpu"]["best_s"] - summary["single"]["best_s"], 2
        )
    report["summary"] = summary
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(json.dumps(summary, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
