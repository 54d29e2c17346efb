"""Record the profiles' real sessions on a GPU node (``gpu``) and assemble them here (``assemble``).

``python -m scripts.record_profiles gpu --out RAW``: runs each profile suite as a pytest child process with
our plugin (``-sv --print-record -p cutile_workbench.run.plugins.perflog --workbench-events``), one process per
backend so each raw log is exactly what TileGym's stage A/E would tee, with
``CUDA_TILE_DUMP_TILEIR`` set for cuTile runs; also writes ``session.json`` (GPU, driver, versions,
date, commands). Layout of RAW: ``<run>/{log.txt, events.jsonl, tileir/, cmd.json}`` per run.

``python -m scripts.record_profiles assemble RAW``: builds ``profiles/<p>/session/<kernel>/`` in the TileGym
artifact layout (cutile_workbench.artifacts.layout) from RAW: logs, analysis.json, Tile IR picks, launches.json.gz,
events.jsonl.gz, session.json, tileir/ raw dumps. Run on the CPU box after the files came back.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: run name → (suite dir, test class, -k expression, dump Tile IR?)
RUNS: dict[str, tuple[str, str, str, bool]] = {
    "rms_norm.triton": ("rms_norm", "Test_RMSNorm", "triton", False),
    "rms_norm.cutile": ("rms_norm", "Test_RMSNorm", "cutile and not cutile_hotpath", True),
    "rms_norm.cutile_hotpath": ("rms_norm", "Test_RMSNorm", "cutile_hotpath", False),
    "softmax.triton": ("softmax", "Test_Softmax", "triton", False),
    "softmax.cutile": ("softmax", "Test_Softmax", "cutile and not cutile_hotpath and not cutile_row", True),
    "softmax.cutile_row": ("softmax", "Test_Softmax", "cutile_row", True),
}


def _versions() -> dict[str, Any]:
    info: dict[str, Any] = {"python": platform.python_version(), "host": platform.node()}
    for mod in ("torch", "triton", "cuda.tile", "cupti", "numpy", "pytest"):
        try:
            m = __import__(mod, fromlist=["_"])
            info[mod] = getattr(m, "__version__", None)
        except Exception as exc:
            info[mod] = f"unavailable: {type(exc).__name__}"
    try:
        from importlib.metadata import version

        info["cuda-tile"] = version("cuda-tile")
        info["cupti-python"] = version("cupti-python")
    except Exception:
        pass
    try:
        import torch

        info["gpu"] = torch.cuda.get_device_name(0)
        info["torch_cuda"] = torch.version.cuda
        info["sm_count"] = torch.cuda.get_device_properties(0).multi_processor_count
    except Exception as exc:
        info["gpu"] = f"unavailable: {exc}"
    try:
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        info["nvidia_smi"] = smi.stdout.strip()
        info["driver"] = smi.stdout.strip().split(", ")[1] if smi.stdout.count(",") >= 1 else None
    except Exception:
        info["driver"] = None
    return info


def record_gpu(out: Path, runs: list[str], timeout_s: float) -> int:
    out.mkdir(parents=True, exist_ok=True)
    runs_meta: dict[str, Any] = {}
    harness_env = {
        k: os.environ[k]
        for k in sorted(os.environ)
        if k.startswith("WORKBENCH_") or k in ("WARMUP", "REP", "MIN_REP", "MAX_REP")
    }
    session: dict[str, Any] = {
        "recorded_at": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "versions": _versions(),
        "harness_env": harness_env,
        "runs": runs_meta,
    }
    failures = 0
    for name in runs:
        suite, cls, kexpr, dump = RUNS[name]
        run_dir = out / name
        run_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.setdefault("MAX_REP", "200")  # keeps the committed per-launch files small
        if dump:
            env["CUDA_TILE_DUMP_TILEIR"] = str(run_dir / "tileir")
        node = f"profiles/{suite}/test_{suite}.py::{cls}::test_perf"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            node,
            "-k",
            kexpr,
            "-sv",
            "--print-record",
            "-p",
            "cutile_workbench.run.plugins.perflog",
            "--workbench-events",
            str(run_dir / "events.jsonl"),
        ]
        t0 = time.perf_counter()
        with open(run_dir / "log.txt", "w") as log:
            try:
                rc = subprocess.run(
                    cmd,
                    cwd=ROOT / "cutile_workbench",
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=timeout_s,
                ).returncode
            except subprocess.TimeoutExpired:
                rc = -9
        wall = time.perf_counter() - t0
        failures += rc != 0
        shown = [
            "python",
            "-m",
            "pytest",
            node,
            "-k",
            f'"{kexpr}"',
            "-sv",
            "--print-record",
            "-p",
            "cutile_workbench.run.plugins.perflog",
            "--workbench-events",
            "events.jsonl",
        ]
        meta = {
            "cmd": " ".join(shown),
            "rc": rc,
            "wall_s": round(wall, 2),
            "MAX_REP": env["MAX_REP"],
            "CUDA_TILE_DUMP_TILEIR": bool(dump),
        }
        (run_dir / "cmd.json").write_text(json.dumps(meta, indent=1))
        runs_meta[name] = meta
        print(f"[record] {name}: rc={rc} wall={wall:.1f}s", flush=True)
    (out / "session.json").write_text(json.dumps(session, indent=1))
    return failures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.record_profiles")
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gpu")
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--runs", default=",".join(RUNS))
    g.add_argument("--timeout", type=float, default=240.0)
    a = sub.add_parser("assemble")
    a.add_argument("raw", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "gpu":
        return 1 if record_gpu(args.out, args.runs.split(","), args.timeout) else 0
    from scripts.assemble_profiles import assemble_all

    assemble_all(args.raw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
