"""Harness cost on the GPU: the workbench CUPTI harness vs TileGym's per-sample torch.profiler harness.

What it measures, in one run (each harness in its own fresh process, never both in one):
1. wall time per 100 samples (L2 flush included in both), warm and including the first session's
   start-up (the first batch of a fresh process), and per-case median agreement;
2. with ``--e-runs N``: N full rms_norm E runs (pytest child, our plugin, cutile + triton on every
   shape of the profile): wall time per run and the geomean of cutile/triton medians per run (spread).
Writes one JSON (``--out``) and prints a short table. Needs torch + CUDA (+ cupti-python for ours).

Usage: ``python bench/harness_cost.py --out harness_cost.json [--e-runs 3]``
       (children: ``--child ours|tilegym --cases JSON --out FILE``)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere: import workbench/profiles from the repo
    sys.path.insert(0, str(ROOT))
DEFAULT_CASES = [
    {
        "factory": "cutile_workbench.profiles.rms_norm.backends:factory",
        "kwargs": {"framework": fw, "m": m, "n": n},
    }
    for fw in ("triton", "cutile")
    for (m, n) in ((4096, 1024), (16384, 2048), (8192, 8192))
]


def _lower_median(xs: list[float]) -> float:
    s = sorted(xs)
    return s[(len(s) - 1) // 2]


# --------------------------------------------------------------------------- children


def child(kind: str, cases: list[dict[str, Any]], nrep: int, batches: int, out: Path) -> None:
    t_proc = time.perf_counter()
    import torch

    from cutile_workbench.run.capture.kineto_child import tilegym_style_samples, warmed_up

    results = []
    for case in cases:
        fn = warmed_up(torch, case["factory"], case["kwargs"])  # + 100 ms warm-up, as TileGym's WARMUP
        cache = torch.empty(int(256e6 // 4), dtype=torch.int, device="cuda")
        rows = []
        for _ in range(batches):
            t0 = time.perf_counter()
            if kind == "tilegym":
                samples, _launches = tilegym_style_samples(torch, fn, nrep, cache)
                counts = [len(x) for x in _launches]
                parts: dict[str, float] = {}
            else:
                from cutile_workbench.run.capture.harness import sample_loop, settle_default
                from cutile_workbench.run.capture.session import CuptiSession

                session = CuptiSession(case["kwargs"]["framework"])
                ta = time.perf_counter()
                session.__enter__()
                tb = time.perf_counter()
                try:
                    sample_loop(torch, session, [fn], nrep, cache, settle_default())
                    tc = time.perf_counter()
                finally:
                    session.__exit__(None, None, None)
                td = time.perf_counter()
                calls = session.captures()
                te = time.perf_counter()
                parts = {
                    "enter_s": tb - ta,
                    "loop_s": tc - tb,
                    "exit_s": td - tc,
                    "attribute_s": te - td,
                    "records": len(session.kernels) + len(session.apis) + len(session.copies),
                }
                samples = [c.device_time_ns / 1e6 for c in calls]
                counts = [len(c.launches) for c in calls]
            rows.append(
                {
                    "wall_s": time.perf_counter() - t0,
                    "median_ms": _lower_median(samples),
                    "launches": statistics.mode(counts) if counts else 0,
                    **parts,
                }
            )
        results.append({"case": case, "batches": rows})
        del cache
    out.write_text(json.dumps({"kind": kind, "process_s": time.perf_counter() - t_proc, "results": results}))


def _run_child(
    kind: str, cases: list[dict[str, Any]], nrep: int, batches: int, env: dict[str, str] | None = None
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"{kind}.json"
        t0 = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                kind,
                "--cases",
                json.dumps(cases),
                "--nrep",
                str(nrep),
                "--batches",
                str(batches),
                "--out",
                str(out),
            ],
            check=True,
            cwd=ROOT,
            timeout=400,
            env={**os.environ, **(env or {})},
        )
        data = json.loads(out.read_text())
        data["child_wall_s"] = time.perf_counter() - t0
        return data


# --------------------------------------------------------------------------- E runs


def e_run(tmp: Path, index: int) -> dict[str, Any]:
    events = tmp / f"e_run_{index}.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "cutile_workbench/profiles/rms_norm/test_rms_norm.py::Test_RMSNorm::test_perf",
        "-k",
        "(cutile or triton) and not hotpath",
        "-sv",
        "--print-record",
        "-p",
        "cutile_workbench.run.plugins.perflog",
        "--workbench-events",
        str(events),
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - t0
    medians: dict[tuple[str, str], float] = {}
    for line in events.read_text().splitlines() if events.exists() else []:
        ev = json.loads(line)
        if ev.get("event") == "record":
            fw = ev["framework"]
            medians[(fw, ev["params"])] = ev["benchmark"][fw]["forward"]["median"]
    ratios = {
        p: medians[("cutile", p)] / medians[("triton", p)]
        for (fw, p) in medians
        if fw == "cutile" and ("triton", p) in medians
    }
    geo = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios)) if ratios else None
    passed = len(re.findall(r" PASSED", proc.stdout))
    return {"wall_s": wall, "rc": proc.returncode, "passed": passed, "ratios": ratios, "geomean": geo}


# --------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", choices=("ours", "tilegym"))
    ap.add_argument("--cases", default=json.dumps(DEFAULT_CASES))
    ap.add_argument("--nrep", type=int, default=100)
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--e-runs", type=int, default=0)
    ap.add_argument("--skip-harness", action="store_true")
    ap.add_argument(
        "--variants",
        default="default:",
        help="ours-harness variants 'name:ENV=V;ENV2=V2,...'; the first is the reported one",
    )
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.child:
        child(args.child, json.loads(args.cases), args.nrep, args.batches, Path(args.out))
        return 0
    cases = json.loads(args.cases)
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "nrep": args.nrep,
        "command": " ".join(sys.argv),
        "host": os.uname().nodename,
    }
    try:
        import torch

        report["gpu"] = torch.cuda.get_device_name(0)
        report["torch"] = torch.__version__
    except Exception as exc:  # report, don't die: the table says what is missing
        report["gpu"] = f"unavailable: {exc}"
    if not args.skip_harness:
        tg = _run_child("tilegym", cases, args.nrep, args.batches)
        variants = {}
        for spec in args.variants.split(","):
            name, _, settings = spec.partition(":")
            env = dict(kv.split("=", 1) for kv in settings.split(";") if kv)
            variants[name] = {"env": env, "data": _run_child("ours", cases, args.nrep, args.batches, env)}
        report["variants"] = {
            n: {"env": v["env"], "summary": _compare(v["data"], tg, args.nrep)} for n, v in variants.items()
        }
        ours = variants[next(iter(variants))]["data"]
        rows = []
        for a, b in zip(ours["results"], tg["results"], strict=True):
            kw = a["case"]["kwargs"]
            warm_a = [x["wall_s"] for x in a["batches"][1:]]
            warm_b = [x["wall_s"] for x in b["batches"][1:]]
            rows.append(
                {
                    "case": f"{kw['framework']} {kw['m']}x{kw['n']}",
                    "ours_median_us": a["batches"][-1]["median_ms"] * 1e3,
                    "tilegym_median_us": b["batches"][-1]["median_ms"] * 1e3,
                    "median_diff_pct": (a["batches"][-1]["median_ms"] / b["batches"][-1]["median_ms"] - 1)
                    * 100,
                    "ours_warm_s_per_100": statistics.mean(warm_a) * 100 / args.nrep,
                    "tilegym_warm_s_per_100": statistics.mean(warm_b) * 100 / args.nrep,
                    "ours_launches": a["batches"][-1]["launches"],
                    "tilegym_launches": b["batches"][-1]["launches"],
                }
            )
        cold_a = ours["results"][0]["batches"][0]["wall_s"] * 100 / args.nrep
        cold_b = tg["results"][0]["batches"][0]["wall_s"] * 100 / args.nrep
        warm_ratio = statistics.mean(r["ours_warm_s_per_100"] for r in rows) / statistics.mean(
            r["tilegym_warm_s_per_100"] for r in rows
        )
        report["harness"] = {
            "rows": rows,
            "ours_cold_s_per_100": cold_a,
            "tilegym_cold_s_per_100": cold_b,
            "cold_ratio": cold_a / cold_b,
            "warm_ratio": warm_ratio,
            "max_abs_median_diff_pct": max(abs(r["median_diff_pct"]) for r in rows),
            "ours_process_s": ours["process_s"],
            "tilegym_process_s": tg["process_s"],
        }
    if args.e_runs:
        with tempfile.TemporaryDirectory() as tmp:
            runs = [e_run(Path(tmp), i) for i in range(args.e_runs)]
        geos = [r["geomean"] for r in runs if r["geomean"]]
        report["e_runs"] = {
            "runs": [{**r, "ratios": r["ratios"]} for r in runs],
            "geomeans": geos,
            "spread_pct": (max(geos) / min(geos) - 1) * 100 if geos else None,
        }
    Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    _print_table(report)
    return 0


def _compare(ours: dict[str, Any], tg: dict[str, Any], nrep: int) -> dict[str, Any]:
    warm_a = [b["wall_s"] for r in ours["results"] for b in r["batches"][1:]]
    warm_b = [b["wall_s"] for r in tg["results"] for b in r["batches"][1:]]
    diffs = [
        (a["batches"][-1]["median_ms"] / b["batches"][-1]["median_ms"] - 1) * 100
        for a, b in zip(ours["results"], tg["results"], strict=True)
    ]
    parts = {
        k: statistics.mean(b[k] for r in ours["results"] for b in r["batches"][1:] if k in b)
        for k in ("enter_s", "loop_s", "exit_s", "attribute_s", "records")
        if any(k in b for r in ours["results"] for b in r["batches"])
    }
    return {
        "warm_ratio": statistics.mean(warm_a) / statistics.mean(warm_b),
        "cold_ratio": ours["results"][0]["batches"][0]["wall_s"] / tg["results"][0]["batches"][0]["wall_s"],
        "median_diff_pct": [round(d, 2) for d in diffs],
        "warm_parts_mean": parts,
    }


def _print_table(report: dict[str, Any]) -> None:
    for name, v in report.get("variants", {}).items():
        s = v["summary"]
        print(
            f"variant {name} {v['env']}: warm {s['warm_ratio']:.3f} cold {s['cold_ratio']:.3f} "
            f"diff% {s['median_diff_pct']} parts { ({k: round(x, 4) for k, x in s['warm_parts_mean'].items()}) }"
        )
    h = report.get("harness")
    if h:
        print(
            f"{'case':<22}{'ours us':>10}{'tilegym us':>12}{'diff %':>8}{'ours s/100':>12}{'tg s/100':>10}{'launch':>8}"
        )
        for r in h["rows"]:
            print(
                f"{r['case']:<22}{r['ours_median_us']:>10.2f}{r['tilegym_median_us']:>12.2f}{r['median_diff_pct']:>8.2f}"
                f"{r['ours_warm_s_per_100']:>12.3f}{r['tilegym_warm_s_per_100']:>10.3f}"
                f"{r['ours_launches']:>4}/{r['tilegym_launches']}"
            )
        print(
            f"warm ratio {h['warm_ratio']:.3f} (target <= 0.25); cold (first session) "
            f"{h['ours_cold_s_per_100']:.3f}s vs {h['tilegym_cold_s_per_100']:.3f}s ratio {h['cold_ratio']:.3f} "
            f"(target <= 0.05); max |median diff| {h['max_abs_median_diff_pct']:.2f}% (target <= 2%)"
        )
    e = report.get("e_runs")
    if e:
        for i, r in enumerate(e["runs"]):
            geo = f"{r['geomean']:.4f}" if r["geomean"] else "n/a"
            print(f"E run {i}: wall {r['wall_s']:.1f}s rc={r['rc']} passed={r['passed']} geomean={geo}")
        if e["spread_pct"] is not None:
            print(f"geomean spread over {len(e['geomeans'])} runs: {e['spread_pct']:.3f}% (target <= 1%)")


if __name__ == "__main__":
    sys.exit(main())
