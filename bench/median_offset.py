"""Where does the small-kernel median offset between our harness and TileGym's come from? (GPU only)

On the H200 our CUPTI harness measured the 6-7 µs rms_norm kernels ~0.3 µs (+4.7/+5.1 %) slower than
TileGym's per-sample torch.profiler loop, while ≥34 µs kernels agreed within ~1 %. This bench
separates the candidate causes, one factor per variant, each variant in its own fresh process
(Kineto and cupti-python never share a process):

- ``kineto_per_sample``: TileGym's loop (a torch.profiler session per sample), the reference;
- ``kineto_one``: the same loop inside ONE torch.profiler session (per-sample session start-up off);
- ``harness``: our harness (:func:`cutile_workbench.run.capture.harness.sample_loop` in a CuptiSession);
- ``raw_one_k``: raw cupti-python, CONCURRENT_KERNEL only, enabled once for all samples;
- ``raw_one_kapi``: as raw_one_k plus RUNTIME + DRIVER (the API records our attribution needs);
- ``raw_per_sample``: raw cupti-python, CONCURRENT_KERNEL enabled before and disabled after EACH sample
  (what a per-sample profiler session does to CUPTI);
- ``events``: CUDA events around the call (launch latency included; a third, profiler-free view).

Every loop: L2 flush (256 MB ``zero_``) + sync, then the call, then sync. A sample is the summed
device time of the kernels the call launched (the flush kernels, ``FillFunctor``, are the separators).
Prints one table: per case and variant median / p10 / p90 in µs, and the median's offset from
``kineto_per_sample``. Writes ``--out`` JSON.

Usage: ``python bench/median_offset.py --out median_offset.json [--nrep 300]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
VARIANTS = (
    "kineto_per_sample",
    "kineto_one",
    "harness",
    "raw_one_k",
    "raw_one_kapi",
    "raw_per_sample",
    "events",
)
DEFAULT_CASES = [
    {
        "factory": "cutile_workbench.profiles.rms_norm.backends:factory",
        "kwargs": {"framework": fw, "m": m, "n": n},
    }
    for fw, m, n in (("triton", 4096, 1024), ("cutile", 4096, 1024), ("triton", 16384, 2048))
]
FLUSH_MARK = "FillFunctor"


def _group(kernels: list[tuple[str, float, float]]) -> list[float]:
    """(name, start, end) in sample order → per-sample summed durations of non-flush kernels; each
    flush kernel (or hand-set boundary mark) starts a sample."""
    samples: list[float] = []
    current: float | None = None
    for name, start, end in kernels:
        if FLUSH_MARK in name:
            if current is not None:
                samples.append(current)
            current = 0.0
        elif current is not None:
            current += end - start
    if current is not None:
        samples.append(current)
    return samples


def _split_samples(kernels: list[tuple[str, float, float]]) -> list[float]:
    """Records of one traced loop (flush kernels included) → per-sample sums, in GPU time order."""
    return _group(sorted(kernels, key=lambda k: k[1]))


def _raw_cupti(torch: Any, fn: Any, nrep: int, cache: Any, *, apis: bool, per_sample: bool) -> list[float]:
    from cupti import cupti

    kernels: list[tuple[str, float, float]] = []

    def on_complete(records: list[Any]) -> None:
        for r in records:
            if r.kind == 10:  # CONCURRENT_KERNEL
                kernels.append((r.name, r.start / 1000.0, r.end / 1000.0))

    cupti.activity_register_callbacks(lambda: (8 << 20, 0), on_complete)
    kinds = [10] + ([5, 4] if apis else [])  # CONCURRENT_KERNEL (+ RUNTIME, DRIVER), as records.py
    if not per_sample:
        for k in kinds:
            cupti.activity_enable(k)
        fn()  # un-measured: pays the one-time instrumentation, as the harness does
        torch.cuda.synchronize()
        cupti.activity_flush_all(1)
        kernels.clear()
    for _ in range(nrep):
        cache.zero_()
        torch.cuda.synchronize()
        if per_sample:
            # the flush ran untraced, so mark the sample boundary by hand
            kernels.append((FLUSH_MARK, 0.0, 0.0))
            for k in kinds:
                cupti.activity_enable(k)
        fn()
        torch.cuda.synchronize()
        if per_sample:
            cupti.activity_flush_all(1)
            for k in kinds:
                cupti.activity_disable(k)
    if not per_sample:
        cupti.activity_flush_all(1)
        for k in kinds:
            cupti.activity_disable(k)
        return _split_samples(kernels)
    # boundaries were appended before each sample's records arrived: group in arrival order
    return _group(kernels)


def _kineto_one(torch: Any, fn: Any, nrep: int, cache: Any) -> list[float]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(nrep):
            cache.zero_()
            torch.cuda.synchronize()
            fn()
            torch.cuda.synchronize()
    kernels = [
        (e.name, e.time_range.start, e.time_range.end)
        for e in prof.events()
        if e.device_type == torch.autograd.DeviceType.CUDA
    ]
    return _split_samples(kernels)


def _events(torch: Any, fn: Any, nrep: int, cache: Any) -> list[float]:
    out = []
    for _ in range(nrep):
        cache.zero_()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        out.append(a.elapsed_time(b) * 1000.0)
    return out


def child(variant: str, cases: list[dict[str, Any]], nrep: int, out: Path) -> None:
    import torch

    from cutile_workbench.run.capture.kineto_child import tilegym_style_samples, warmed_up

    results = []
    for case in cases:
        fn = warmed_up(torch, case["factory"], case["kwargs"])  # + 100 ms warm-up, as TileGym's WARMUP
        cache = torch.empty(int(256e6 // 4), dtype=torch.int, device="cuda")
        if variant == "kineto_per_sample":
            samples = [s * 1000.0 for s in tilegym_style_samples(torch, fn, nrep, cache)[0]]
        elif variant == "kineto_one":
            samples = _kineto_one(torch, fn, nrep, cache)
        elif variant == "harness":
            from cutile_workbench.run.capture.harness import sample_loop
            from cutile_workbench.run.capture.session import CuptiSession

            session = CuptiSession(case["kwargs"]["framework"])
            with session:
                fn()
                torch.cuda.synchronize()
                sample_loop(torch, session, [fn], nrep, cache)
            samples = [c.device_time_ns / 1000.0 for c in session.captures()]
        elif variant == "events":
            samples = _events(torch, fn, nrep, cache)
        else:
            samples = _raw_cupti(
                torch, fn, nrep, cache, apis=variant == "raw_one_kapi", per_sample=variant == "raw_per_sample"
            )
        results.append({"case": case, "samples_us": samples})
        del cache
    out.write_text(json.dumps({"variant": variant, "results": results}))


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * (len(s) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--cases", default=json.dumps(DEFAULT_CASES))
    ap.add_argument("--nrep", type=int, default=300)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    cases = json.loads(args.cases)
    if args.child:
        child(args.child, cases, args.nrep, Path(args.out))
        return 0
    data: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for variant in args.variants.split(","):
            path = Path(tmp) / f"{variant}.json"
            proc = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    variant,
                    "--cases",
                    json.dumps(cases),
                    "--nrep",
                    str(args.nrep),
                    "--out",
                    str(path),
                ],
                cwd=ROOT,
                timeout=300,
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                data[variant] = {"error": proc.stderr[-2000:]}
                print(f"{variant}: FAILED rc={proc.returncode}\n{proc.stderr[-800:]}")
                continue
            data[variant] = json.loads(path.read_text())
    Path(args.out).write_text(
        json.dumps({"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "nrep": args.nrep, "variants": data})
    )
    ref = data.get("kineto_per_sample", {}).get("results")
    print(f"{'case':<22}{'variant':<19}{'n':>5}{'median':>9}{'p10':>8}{'p90':>8}{'vs TG %':>9}")
    for i, case in enumerate(cases):
        kw = case["kwargs"]
        label = f"{kw['framework']} {kw['m']}x{kw['n']}"
        ref_med = _pct(ref[i]["samples_us"], 0.5) if ref else None
        for variant, v in data.items():
            if "results" not in v:
                continue
            xs = v["results"][i]["samples_us"]
            med = _pct(xs, 0.5)
            off = f"{(med / ref_med - 1) * 100:+.2f}" if ref_med else "n/a"
            print(
                f"{label:<22}{variant:<19}{len(xs):>5}{med:>9.3f}{_pct(xs, 0.1):>8.3f}{_pct(xs, 0.9):>8.3f}{off:>9}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
