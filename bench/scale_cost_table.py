"""Markdown table of a ``bench/scale_cost.py`` raw-data file (what BENCHMARKS.md §6 shows).

Run:  python bench/scale_cost_table.py bench/data/scale_cost-2026-12-01.json

Per command and N: the median wall time, CPU time and peak RSS of the repetitions after the first
(caches warm: what every later command costs), and the first repetition's wall time (the first
command on a fresh session computes E's table, the conditions and F's launch summaries once).
``timeline-legacy`` is the first open of a legacy single-member captures file every time (its
converted cache is removed before each repetition). Growth: the fitted exponent k of wall ≈ c·N^k
(from the raw file) and of the CPU time (steadier on a loaded box), over every repetition.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def _fit(points: list[tuple[int, float]]) -> float | None:
    """Least-squares exponent k of y ≈ c·N^k."""
    import math

    if len(points) < 2:
        return None
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(y) for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else None


def main() -> int:
    doc = json.loads(Path(sys.argv[1]).read_text())
    sessions = doc["sessions"]
    sizes = sorted(sessions, key=int)
    names = [
        n
        for n in (
            "help",
            "table",
            "report-e",
            "report-f",
            "timeline",
            "timeline-legacy",
            "timeline-legacy-warm",
            "tui",
        )
        if any(n in sessions[s]["cells"] for s in sizes)
    ]
    print("| command | " + " | ".join(f"N = {int(s):,}" for s in sizes) + " | growth k (wall; cpu) |")
    print("|---|" + "---|" * len(sizes) + "---|")
    for name in names:
        cells = []
        for s in sizes:
            reps = sessions[s]["cells"].get(name)
            if not reps:
                cells.append("—")
                continue
            if any("failed" in r for r in reps):
                cells.append("FAILED")
                continue
            warm = reps[1:] if len(reps) > 1 and name != "timeline-legacy" else reps
            wall = statistics.median(r["wall_s"] for r in warm)
            cpu = statistics.median(r["cpu_s"] for r in warm)
            rss = statistics.median(r["maxrss_mib"] for r in warm)
            paint = (
                f", paint {statistics.median(r['first_paint_s'] for r in warm):.2f} s"
                if name == "tui"
                else ""
            )
            first = "" if name == "timeline-legacy" else f" (1st {reps[0]['wall_s']:.2f} s)"
            cells.append(f"{wall:.2f} s, cpu {cpu:.2f} s, {rss:.0f} MiB{paint}{first}")
        k = doc.get("growth", {}).get(name, {}).get("growth_exponent")
        pts = [
            (int(s), statistics.median(r["cpu_s"] for r in sessions[s]["cells"][name]))
            for s in sizes
            if sessions[s]["cells"].get(name)
        ]
        kc = _fit(pts)
        print(
            f"| `{name}` | " + " | ".join(cells) + f" | {'' if k is None else f'{k:.2f}'}; "
            f"{'' if kc is None else f'{kc:.2f}'} |"
        )
    if doc.get("history"):
        print()
        print("| history runs | first read (decides + caches every pair) | later reads (median) | peak RSS |")
        print("|---|---|---|---|")
        for runs, h in sorted(doc["history"].items(), key=lambda kv: int(kv[0])):
            warm = h["warm"]
            print(
                f"| {int(runs):,} | {h['cold']['wall_s']:.2f} s (cpu {h['cold']['cpu_s']:.2f} s) | "
                f"{statistics.median(r['wall_s'] for r in warm):.2f} s "
                f"(cpu {statistics.median(r['cpu_s'] for r in warm):.2f} s) | "
                f"{max(r['maxrss_mib'] for r in warm):.0f} MiB |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
