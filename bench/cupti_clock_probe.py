"""GPU probe: what a torch.profiler (Kineto) session does to a later CUPTI capture, and our answers.

Run on the GPU machine (cupti-python installed):  python bench/cupti_clock_probe.py --out FILE.json

In ONE process, for a memory-bound kernel (in-place scale of 256 MB, ~120 µs) and a tiny one
(~3 µs), it records:
1. ``before``: the workbench harness median + its CUDA-event self-check, clock rate (should be 1.0);
2. a torch.profiler session runs (Kineto: its own callbacks and TSC timestamp callback);
3. ``rate_after_kineto``: ``Δget_timestamp / Δperf_counter_ns`` (the TSC frequency in GHz if Kineto's
   clock is now CUPTI's);
4. ``unguarded``: a capture with the clock check disabled (what the harness did before issue 11):
   its median and the self-check's verdict on it (must be "suspect");
5. ``guarded``: the harness as it is now (re-arm + clock restore): median, verdict, clock record.
Prints one line per case and writes everything as JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ns = ap.parse_args()
    import torch
    from cupti import cupti
    from torch.profiler import ProfilerActivity, profile

    from cutile_workbench.run.capture import clock, conflicts
    from cutile_workbench.run.capture import session as S
    from cutile_workbench.run.capture.harness import benchmark

    conflicts.install_tracker()
    big = torch.randn(64 << 20, device="cuda")  # 256 MB fp32
    small = torch.randn(4096, device="cuda")
    cases = {"scale_256MB": lambda: big.mul_(1.0000001), "add_16KB": lambda: small.add_(1.0)}
    out: dict[str, Any] = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}

    def measure(name: str, fn: Any) -> dict[str, Any]:
        res = benchmark(fn, backend=name, warmup_ms=20, rep_ms=30, max_rep=300, publish=False)
        return {
            "median_ms": res["median"],
            "nrep": res["nrep"],
            "capture_check": res.get("capture_check"),
            "capture": res.get("capture"),
        }

    out["rate_before"] = clock.clock_rate(cupti.get_timestamp)
    out["before"] = {n: measure(n, f) for n, f in cases.items()}
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CUDA]):
        for f in cases.values():
            f()
        torch.cuda.synchronize()
    out["kineto_s"] = time.perf_counter() - t0
    out["kineto_starts"] = conflicts.kineto_starts()
    out["rate_after_kineto"] = clock.clock_rate(cupti.get_timestamp)

    # 4. the pre-issue-11 behaviour: no clock check, no restore
    real_ensure = clock.ensure_clock
    clock.ensure_clock = lambda get_ts, **kw: clock.ClockCheck(rate=clock.clock_rate(get_ts))  # type: ignore[assignment]
    try:
        unguarded = {}
        for n, f in cases.items():
            r = measure(n, f)
            r["rate"] = clock.clock_rate(cupti.get_timestamp)
            unguarded[n] = r
        out["unguarded"] = unguarded
    finally:
        clock.ensure_clock = real_ensure  # type: ignore[assignment]
    # the bookkeeping saw this Kineto count already: force the next session to re-arm like a fresh one
    S._BOOKKEEPING_AT_KINETO[0] = -1
    try:
        out["guarded"] = {n: measure(n, f) for n, f in cases.items()}
    except Exception as exc:  # a refusal is a valid outcome: record it
        out["guarded"] = {"refused": f"{type(exc).__name__}: {exc}"}
    out["rate_final"] = clock.clock_rate(cupti.get_timestamp)
    for n in cases:
        b = out["before"][n]
        u = out["unguarded"][n]
        g = out["guarded"].get(n, {})
        print(
            f"{n:12s} before {b['median_ms'] * 1000:9.3f} us ({b['capture_check']['verdict']}, "
            f"events {b['capture_check']['events_median_ms'] * 1000:.3f})  unguarded "
            f"{u['median_ms'] * 1000:9.3f} us ({(u['capture_check'] or {}).get('verdict')}, "
            f"ratio {(u['capture_check'] or {}).get('ratio')})  guarded "
            f"{g.get('median_ms', float('nan')) * 1000:9.3f} us ({(g.get('capture_check') or {}).get('verdict')}) "
            f"clock {(g.get('capture') or {}).get('clock')}"
        )
    print(
        f"rate before {out['rate_before']:.4f} after kineto {out['rate_after_kineto']:.4f} "
        f"final {out['rate_final']:.4f}"
    )
    with open(ns.out, "w") as fh:
        json.dump(out, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
