"""The race harness of issue 33 §4, run at full length, with its counts written as raw data.

Usage: ``python bench/confine_race.py OUT.json [--writes 2500] [--plans 1000]``

Runs the two harnesses of ``tests/confine_race_helpers.py`` (the ones ``tests/unit/test_confine_race.py`` runs) in temp dirs: the one atomic write
(``infra.atomicio``) while ``workbench/`` or ``reports/`` swaps with a link out, ``--writes`` writes
per target; and the report writer (``write_plan``, a 3-file E set) while the kernel dir itself or
its ``reports/`` swaps with a link out, ``--plans`` writes per target. An *escape* is any entry that
lands in the outside dir. Writes a JSON document: per harness and target, writes, refused, written,
escapes; the host's load average before and after (the box is shared: counts, not times, matter).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from confine_race_helpers import race, writer_race  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--writes", type=int, default=2500)
    ap.add_argument("--plans", type=int, default=1000)
    args = ap.parse_args()
    doc: dict[str, object] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": platform.node(),
        "python": platform.python_version(),
        "loadavg_before": os.getloadavg(),
        "runs": [],
    }
    runs: list[dict[str, object]] = []
    for sub in ("workbench", "reports"):
        with tempfile.TemporaryDirectory(prefix="race-") as d:
            esc, ref, wr = race(Path(d), sub, args.writes)
        runs.append(
            {
                "harness": "atomic_write_bytes",
                "swapped": sub,
                "writes": args.writes,
                "refused": ref,
                "written": wr,
                "escapes": esc,
            }
        )
        print(runs[-1], flush=True)
    for swapped in ("kernel dir", "reports"):
        with tempfile.TemporaryDirectory(prefix="race-") as d:
            esc, ref, wr = writer_race(Path(d), swapped, args.plans)
        runs.append(
            {
                "harness": "write_plan",
                "swapped": swapped,
                "writes": args.plans,
                "refused": ref,
                "written": wr,
                "escapes": esc,
            }
        )
        print(runs[-1], flush=True)
    doc["runs"] = runs
    doc["total_runs"] = sum(int(r["writes"]) for r in runs)  # type: ignore[call-overload]
    doc["total_escapes"] = sum(int(r["escapes"]) for r in runs)  # type: ignore[call-overload]
    doc["loadavg_after"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    return 1 if doc["total_escapes"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
