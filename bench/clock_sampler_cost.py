"""Cost of the harness's NVML clock readings (issue 18 §3) on the GPU: per reading, and on the medians.

What it measures, in one process per run (CUPTI session + ``sample_loop``, as ``benchmark`` does):
1. the wall time of one ``ClockSampler.read()`` (SM clock, reason mask, two violation counters),
   averaged over ``--reads`` readings, and of opening + closing a sampler (once per config);
2. per case, ``--batches`` pairs of ``--nrep``-sample batches, readings ON and OFF alternating
   (ON first in even pairs, OFF first in odd ones, so drift hits both): each batch's lower median
   (ms) and loop wall time; reported as the median over pairs of (ON/OFF - 1) in %, plus the
   exposure the ON batches recorded.
Writes one JSON (``--out``) and prints a short table. Needs torch + CUDA + cupti-python + pynvml.

Usage: ``python bench/clock_sampler_cost.py --out clock_sampler_cost.json [--nrep 200 --batches 6]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere: import workbench/profiles from the repo
    sys.path.insert(0, str(ROOT))
CASES = [
    {
        "factory": "cutile_workbench.profiles.rms_norm.backends:factory",
        "kwargs": {"framework": "triton", "m": 4096, "n": 1024},
    },
    {
        "factory": "cutile_workbench.profiles.rms_norm.backends:factory",
        "kwargs": {"framework": "cutile", "m": 8192, "n": 8192},
    },
]


def _lower_median(xs: list[float]) -> float:
    s = sorted(xs)
    return s[(len(s) - 1) // 2]


def _batch(torch: Any, fn: Any, nrep: int, cache: Any, sampler: Any) -> dict[str, Any]:
    from cutile_workbench.run.capture.harness import sample_loop, settle_default
    from cutile_workbench.run.capture.session import CuptiSession

    session = CuptiSession("bench")
    with session:
        fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        sample_loop(torch, session, [fn], nrep, cache, settle_default(), sampler=sampler)
        loop_s = time.perf_counter() - t0
    samples = [c.device_time_ns / 1e6 for c in session.captures()]
    out: dict[str, Any] = {"median_ms": _lower_median(samples), "loop_s": loop_s}
    if sampler is not None:
        out["clocks"] = sampler.summary(list(range(len(session.windows))))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--nrep", type=int, default=200)
    ap.add_argument("--batches", type=int, default=6, help="ON/OFF pairs per case")
    ap.add_argument("--reads", type=int, default=2000)
    args = ap.parse_args()
    import torch

    from cutile_workbench.run.capture.clocks import open_sampler
    from cutile_workbench.run.capture.kineto_child import warmed_up

    torch.cuda.init()
    t0 = time.perf_counter()
    for _ in range(10):  # nvmlInit + handle + nvmlShutdown: paid once per benchmark() call (per config)
        open_sampler(torch).close()
    open_close_ms = (time.perf_counter() - t0) / 10 * 1e3
    probe = open_sampler(torch)
    if probe.unavailable:
        print(f"NVML unavailable: {probe.unavailable}")
        return 2
    t0 = time.perf_counter()
    for _ in range(args.reads):
        probe.read()
    read_us = (time.perf_counter() - t0) / args.reads * 1e6
    probe.close()
    report: dict[str, Any] = {
        "read_us": read_us,
        "open_close_ms": open_close_ms,
        "reads": args.reads,
        "nrep": args.nrep,
        "pairs": args.batches,
        "gpu": torch.cuda.get_device_name(),
        "cases": [],
    }
    for case in CASES:
        fn = warmed_up(torch, case["factory"], case["kwargs"])
        cache = torch.empty(int(256e6 // 4), dtype=torch.int, device="cuda")
        pairs = []
        for i in range(args.batches):
            row: dict[str, Any] = {}
            for which in ("on", "off") if i % 2 == 0 else ("off", "on"):
                sampler = open_sampler(torch) if which == "on" else None
                row[which] = _batch(torch, fn, args.nrep, cache, sampler)
                if sampler is not None:
                    sampler.close()
            pairs.append(row)
        median_pct = statistics.median(
            (p["on"]["median_ms"] / p["off"]["median_ms"] - 1) * 100 for p in pairs
        )
        wall_pct = statistics.median((p["on"]["loop_s"] / p["off"]["loop_s"] - 1) * 100 for p in pairs)
        kw = case["kwargs"]
        report["cases"].append(
            {
                "case": f"{kw['framework']} {kw['m']}x{kw['n']}",
                "pairs": pairs,
                "median_diff_pct": median_pct,
                "loop_wall_diff_pct": wall_pct,
            }
        )
        del cache
    Path(args.out).write_text(json.dumps(report, indent=1))
    print(
        f"one reading (4 NVML queries): {read_us:.1f} us; open+close per config {open_close_ms:.2f} ms "
        f"on {report['gpu']}"
    )
    for c in report["cases"]:
        on = [p["on"]["median_ms"] * 1e3 for p in c["pairs"]]
        print(
            f"{c['case']:<22} median ON-vs-OFF {c['median_diff_pct']:+.2f}%  loop wall {c['loop_wall_diff_pct']:+.1f}%  "
            f"ON medians us {min(on):.2f}-{max(on):.2f}  last exposure {c['pairs'][-1]['on']['clocks']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
