"""Cold vs warm compile cache on a 2-shard run: what each run's session.json files record.

Run (after ``bench/gpu_session.sh coldstart``):  python bench/coldstart_summary.py DIR [DIR ...] [--out FILE]

For every ``session.json`` under each DIR (the merged kernel dir and every shard's), prints and
saves (``--out``, JSON) each role's run duration, its attempts' durations and its ``compile_cache``
record (:mod:`cutile_workbench.run.compile_cache`: dir, state cold|warm|partial|unused, files added per
toolchain). Nothing is computed beyond reading what the runs recorded.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path)
    ns = ap.parse_args()
    rows = []
    for root in ns.dirs:
        for session in sorted(root.rglob("session.json")):
            try:
                doc = json.loads(session.read_text())
            except (OSError, ValueError) as exc:
                print(f"{session}: unreadable ({exc})", file=sys.stderr)
                continue
            for role, rec in sorted((doc.get("runs") or {}).items()):
                cc = rec.get("compile_cache") or {}
                row = {
                    "session": str(session),
                    "role": role,
                    "duration_s": rec.get("duration_s"),
                    "attempts_s": [a.get("duration_s") for a in rec.get("attempts") or []],
                    "collected": rec.get("collected"),
                    "rc": rec.get("rc"),
                    "cache_state": cc.get("state"),
                    "cache_dir": cc.get("dir"),
                    "added_files": cc.get("added_files"),
                    "gpu": rec.get("gpu") or rec.get("gpus"),
                }
                rows.append(row)
                print(
                    f"{session.parent.parent.name}/{role}: {row['duration_s']} s, cache {row['cache_state']}, "
                    f"added {row['added_files']}, attempts {row['attempts_s']}"
                )
    if ns.out:
        ns.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
