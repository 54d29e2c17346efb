"""GPU machine: the focused Nsight Compute probe (F item 4) on one config of a recorded session.

Usage:  python bench/probe_session.py --kernel matmul --config PARAMS --tilegym $TG --out DIR
        [--session profiles/tilegym/session]

Copies the recorded session to DIR/out (it is read-only in the package), reads F's inputs from it,
builds the candidate and reference probe specs of that row (``f_evidence.ncu.probe_specs``: kernel
name and node id from the per-launch captures), runs each (ncu on one profiled call of TileGym's
own test_perf, ``--clock-control none``), files the results with ``save_probe`` and copies the raw
CSVs next to them. Prints the side-by-side table F and the TUI show. The same core functions the
``probe`` command calls; this script exists so the GPU call needs no CLI wiring.
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
    ap.add_argument("--session", type=Path, default=Path("profiles/tilegym/session"))
    ap.add_argument("--timeout", type=float, default=240.0)
    ns = ap.parse_args()
    from workbench.f_evidence.ncu import probe_specs, run_probe, save_probe, side_by_side
    from workbench.f_inputs import collect_inputs
    from workbench.workspace import open_workspace

    root = ns.out / "out"
    shutil.copytree(ns.session / ns.kernel, root / ns.kernel, dirs_exist_ok=True)
    ws = open_workspace(ns.kernel, out_root=root, tilegym=ns.tilegym.resolve())
    inputs = collect_inputs(ws)
    assert inputs.table is not None
    row = next(r for r in inputs.table.rows if r.params == ns.config)
    cand = inputs.candidate_records.get((row.func_key, row.params))
    base = inputs.baseline_records.get(row.baseline_backend or "", {}).get((row.func_key, row.params))
    specs = probe_specs(row, launch_sets=inputs.launch_sets, candidate_backend=inputs.candidate_backend,
                        candidate_record=cand, baseline_record=base, cwd=ns.tilegym.resolve(), python=sys.executable)
    results = []
    for spec in specs:
        result, raw = run_probe(spec, ws.paths, timeout_s=ns.timeout)
        (ns.out / f"ncu_{spec.backend}.csv").write_text(raw)
        saved = save_probe(ws.paths, result, raw_csv=raw)
        shutil.copyfile(saved, ns.out / f"probe_{spec.backend}.json")
        results.append(result)
        print(f"{spec.backend}: {saved}")
    by = {r.backend: r for r in results}
    for metric, c, b in side_by_side(by.get(inputs.candidate_backend), by.get(row.baseline_backend or "cutile")):
        print(f"{metric:<34}{c:>22}{b:>22}")
    (ns.out / "specs.json").write_text(json.dumps([{"backend": s.backend, "nodeid": s.nodeid,
                                                     "kernel": s.kernel_name} for s in specs], indent=1))
    return 0 if len(results) == 2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
