"""What a run costs under each harness, with warm caches and alternating order (issue 22).

The earlier comparison (BENCHMARKS §1, "cost") timed one run per harness, the workbench's first:
on a fresh machine cuTile's on-disk compile cache is cold, so whichever harness ran first paid the
JIT compiles. This script separates the two costs:

- ``cold``: the very first run of the call (``--cold-harness``, default the workbench harness),
  reported on its own: it is real for a user's first run and for every fresh node of a scale-out.
  Run this step first on a fresh machine, or the number is not a cold start (the JSON records
  whether any earlier step ran, from ``--fresh``).
- ``warm``: ``--rounds`` rounds after it, each running both harnesses, the order alternating
  (round 0 workbench → TileGym, round 1 TileGym → workbench, …) so that neither harness always
  inherits the other's warmed caches.

Each run is the real CLI (``cutile-workbench run <args> [--tilegym-harness]``) in a fresh out root,
timed from outside; per run it also records each role's ``duration_s`` from ``session.json``
(that backend's pytest child) and the configs with a record, so a faster run that lost configs
shows. GPU-free to test: ``--suite``/``--skip-gpu-check`` run arguments work on the CPU box.

Usage (GPU machine; everything after ``--`` goes to ``cutile-workbench run`` minus ``--out-root``):
  python bench/harness_order.py --rounds 3 --fresh --out harness_order.json -- \\
      matmul --tilegym $TG -b cutile-rs -b cutile -k "$MM_K" --timeout 300
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HARNESS_FLAGS = {"workbench": [], "tilegym": ["--tilegym-harness"]}


def cli() -> list[str]:
    exe = Path(sys.executable).with_name("cutile-workbench")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "cutile_workbench"]


def one_run(harness: str, run_args: list[str], work: Path, label: str) -> dict[str, Any]:
    out_root = work / f"{label}-{harness}-{time.monotonic_ns()}"
    argv = [*cli(), "run", *run_args, "--out-root", str(out_root), *HARNESS_FLAGS[harness]]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    kernel = run_args[0]
    roles: dict[str, Any] = {}
    session = out_root / kernel / "workbench" / "session.json"
    if session.is_file():
        runs = json.loads(session.read_text()).get("runs") or {}
        for role, meta in runs.items():
            if isinstance(meta, dict):
                roles[role] = {
                    "backend": meta.get("backend_token"),
                    "harness": meta.get("harness"),
                    "duration_s": meta.get("duration_s"),
                    "rc": meta.get("rc"),
                }
    records = 0
    events = out_root / kernel / "workbench" / "events.jsonl"
    if events.is_file():
        records = sum(
            1
            for ln in events.read_text().splitlines()
            if '"event": "record"' in ln or '"event":"record"' in ln
        )
    return {
        "label": label,
        "harness": harness,
        "wall_s": round(wall, 2),
        "rc": proc.returncode,
        "records": records,
        "roles": roles,
        "stderr_tail": proc.stderr[-400:] if proc.returncode else "",
    }


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for harness in HARNESS_FLAGS:
        warm = [r for r in runs if r["label"] != "cold" and r["harness"] == harness and r["rc"] in (0, 1)]
        if not warm:
            continue
        per_role: dict[str, list[float]] = {}
        for r in warm:
            for role, meta in r["roles"].items():
                if isinstance(meta.get("duration_s"), (int, float)):
                    per_role.setdefault(f"{role} ({meta.get('backend')})", []).append(meta["duration_s"])
        out[harness] = {
            "warm_runs": len(warm),
            "wall_s": [r["wall_s"] for r in warm],
            "wall_median_s": round(statistics.median(r["wall_s"] for r in warm), 2),
            "role_duration_s": {k: [round(x, 1) for x in v] for k, v in per_role.items()},
        }
    if "workbench" in out and "tilegym" in out:
        out["warm_wall_ratio_workbench_over_tilegym"] = round(
            out["workbench"]["wall_median_s"] / out["tilegym"]["wall_median_s"], 3
        )
    cold = [r for r in runs if r["label"] == "cold"]
    if cold:
        out["cold"] = {"harness": cold[0]["harness"], "wall_s": cold[0]["wall_s"], "rc": cold[0]["rc"]}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cold-harness", choices=sorted(HARNESS_FLAGS), default="workbench")
    ap.add_argument("--no-cold", action="store_true", help="no separate first run (caches known warm)")
    ap.add_argument("--fresh", action="store_true", help="assert this is the first GPU work on the machine")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("run_args", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    run_args = args.run_args[1:] if args.run_args[:1] == ["--"] else args.run_args
    if not run_args:
        print("give the run arguments after --", file=sys.stderr)
        return 2
    started = time.time()
    runs: list[dict[str, Any]] = []
    work = Path(tempfile.mkdtemp(prefix="harness-order-"))
    try:
        if not args.no_cold:
            runs.append(one_run(args.cold_harness, run_args, work, "cold"))
            print(json.dumps(runs[-1]), flush=True)
        for r in range(args.rounds):
            order = ["workbench", "tilegym"] if r % 2 == 0 else ["tilegym", "workbench"]
            for harness in order:
                runs.append(one_run(harness, run_args, work, f"round{r}"))
                print(json.dumps(runs[-1]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = summarize(runs)
    doc = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "run_args": run_args,
        "fresh_machine_claimed": args.fresh,
        "rounds": args.rounds,
        "runs": runs,
        "summary": summary,
    }
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return 0 if all(r["rc"] in (0, 1) for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
