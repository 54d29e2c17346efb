"""SLURM's per-task overhead, measured on a real cluster (CI: the one-node cluster of .ci/slurm-up.sh).

Two measurements, each repeated ``--rounds`` times:
A. Scheduler latency of an array of ``--tasks`` trivial tasks (``sbatch --array --wrap``; each task
   writes its start time): sbatch's own latency, submit → each task's start (median, max) and the
   last task's end → squeue no longer listing the job (polled every 50 ms).
B. One workbench shard plan (the CPU fixture suite tests/fixtures/runner/perf_faults.py, 2 roles,
   ``--shards`` shards, real H200 medians replayed, no GPU) run twice, back to back: through the
   local executor with one slot per shard, then through ``run --slurm`` (``--nodes`` = shards,
   ``--gpus-per-node 0``, watcher poll ``--poll`` s). Both include planning and the merge; the
   difference is what SLURM adds per array task (the tasks run concurrently, one CPU each).
Needs sbatch/squeue (start the cluster with ``.ci/slurm-up.sh``). Prints a table; ``--out`` JSON.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from cutile_workbench.artifacts.layout import KernelPaths  # noqa: E402
from cutile_workbench.run.scaleout.devices import Device  # noqa: E402
from cutile_workbench.run.scaleout.plan import RoleRun  # noqa: E402
from cutile_workbench.run.scaleout.service import ScaleoutRequest, run_scaled  # noqa: E402
from cutile_workbench.run.scaleout.slurm import SlurmOptions, squeue_tasks  # noqa: E402
from cutile_workbench.run.spec import RunSpec, backend_k_expr  # noqa: E402


def trivial_array(n: int, work: Path) -> dict[str, Any]:
    stamps = work / f"stamps-{time.monotonic_ns()}"
    stamps.mkdir()
    wrap = f"date +%s.%N > {stamps}/$SLURM_ARRAY_TASK_ID.start"
    t0 = time.time()
    proc = subprocess.run(
        [
            "sbatch",
            "--parsable",
            f"--array=0-{n - 1}",
            "--job-name=wb-overhead",
            f"--output={stamps}/%a.out",
            f"--wrap={wrap}",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    t_sbatch = time.time() - t0
    job = proc.stdout.strip().split(";")[0]
    while True:
        queued = squeue_tasks(job)
        if queued is not None and not queued:
            break
        time.sleep(0.05)
    t_drained = time.time()
    starts = sorted(float((stamps / f"{i}.start").read_text()) for i in range(n))
    return {
        "tasks": n,
        "sbatch_s": round(t_sbatch, 3),
        "submit_to_start_median_s": round(statistics.median(s - t0 for s in starts), 3),
        "submit_to_start_max_s": round(max(starts) - t0, 3),
        "last_start_to_drained_s": round(t_drained - max(starts), 3),
        "total_s": round(t_drained - t0, 3),
    }


def suite(work: Path) -> Path:
    d = work / "suite"
    d.mkdir()
    shutil.copy(ROOT / "tests/fixtures/runner/perf_faults.py", d / "test_rms_norm.py")
    shutil.copy(ROOT / "tests/fixtures/runner/host_conftest.py", d / "conftest.py")
    return d


def roles(suite_dir: Path) -> tuple[RoleRun, ...]:
    out = []
    for backend, role in (("triton", "candidate"), ("cutile", "baseline_cutile")):
        spec = RunSpec(
            kernel="rms_norm",
            test_target="test_rms_norm.py",
            cwd=suite_dir,
            role=role,  # type: ignore[arg-type]
            k_expr=backend_k_expr(backend),
            backend_token=backend,
            env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        )
        out.append(RoleRun(backend, role, spec))  # type: ignore[arg-type]
    return tuple(out)


def workbench_pair(shards: int, poll: float, work: Path, rr: tuple[RoleRun, ...]) -> dict[str, Any]:
    res: dict[str, Any] = {"shards": shards, "poll_s": poll}
    for mode in ("local", "slurm"):
        out = KernelPaths.under(work / f"{mode}-{time.monotonic_ns()}", "rms_norm")
        req = ScaleoutRequest(
            kernel="rms_norm",
            out=out,
            roles=rr,
            mode=mode,  # type: ignore[arg-type]
            devices=tuple(Device(None) for _ in range(shards)),
            slurm=SlurmOptions(nodes=shards, gpus_per_node=0, poll_s=poll),
        )
        t0 = time.perf_counter()
        result = run_scaled(req)
        res[f"{mode}_s"] = round(time.perf_counter() - t0, 3)
        res[f"{mode}_rc"] = result.rc
        if result.merged is None:
            raise SystemExit(f"{mode} run did not merge: {[s.detail for s in result.statuses.values()]}")
    res["slurm_minus_local_s"] = round(res["slurm_s"] - res["local_s"], 3)
    return res


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", type=int, default=8)
    p.add_argument("--shards", type=int, default=2)
    p.add_argument("--poll", type=float, default=0.5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    if shutil.which("sbatch") is None:
        raise SystemExit("no sbatch on PATH: start the cluster with .ci/slurm-up.sh")
    work = Path(tempfile.mkdtemp(prefix="slurm-overhead-"))
    version = subprocess.run(["sbatch", "--version"], capture_output=True, text=True).stdout.strip()
    nodes = subprocess.run(
        ["sinfo", "-h", "-o", "%n %c CPUs %t"], capture_output=True, text=True
    ).stdout.split("\n")
    report: dict[str, Any] = {
        "slurm": version,
        "nodes": [n for n in nodes if n],
        "trivial": [],
        "workbench": [],
    }
    rr = roles(suite(work))
    for _ in range(args.rounds):
        report["trivial"].append(trivial_array(args.tasks, work))
        report["workbench"].append(workbench_pair(args.shards, args.poll, work, rr))
    print(f"{version}; nodes: {report['nodes']}")
    print("A. trivial array tasks:")
    for r in report["trivial"]:
        print(
            f"   {r['tasks']} tasks: sbatch {r['sbatch_s']:.3f} s, submit->start median {r['submit_to_start_median_s']:.3f} s"
            f" / max {r['submit_to_start_max_s']:.3f} s, last start->drained {r['last_start_to_drained_s']:.3f} s,"
            f" total {r['total_s']:.3f} s"
        )
    print(f"B. workbench plan, {args.shards} shards, watcher poll {args.poll} s:")
    for r in report["workbench"]:
        print(
            f"   local {r['local_s']:.2f} s, slurm {r['slurm_s']:.2f} s, slurm - local {r['slurm_minus_local_s']:.2f} s"
        )
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
