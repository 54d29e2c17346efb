"""GPU machine: the focused Nsight Compute probe (F item 4) on one config of a recorded session.

Usage:  python bench/probe_session.py --kernel matmul --config PARAMS --tilegym $TG --out DIR
        [--session cutile_workbench/profiles/tilegym/session] [--timeout S]

Copies the recorded session to DIR/out (it is read-only in the package), then does exactly what
``cutile-workbench probe <kernel> --config PARAMS --tilegym $TG --out-root DIR/out`` does, through
the same service (``cutile_workbench.services.probe``: specs from the per-launch captures, ncu on one
profiled call of TileGym's own test_perf per side, ``--clock-control none``, results filed under
``DIR/out/<kernel>/workbench/probes/``), and copies each side's raw CSV and probe JSON next to DIR
for the run log. Prints the side-by-side table F and the TUI show. Exit 0 when both sides were
probed, 1 otherwise (the error of each failed side on stderr).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--tilegym", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--session", type=Path, default=Path("cutile_workbench/profiles/tilegym/session"))
    ap.add_argument("--timeout", type=float, default=240.0)
    ns = ap.parse_args()
    from cutile_workbench.cli.probe import render_table
    from cutile_workbench.errors import WorkbenchError
    from cutile_workbench.services import probe as probe_service

    root = ns.out / "out"
    shutil.copytree(ns.session / ns.kernel, root / ns.kernel, dirs_exist_ok=True)
    plan = probe_service.plan_probe(
        probe_service.ProbeRequest(
            ns.kernel, ns.config, out_root=root, tilegym=ns.tilegym.resolve(), python=sys.executable
        )
    )
    why = probe_service.cannot_run(plan)
    if why:
        print(f"cannot run here: {why}", file=sys.stderr)
        return 1
    done = 0
    for side in plan.sides:
        print(f"$ {side.shell}")
        try:
            result, saved = probe_service.run_side(plan, side, timeout_s=ns.timeout)
        except WorkbenchError as exc:
            print(f"{side.spec.backend}: FAILED: {exc}", file=sys.stderr)
            continue
        shutil.copyfile(saved.with_suffix(".csv"), ns.out / f"ncu_{side.spec.backend}.csv")
        shutil.copyfile(saved, ns.out / f"probe_{side.spec.backend}.json")
        print(f"{side.spec.backend}: {saved} ({result.kernel}, {result.device})")
        done += 1
    rows = probe_service.probe_rows(probe_service.load(plan.ws), plan.candidate_backend, plan.row)
    print(render_table(rows, plan.candidate_backend, plan.baseline_backend), end="")
    (ns.out / "specs.json").write_text(
        json.dumps(
            [
                {
                    "backend": s.spec.backend,
                    "nodeid": s.spec.nodeid,
                    "kernel": s.spec.kernel_name,
                    "shell": s.shell,
                }
                for s in plan.sides
            ],
            indent=1,
        )
    )
    return 0 if done == 2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
