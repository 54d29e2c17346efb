"""Where a warm command's CPU goes on a many-core machine: thread pools, imports, our own code.

Run: ``python bench/thread_cost.py --configs 1000 --reps 3 --out bench/data/thread_cost-DATE.json``.

On the 16-core GPU machine a warm ``timeline --config`` at 1,000 configs used 3.16 CPU-s in 1.28 s of
wall (``bench/data/scale_cost-gpu-main-d08c78b.json``): more CPU than wall means other threads. This
bench builds :func:`scale_cost.build_session`'s scaled REAL matmul session, warms the user cache once
per command, then runs each command ``--reps`` times per environment, interleaved: the machine's
default, and the BLAS/OpenMP pools pinned to one thread (``OPENBLAS_NUM_THREADS`` / ``OMP_NUM_THREADS``
/ ``MKL_NUM_THREADS`` = 1), each pool alone, and ``threadpoolctl`` at run time (``--variants``). Per run: the child's CPU seconds (all its threads), wall seconds and the
peak thread count seen in ``/proc/self/status`` at exit. The figures are the medians per cell; the
raw runs are in the JSON. It also records ``python -X importtime`` of the CLI (the slowest imports).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from scale_cost import _CHILD, _pythonpath, build_session, commands  # noqa: E402

PINNED = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
_THREADS = r"""
import atexit
def _threads():
    for ln in open("/proc/self/status"):
        if ln.startswith("Threads:"):
            print("THREADS " + ln.split()[1], flush=True)
atexit.register(_threads)
"""


#: the environments compared, interleaved: name -> (extra environment, code run before the command)
VARIANTS: dict[str, tuple[dict[str, str], str]] = {
    "default": ({}, ""),
    "pinned-1-thread": (PINNED, ""),
    "openblas-1": ({"OPENBLAS_NUM_THREADS": "1"}, ""),
    "omp-1": ({"OMP_NUM_THREADS": "1"}, ""),
    # the pool sized to the cores by hand: since the CLI pins its own pool, this is the old default
    "openblas-cores": ({"OPENBLAS_NUM_THREADS": str(os.cpu_count() or 1)}, ""),
    # at run time, no environment variable (so no child process would inherit it)
    "threadpoolctl-1": (
        {},
        "import numpy\nfrom threadpoolctl import threadpool_limits\nthreadpool_limits(1)\n",
    ),
}


def run_one(spec: dict, cache: Path, extra_env: dict[str, str], prelude: str = "") -> dict:
    env = {**os.environ, "PYTHONPATH": _pythonpath(REPO), "CUTILE_WORKBENCH_CACHE": str(cache), **extra_env}
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _THREADS + prelude + _CHILD, json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=1800,
        check=False,
    )
    wall = time.perf_counter() - t0
    line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("BENCH ")), None)
    threads = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("THREADS ")), None)
    got: dict = json.loads(line[6:]) if line else {"failed": (proc.stderr or proc.stdout)[-600:]}
    got["wall_s"] = wall
    got["threads_at_exit"] = int(threads.split()[1]) if threads else None
    return got


def importtime() -> list[tuple[int, str]]:
    """The 15 slowest cumulative imports of ``cutile_workbench.cli`` (microseconds, module)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import cutile_workbench.cli"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        check=False,
    )
    rows: list[tuple[int, str]] = []
    for ln in proc.stderr.splitlines():
        if ln.startswith("import time:") and "|" in ln:
            parts = [p.strip() for p in ln[len("import time:") :].split("|")]
            if parts[1].isdigit():
                rows.append((int(parts[1]), parts[2]))
    return sorted(rows, reverse=True)[:15]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="table,timeline,report-f")
    ap.add_argument("--box", default="unnamed machine")
    ap.add_argument("--variants", default="default,pinned-1-thread", help=f"of {', '.join(VARIANTS)}")
    ap.add_argument("--out", type=Path)
    ns = ap.parse_args()
    names = ns.only.split(",")
    envs = {v: VARIANTS[v] for v in ns.variants.split(",")}
    result: dict = {
        "box": ns.box,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "loadavg_before": os.getloadavg(),
        "configs": ns.configs,
        "importtime_top_us": importtime(),
        "runs": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        kdir, config = build_session(Path(tmp), ns.configs)
        specs = commands(kdir, config)
        for name in names:
            cache = Path(tmp) / f"cache-{name}"
            shutil.rmtree(cache, ignore_errors=True)
            run_one(specs[name], cache, {})  # fills the user cache: every run below is warm
            for _ in range(ns.reps):
                for env_name, (extra, prelude) in envs.items():
                    result["runs"].setdefault(name, {}).setdefault(env_name, []).append(
                        run_one(specs[name], cache, extra, prelude)
                    )
    result["loadavg_after"] = os.getloadavg()
    summary: dict = {}
    for name, per_env in result["runs"].items():
        for env_name, runs in per_env.items():
            ok = [r for r in runs if "cpu_s" in r]
            summary.setdefault(name, {})[env_name] = {
                "cpu_s": statistics.median(r["cpu_s"] for r in ok) if ok else None,
                "wall_s": statistics.median(r["wall_s"] for r in ok) if ok else None,
                "threads_at_exit": max((r["threads_at_exit"] or 0) for r in ok) if ok else None,
            }
            s = summary[name][env_name]
            print(
                f"{name:10} {env_name:16} cpu {s['cpu_s']} s  wall {s['wall_s']} s  threads {s['threads_at_exit']}"
            )
    result["summary"] = summary
    for us, mod in result["importtime_top_us"][:8]:
        print(f"import {us / 1e6:6.3f} s  {mod}")
    if ns.out:
        ns.out.parent.mkdir(parents=True, exist_ok=True)
        ns.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
