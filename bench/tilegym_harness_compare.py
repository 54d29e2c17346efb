"""TileGym's own test_perf measured by its harness vs by ours (``--workbench-harness``), per config.

Reads the ``record`` events of two ``cutile-workbench run <kernel> --tilegym DIR`` out roots (one
without ``--harness``: TileGym's per-sample torch.profiler ``benchmark_fn_cupti``; one with it: our
CUPTI harness swapped in) and prints one row per (framework, params): both medians, the offset, the
sample counts and our per-call launch count. Prints the largest |offset|. GPU-free (reads files).

Usage: ``python bench/tilegym_harness_compare.py PLAIN_ROOT HARNESS_ROOT KERNEL [--json OUT]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def records(root: Path, kernel: str) -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    path = root / kernel / "workbench" / "events.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        ev = json.loads(line)
        if ev.get("event") != "record":
            continue
        fw = ev.get("framework")
        fwd = ((ev.get("benchmark") or {}).get(fw) or {}).get("forward") or {}
        if isinstance(fwd.get("median"), (int, float)):
            out[(str(fw), str(ev.get("params")))] = fwd
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("plain", type=Path)
    ap.add_argument("harness", type=Path)
    ap.add_argument("kernel")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    plain, ours = records(args.plain, args.kernel), records(args.harness, args.kernel)
    rows = []
    for key in sorted(set(plain) & set(ours)):
        a, b = plain[key], ours[key]
        rows.append(
            {
                "framework": key[0],
                "params": key[1],
                "tilegym_us": a["median"] * 1e3,
                "ours_us": b["median"] * 1e3,
                "diff_pct": (b["median"] / a["median"] - 1) * 100,
                "tilegym_nrep": a.get("nrep"),
                "ours_nrep": b.get("nrep"),
                "ours_launches": b.get("launches_per_call"),
                "ours_source": b.get("capture_source"),
            }
        )
    print(
        f"{'framework':<10}{'params':<44}{'TileGym us':>11}{'ours us':>10}{'diff %':>8}{'n TG/ours':>11}{'launch':>7}"
    )
    for r in rows:
        print(
            f"{r['framework']:<10}{r['params']:<44}{r['tilegym_us']:>11.2f}{r['ours_us']:>10.2f}{r['diff_pct']:>8.2f}"
            f"{str(r['tilegym_nrep']) + '/' + str(r['ours_nrep']):>11}{r['ours_launches']!s:>7}"
        )
    only = sorted(set(plain) ^ set(ours))
    if only:
        print(f"configs in one run only: {only}")
    if rows:
        print(f"matched {len(rows)} configs; max |diff| {max(abs(r['diff_pct']) for r in rows):.2f}%")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "unmatched": only}, indent=1))
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
