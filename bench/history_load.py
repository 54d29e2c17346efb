"""How long reading a kernel's run history takes as it grows (CPU box): ``kernel_history`` end to end.

Run:  python bench/history_load.py [--runs 10 30 90] [--reps 3]

For each N, an out root holding the REAL recorded matmul session (2 runs: cutile-rs and cuTile, 6
configs, 17-1000 raw samples each) plus N-1 SYNTHETIC cutile-rs runs derived from its real
samples (``tests/history_helpers.derived_entry``: resampled, one config 0.8x then back) is read
with :func:`cutile_workbench.services.history.kernel_history` — open the store, import the kernel dir
(idempotent: nothing new), load every run and decide every consecutive pair (Mann-Whitney U +
2000-replicate bootstrap CI of the median ratio). That is what ``cutile-workbench history`` and
the History screen's background load do. Prints the median wall time of ``--reps`` reads per N and
the number of pairs decided.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, nargs="+", default=[10, 30, 90], help="cutile-rs runs in the history")
    ap.add_argument("--reps", type=int, default=3)
    ns = ap.parse_args()
    from history_helpers import SP_2048, candidate_configs, copy_matmul, derived_entry, provenance, utc

    from cutile_workbench.history.query import open_history
    from cutile_workbench.services import stage_e
    from cutile_workbench.services.history import kernel_history

    print(f"{'runs':>5} {'pairs':>6} {'median s':>9} {'per pair ms':>12}")
    for n in ns.runs:
        with tempfile.TemporaryDirectory() as tmp:
            paths = copy_matmul(Path(tmp))
            store, _report = open_history(paths, source="out_root")
            with store:
                base = candidate_configs(store)
                for i in range(1, n):
                    at = utc("2026-12-02 10:00") + i * 86400
                    store.add(
                        derived_entry(
                            base,
                            kernel="matmul",
                            tag=f"bench{i}",
                            at=at,
                            prov=provenance(at),
                            scale={SP_2048: 0.8 if i % 2 else 1.0},
                            seed=i,
                        )
                    )
            ws = stage_e.open_kernel("matmul", out_root=Path(tmp), tilegym=None, env={})
            times = []
            for _ in range(ns.reps):
                t0 = time.perf_counter()
                history = kernel_history(ws)
                times.append(time.perf_counter() - t0)
            pairs = sum(len(s.points) - 1 for s in history.series)
            med = statistics.median(times)
            print(f"{n:>5} {pairs:>6} {med:>9.2f} {1000 * med / max(pairs, 1):>12.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
