"""Cost of launch attribution (issue 32): timed medians with and without it, alternated in one process.

For each case (a real TileGym op on the cutile-rs backend, from the TileGym tree on PYTHONPATH), the
workbench harness (``run.capture.harness.benchmark``) runs ``--rounds`` times with
``WORKBENCH_ATTRIBUTION=1`` and ``=0``, alternating (on, off, on, off, ...), so drift hits both.
Per mode: the medians of the timed samples (ms), the harness's wall time, and what the attributed
call recorded (activities, with a stack). The timed samples never include the attributed call; this
shows that they do not move. Writes one JSON (``--out``) and prints a table.

Usage (GPU machine, TileGym tree with the cutile-rs library in place):
    python bench/attribution_cost.py --out attribution_cost.json [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _cases(torch: Any) -> list[tuple[str, Any]]:
    import tilegym

    tilegym.set_backend("cutile-rs")
    x = torch.randn((64, 1024, 2 * 4096), device="cuda", dtype=torch.float16)
    a = torch.rand((2, 2048, 2048), device="cuda", dtype=torch.float16)
    b = torch.rand((2, 2048, 2048), device="cuda", dtype=torch.float16)
    return [
        ("silu_and_mul 64-1024-4096 fp16", lambda: tilegym.ops.silu_and_mul(x)),
        ("bmm 2-2048-2048-2048 fp16", lambda: tilegym.ops.bmm(a, b)),
    ]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import torch

    from cutile_workbench.run.capture import tilegym_swap
    from cutile_workbench.run.capture.harness import benchmark

    # as --workbench-harness does: TileGym's cutile-rs autotuner times its configs through the
    # workbench capture instead of torch.profiler (one CUPTI client per process: Kineto's TSC clock
    # callback would scale every duration 2.1x and refuse the capture)
    tilegym_swap.install()

    out: dict[str, Any] = {"rounds": args.rounds, "cases": {}}
    for name, fn in _cases(torch):
        rows: dict[str, list[dict[str, Any]]] = {"on": [], "off": []}
        for _ in range(args.rounds):
            for mode in ("on", "off"):
                os.environ["WORKBENCH_ATTRIBUTION"] = "1" if mode == "on" else "0"
                t0 = time.perf_counter()
                res = benchmark(fn, backend="cutile-rs", publish=False)
                wall = time.perf_counter() - t0
                rows[mode].append(
                    {
                        "median_ms": res["median"],
                        "nrep": res["nrep"],
                        "launches_per_call": res["launches_per_call"],
                        "wall_s": wall,
                        "attribution": res.get("capture", {}).get("attribution"),
                    }
                )
        summary = {
            mode: {
                "median_of_medians_ms": statistics.median(r["median_ms"] for r in rs),
                "medians_ms": [r["median_ms"] for r in rs],
                "wall_s_median": statistics.median(r["wall_s"] for r in rs),
            }
            for mode, rs in rows.items()
        }
        on, off = summary["on"]["median_of_medians_ms"], summary["off"]["median_of_medians_ms"]
        summary["on_vs_off_pct"] = (on / off - 1) * 100 if off else None
        out["cases"][name] = {"rows": rows, "summary": summary}
        print(
            f"{name}: median on {on * 1000:.2f} us, off {off * 1000:.2f} us "
            f"({summary['on_vs_off_pct']:+.2f} %), wall on {summary['on']['wall_s_median']:.3f} s, "
            f"off {summary['off']['wall_s_median']:.3f} s; attributed: {rows['on'][0]['attribution']}"
        )
    os.environ.pop("WORKBENCH_ATTRIBUTION", None)
    Path(args.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
