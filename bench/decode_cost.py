"""CPU seconds to decode (decompress, parse, validate) launch sets of a per-config store, per code tree.

Run: python bench/decode_cost.py STORE [--sets 100] [--reps 5] [--tree NAME=PATH ...]
Each tree's decode runs in its own process (``PYTHONPATH=PATH``), trees interleaved rep by rep, so
the box's load hits them alike; prints each tree's median ms a set (process CPU time of the decode
loop only).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import sys, time
from cutile_workbench.artifacts.launch_store import open_store
st = open_store(sys.argv[1]); n = min(len(st), int(sys.argv[2]))
t = time.process_time()
for i in range(n):
    st._decode(i)
print((time.process_time() - t) / n * 1000)
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("store", type=Path)
    ap.add_argument("--sets", type=int, default=100)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=PATH")
    ns = ap.parse_args()
    trees = dict(t.split("=", 1) for t in ns.tree) or {"this": str(Path(__file__).resolve().parents[1])}
    got: dict[str, list[float]] = {k: [] for k in trees}
    for _ in range(ns.reps):
        for name, path in trees.items():
            out = subprocess.run(
                [sys.executable, "-c", _CHILD, str(ns.store), str(ns.sets)],
                env={**os.environ, "PYTHONPATH": path},
                capture_output=True,
                text=True,
                check=True,
            )
            got[name].append(float(out.stdout.strip()))
    print(json.dumps({"sets": ns.sets, "reps": ns.reps, "ms_per_set": got}))
    for name, v in got.items():
        print(f"{name}: median {statistics.median(v):.2f} ms a set")
    return 0


if __name__ == "__main__":
    sys.exit(main())
