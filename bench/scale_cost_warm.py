"""`table --json` warm at 1,000 configs, interleaved between code trees (one scaled session, one user
cache per tree, filled by one run first): the warm cost of two commits told apart in one run.

Usage: python bench/scale_cost_warm.py OUT.json NAME=TREE [NAME=TREE ...] (each TREE a `git archive`
of a commit, unpacked). CPU seconds of the child (bench/scale_cost.measure); the box's load is noted.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import scale_cost


def main() -> int:
    out_path, trees = Path(sys.argv[1]), dict(t.split("=", 1) for t in sys.argv[2:])
    out: dict = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "note": "loaded 2-core box; table --json warm, interleaved, CPU s of the child",
        "trees": trees,
        "cells": {t: [] for t in trees},
    }
    with tempfile.TemporaryDirectory() as tmp:
        kdir, config = scale_cost.build_session(Path(tmp), 1000)
        spec = scale_cost.commands(kdir, config)["table"]
        for t, repo in trees.items():
            scale_cost.measure(spec, Path(tmp) / f"cache-{t}", Path(repo))  # fills the cache
        for _ in range(4):
            for t, repo in trees.items():
                out["cells"][t].append(scale_cost.measure(spec, Path(tmp) / f"cache-{t}", Path(repo)))
    for t, c in out["cells"].items():
        print(t, [round(r["cpu_s"], 2) for r in c])
    out_path.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
