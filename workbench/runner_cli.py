"""CLI commands ``run`` (a live benchmark run) and ``timeline`` (launches per call of one config).

Contract:
- ``cutile-workbench run <kernel> [--tilegym DIR] [--out-root DIR] [--backend B ...] [-k EXPR]
  [--timeout S]`` runs a built-in profile's suite (or TileGym's ``tests/ops/test_<kernel>.py``
  with ``--tilegym``) through :mod:`workbench.runner`, one child run per backend, printing one line
  per finished config, then lays the results into ``<out-root>/<kernel>/`` (``write_results``).
  Backends map to layout roles: the candidate → ``reports/agent_logs/perf_cutile_rs.full.txt``,
  ``cutile`` → ``baseline_perf_cutile.txt``, ``triton*`` → ``baseline_perf_triton_tileir.txt``;
  any other backend has no slot in the TileGym layout and is refused (exit 2).
  Without a GPU (``nvidia-smi`` absent/failing **and** ``torch.cuda`` unavailable in the child
  Python) it says so, points at the profile's recorded session, and exits 2.
  Exit: 0 every config passed or skipped; 1 some config failed or did not run (results are still
  written); 2 bad input / no GPU / cancelled (Ctrl-C: nothing written; the live log stays in
  ``workbench/runs/``).
- ``cutile-workbench timeline <kernel> --config <params> [--backend B] [--out-root DIR]
  [--json | --perfetto FILE [--force]]`` reads ``workbench/launches.json.gz`` of the kernel dir
  (else the profile's recorded session) and prints launches per call and per-launch times per
  backend; ``--json`` is machine-readable; ``--perfetto`` writes Chrome-trace JSON atomically and
  refuses to replace an existing file that is not JSON unless ``--force``. An unknown config exits
  2 listing close matches.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from workbench.errors import InputError, WorkbenchError
from workbench.events import Event
from workbench.layout import KernelPaths
from workbench.model import LaunchSet
from workbench.runner import (
    PACKAGE_ROOT,
    Role,
    RunResult,
    RunSpec,
    backend_k_expr,
    raw_log_destination,
    run,
    write_results,
)
from workbench.scaleout import console as scaleout  # issue #13: --gpus / --slurm
from workbench.testids import id_token, split_nodeid

# --------------------------------------------------------------------------- registration


def register(commands: Any, report_commands: Any = None) -> None:
    """Add ``run`` and ``timeline`` to the ``cutile-workbench`` sub-command parser."""
    p = commands.add_parser(
        "run", help="run a kernel's perf suite live (profile or TileGym) and write the results",
        description=__doc__.split("- ``cutile-workbench timeline")[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("kernel", help="profile name (see profiles/) or TileGym kernel (with --tilegym)")
    # SUPPRESS: these may also come before the sub-command (cutile-workbench's global flags).
    p.add_argument("--tilegym", metavar="DIR", default=argparse.SUPPRESS,
                   help="run TileGym's tests/ops/test_<kernel>.py from this checkout (only when given)")
    p.add_argument("--out-root", metavar="DIR", default=argparse.SUPPRESS,
                   help="artifact root (default: $CUTILE_KERNEL_OUT_ROOT)")
    p.add_argument("--backend", "-b", action="append", metavar="B",
                   help="backend (record key, e.g. cutile, triton, cutile-rs); repeatable; "
                        "default: the profile's candidate and baseline (TileGym: cutile-rs)")
    p.add_argument("-k", dest="k_expr", metavar="EXPR", help="pytest -k config filter, ANDed with the backend")
    p.add_argument("--timeout", type=float, default=600.0, metavar="S",
                   help="kill a test that makes no progress for S seconds (default 600, TileGym's --timeout)")
    p.add_argument("--total-timeout", type=float, default=None, metavar="S", help="wall limit of each backend's run")
    p.add_argument("--python", default=sys.executable, help="Python of the child pytest (default: this one)")
    p.add_argument("--env", action="append", default=[], metavar="K=V",
                   help="extra environment for the child, e.g. CUPTI=1 WARMUP=100 REP=50 MIN_REP=2")
    harness = p.add_mutually_exclusive_group()
    harness.add_argument("--harness", dest="tilegym_harness", action="store_false",
                         help="measure with the workbench CUPTI harness (the default): per-launch data, "
                              "raw samples, bootstrap CIs, a CUDA-event self-check per config")
    harness.add_argument("--tilegym-harness", dest="tilegym_harness", action="store_true",
                         help="measure with TileGym's own benchmark_fn_cupti (torch.profiler per sample; "
                              "medians only, no per-launch timeline)")
    p.set_defaults(tilegym_harness=False)
    p.add_argument("--dump-ir", action="store_true",
                   help="dump the Tile IR both sides compile (cutile-rs CUTILE_DUMP=ir, cuTile "
                        "CUDA_TILE_DUMP_TILEIR) and file it per config under <kernel>/workbench/ir/")
    p.add_argument("--suite", metavar="FILE", help="run this TileGym-convention test file instead of the profile's")
    p.add_argument("--skip-gpu-check", action="store_true",
                   help="run even where no GPU is visible (CPU-only suites, replays)")
    scaleout.add_arguments(p)  # scale-out flags (issue #13): see the block in cmd_run
    p.set_defaults(func=cmd_run)

    t = commands.add_parser("timeline", help="launches per call and per-launch times of one config")
    t.add_argument("kernel")
    t.add_argument("--config", required=True, metavar="PARAMS",
                   help="the params string of a config, e.g. 16384-2048-torch.bfloat16")
    t.add_argument("--backend", "-b", action="append", metavar="B", help="only these backends (repeatable)")
    t.add_argument("--out-root", metavar="DIR", default=argparse.SUPPRESS,
                   help="artifact root (default: $CUTILE_KERNEL_OUT_ROOT, then the profile's recorded session)")
    fmt = t.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="machine-readable output")
    fmt.add_argument("--perfetto", metavar="FILE", help="write Chrome-trace JSON (opens in ui.perfetto.dev)")
    t.add_argument("--force", action="store_true", help="with --perfetto: replace an existing non-JSON file")
    t.set_defaults(func=cmd_timeline)


# --------------------------------------------------------------------------- run


@dataclass(frozen=True)
class BackendRun:
    backend: str  # record key, e.g. "cutile-rs"
    role: Role
    spec: RunSpec


def role_for_backend(backend: str, candidate: str) -> Role:
    """Layout slot of a backend's raw log; InputError for a backend without one."""
    if backend == candidate:
        return "candidate"
    if backend == "cutile":
        return "baseline_cutile"
    if backend.startswith("triton"):
        return "baseline_triton_tileir"
    raise InputError(
        f"backend {backend!r} has no slot in the TileGym layout (candidate is {candidate!r}; baselines: "
        "cutile → baseline_perf_cutile.txt, triton → baseline_perf_triton_tileir.txt)", key="--backend")


def _parse_env(items: Sequence[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise InputError(f"--env expects KEY=VALUE, got {item!r}", key="--env")
        env[key] = value
    return env


def _out_root(arg: str | None) -> Path:
    root = arg or os.environ.get("CUTILE_KERNEL_OUT_ROOT")
    if not root:
        raise InputError("no artifact root: pass --out-root DIR or set CUTILE_KERNEL_OUT_ROOT", key="--out-root")
    return Path(root)


def _tilegym_target(tilegym: Path, kernel: str) -> tuple[str, str | None]:
    """``tests/ops/test_<kernel>.py::<Class>::test_perf`` (or the file + a -k when several classes)."""
    ops = tilegym / "tests" / "ops"
    test_file = ops / f"test_{kernel}.py"
    if not test_file.is_file():
        known = sorted(p.stem[5:] for p in ops.glob("test_*.py")) if ops.is_dir() else []
        close = difflib.get_close_matches(kernel, known, n=5)
        hint = f"; close matches: {', '.join(close)}" if close else ""
        raise InputError(f"no TileGym test file for kernel {kernel!r}{hint}", path=test_file)
    classes: list[str] = []
    current: str | None = None
    for line in test_file.read_text(encoding="utf-8", errors="replace").splitlines():
        m = re.match(r"class (\w+)", line)
        if m:
            current = m.group(1)
        elif current and re.match(r"\s+def test_perf\(", line) and current not in classes:
            classes.append(current)
    rel = test_file.relative_to(tilegym).as_posix()
    if len(classes) == 1:
        return f"{rel}::{classes[0]}::test_perf", None
    if not classes:
        raise InputError("no test_perf in this TileGym test file", path=test_file)
    return rel, "test_perf and not test_perf_llm"


def plan_runs(args: argparse.Namespace) -> tuple[list[BackendRun], KernelPaths, Path | None]:
    """Turn CLI args into one RunSpec per backend (no process started). Raises InputError."""
    out = KernelPaths.under(_out_root(getattr(args, "out_root", None)), args.kernel)
    env = _parse_env(args.env)
    recorded: Path | None = None
    tilegym_arg = getattr(args, "tilegym", None)
    if tilegym_arg:
        tilegym = Path(tilegym_arg).resolve()
        if not tilegym.is_dir():
            raise InputError("TileGym checkout not found", path=tilegym, key="--tilegym")
        target, extra_k = _tilegym_target(tilegym, args.kernel)
        if args.suite:
            target, extra_k = args.suite, None
        candidate = "cutile-rs"
        backends = args.backend or [candidate]
        cwd = tilegym
    else:
        from profiles import get_profile, get_recorded_tilegym, list_profiles

        profile = get_profile(args.kernel)
        recorded_tg = get_recorded_tilegym(args.kernel)
        if profile is None and not args.suite and recorded_tg is not None:
            raise InputError(
                f"{args.kernel!r} is a recorded run of TileGym's own {recorded_tg.test} (real cutile-rs); "
                "re-run it with --tilegym DIR: a TileGym checkout whose cutile-rs library is built "
                "(README: 'Running against real cutile-rs')", key="kernel")
        if profile is None and not args.suite:
            names = [p.kernel for p in list_profiles()]
            close = difflib.get_close_matches(args.kernel, names, n=5)
            raise InputError(
                f"no profile {args.kernel!r} (known: {', '.join(names)})"
                + (f"; did you mean {', '.join(close)}?" if close else "")
                + "; use --tilegym DIR to run TileGym's own tests", key="kernel")
        candidate = profile.candidate if profile else (args.backend or ["cutile"])[0]
        backends = args.backend or ([profile.candidate, profile.baseline] if profile else [candidate])
        target = str(Path(args.suite).resolve()) if args.suite else str(profile.suite) if profile else ""
        extra_k = None
        cwd = Path(args.suite).resolve().parent if args.suite else PACKAGE_ROOT
        recorded = profile.kernel_dir if profile else None
    user_k = " and ".join(f"({k})" for k in (extra_k, args.k_expr) if k) or None
    runs: list[BackendRun] = []
    seen: dict[str, str] = {}
    for backend in dict.fromkeys(backends):  # keep order, drop repeats
        role = role_for_backend(backend, candidate)
        if role in seen:
            raise InputError(f"backends {seen[role]!r} and {backend!r} both map to {role}", key="--backend")
        seen[role] = backend
        token = id_token(backend)
        spec_env = dict(env)
        if tilegym_arg and role == "candidate":
            spec_env.setdefault("DISABLE_FALLBACK", "1")  # a silent fallback must fail, not be measured
        runs.append(BackendRun(backend, role, RunSpec(
            kernel=args.kernel, test_target=target, k_expr=backend_k_expr(token, user_k), cwd=cwd, role=role,
            python=args.python, env=spec_env, workbench_harness=not args.tilegym_harness,
            dump_ir_dir=str(out.workbench_dir / "tileir_raw" / role) if args.dump_ir else None,
            per_test_timeout_s=args.timeout, total_timeout_s=args.total_timeout, backend_token=token,
        )))
    return runs, out, recorded


def gpu_probe(python: str) -> tuple[bool, str]:
    """``(present, how we know)``: nvidia-smi first, then ``torch.cuda`` in the child Python."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            proc = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20)
            if proc.returncode == 0 and "GPU" in proc.stdout:
                return True, proc.stdout.strip().splitlines()[0]
            smi_note = f"nvidia-smi -L failed (exit {proc.returncode})"
        except (OSError, subprocess.TimeoutExpired) as exc:
            smi_note = f"nvidia-smi failed ({exc})"
    else:
        smi_note = "nvidia-smi not found"
    code = "import torch, sys; sys.stdout.write(str(torch.cuda.is_available()))"
    try:
        proc = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
        if proc.returncode == 0 and proc.stdout.strip() == "True":
            return True, f"torch.cuda is available in {python}"
        torch_note = ("torch.cuda.is_available() is False" if proc.returncode == 0
                      else "torch is not importable") + f" in {python}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        torch_note = f"cannot run {python} ({exc})"
    return False, f"{smi_note}; {torch_note}"


class _Progress:
    """One line per finished config; called from the runner's dispatcher thread."""

    def __init__(self, backend: str, stream: TextIO) -> None:
        self.backend = backend
        self.stream = stream
        self.total = 0
        self.done = 0
        self.medians: dict[str, tuple[float | None, int | None]] = {}
        self._lock = threading.Lock()

    def __call__(self, ev: Event) -> None:
        with self._lock:
            if ev.event == "collected" and not self.total:
                self.total = len(ev.get("nodeids") or [])
            elif ev.event == "record":
                self.medians[str(ev.get("nodeid"))] = _median_and_launches(ev)
            elif ev.event == "test_finish":
                self.done += 1
                nodeid = str(ev.get("nodeid"))
                params = split_nodeid(nodeid)[2] or nodeid
                outcome = str(ev.get("outcome", "?")).upper()
                median, launches = self.medians.get(nodeid, (None, None))
                extra = ""
                if median is not None:
                    extra = f"  {median * 1000:10.2f} us"
                    if launches is not None:
                        extra += f"  {launches} launch{'es' if launches != 1 else ''}/call"
                elif ev.get("source") == "runner":
                    extra = "  (killed/crashed; see the reason below)"
                width = len(str(self.total or "?"))
                self.stream.write(f"[{self.done:>{width}}/{self.total or '?'}] {self.backend:<14} {params:<40} "
                                  f"{outcome:<7}{extra}\n")
            elif ev.event == "runner_resume":
                self.stream.write(f"    … resuming with {len(ev.get('remaining') or [])} config(s) left\n")
            self.stream.flush()


def _median_and_launches(ev: Event) -> tuple[float | None, int | None]:
    bench = ev.get("benchmark") or {}
    rec = bench.get(ev.get("framework")) if isinstance(bench, dict) else None
    fwd = rec.get("forward") if isinstance(rec, dict) else None
    if not isinstance(fwd, dict):
        return None, None
    median = fwd.get("median")
    launches = fwd.get("launches_per_call")
    times = fwd.get("kernel_times")
    if isinstance(times, list) and times:
        with contextlib.suppress(TypeError):
            launches = sum(int(k.get("count", 0)) for k in times if isinstance(k, dict))
    return (float(median) if isinstance(median, (int, float)) else None,
            int(launches) if isinstance(launches, int) else None)


def cmd_run(args: argparse.Namespace, stream: TextIO | None = None) -> int:
    out_stream = stream or sys.stdout
    try:
        runs, out, recorded = plan_runs(args)
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    # ---- scale-out block (issue #13) — port as-is: flags → typed request → one call into the core.
    # --gpus pins one worker per GPU itself (nvidia-smi), --slurm runs on compute nodes: no probe here.
    if scaleout.wanted(args):
        try:
            request = scaleout.request_from_args(args, runs, out)
        except WorkbenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return exc.exit_code
        return scaleout.run_console(request, out_stream)
    # ---- end of the scale-out block
    if not args.skip_gpu_check:
        present, how = gpu_probe(args.python)
        if not present:
            print(f"No GPU on this machine: {how}.", file=sys.stderr)
            if recorded is not None:
                rel = _display_path(recorded)
                root = _display_path(recorded.parent)
                print(f"A recorded real H200 session of {args.kernel} is at {rel} (see its README); "
                      f"open it with: cutile-workbench --out-root {root} {args.kernel}  (or: cutile-workbench "
                      f"timeline {args.kernel} --config <params>)", file=sys.stderr)
            print("(--skip-gpu-check runs anyway, for CPU-only suites.)", file=sys.stderr)
            return 2
    worst = 0
    for br in runs:
        out_stream.write(f"== {args.kernel}: {br.backend} ({br.role}) — {br.spec.test_target}"
                         f"{' -k ' + repr(br.spec.k_expr) if br.spec.k_expr else ''}\n")
        out_stream.flush()
        result = _run_with_ctrl_c(br, out, out_stream)
        if result is None or result.cancelled:
            print(f"cancelled; nothing written (live log: {out.workbench_dir / 'runs' / (br.role + '.raw.log')})",
                  file=sys.stderr)
            return 2
        for nodeid, reason in result.failed.items():
            out_stream.write(f"    FAILED {split_nodeid(nodeid)[2] or nodeid}: {reason}\n")
        for nodeid, reason in result.not_run.items():
            out_stream.write(f"    not run {split_nodeid(nodeid)[2] or nodeid}: {reason}\n")
        for note in result.notes:
            out_stream.write(f"    note: {note}\n")
        if not result.collected:
            out_stream.write(f"    nothing selected (pytest rc {result.rc}):\n")
            out_stream.write("".join(f"      {ln}\n" for ln in result.collect_output.strip().splitlines()[-15:]))
            worst = max(worst, 2)
            continue
        try:
            write_results(result, br.spec, out)
        except WorkbenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return exc.exit_code
        out_stream.write(f"    {result.summary_line()}; log: {_display_path(raw_log_destination(br.role, out))}\n")
        if not any(e.event == "record" for e in result.events):
            out_stream.write(f"    warning: no config of {br.backend} produced a benchmark record "
                             f"(E would have no {'candidate' if br.role == 'candidate' else 'baseline'} medians)\n")
            worst = max(worst, 1)
        out_stream.flush()
        if result.failed or result.not_run or result.rc != 0:
            worst = max(worst, 1)
    return worst


def _run_with_ctrl_c(br: BackendRun, out: KernelPaths, stream: TextIO) -> RunResult | None:
    """Run in a worker thread so Ctrl-C becomes a clean cancel (child group killed, no write)."""
    cancel = threading.Event()
    box: dict[str, Any] = {}
    progress = _Progress(br.backend, stream)

    def work() -> None:
        try:
            box["result"] = run(br.spec, out, on_event=progress, cancel=cancel)
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=work, name="runner", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(timeout=0.2)
    except KeyboardInterrupt:
        cancel.set()
        worker.join()
        return None
    if "error" in box:
        raise box["error"]
    result: RunResult = box["result"]
    return result


def _display_path(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


# --------------------------------------------------------------------------- timeline


def find_launches(kernel: str, out_root: str | None) -> tuple[Path, Path | None]:
    """``(launches file, session.json or None)``: the out-root kernel dir first, then the recording."""
    looked: list[str] = []
    root = out_root or os.environ.get("CUTILE_KERNEL_OUT_ROOT")
    if root:
        kp = KernelPaths.under(Path(root), kernel)
        if kp.launches_json.is_file():
            return kp.launches_json, kp.session_json if kp.session_json.is_file() else None
        looked.append(str(kp.launches_json))
    if not out_root:
        from profiles import get_profile

        profile = get_profile(kernel)
        if profile is not None:
            kp = KernelPaths.under(profile.session_root, kernel)
            if kp.launches_json.is_file():
                return kp.launches_json, kp.session_json if kp.session_json.is_file() else None
            looked.append(str(kp.launches_json))
    raise InputError(f"no per-launch captures for {kernel!r} (looked at: {', '.join(looked) or 'nothing'}); "
                     "run `cutile-workbench run --harness` on a GPU node first", key="kernel")


def _roles(session_json: Path | None, kernel: str) -> dict[str, str]:
    """backend record key → "candidate"/"baseline" from session.json (else the profile)."""
    roles: dict[str, str] = {}
    if session_json is not None:
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(session_json.read_text(encoding="utf-8"))
            for role, meta in (data.get("runs") or {}).items():
                token = meta.get("backend_token") if isinstance(meta, dict) else None
                if isinstance(token, str):
                    roles[token] = "candidate" if role == "candidate" else "baseline"
            for key in ("candidate", "baseline"):
                value = data.get(key) or data.get(f"{key}_backend")
                if isinstance(value, str):
                    roles.setdefault(id_token(value), key)
    if not roles:
        with contextlib.suppress(ImportError):
            from profiles import get_profile

            profile = get_profile(kernel)
            if profile is not None:
                roles[id_token(profile.candidate)] = "candidate"
                roles[id_token(profile.baseline)] = "baseline"
    return roles


def _stats(values: Sequence[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)} if values else {}


def summarize_set(s: LaunchSet, role: str) -> dict[str, Any]:
    """Launches per call, device time per call and per-kernel per-launch times (µs) of one set."""
    per_call = [len(c.launches) for c in s.calls]
    device_us = [c.device_time_ns / 1000.0 for c in s.calls]
    kernels: dict[str, dict[str, Any]] = {}
    for c in s.calls:
        counts: dict[str, int] = {}
        for x in c.launches:
            k = kernels.setdefault(x.display_name, {
                "name": x.display_name, "kind": x.kind, "durations_us": [], "counts": [],
                "grid": list(x.grid) if x.grid else None, "block": list(x.block) if x.block else None,
                "registers_per_thread": x.registers_per_thread,
                "shared_memory_bytes": (None if x.static_smem is None and x.dynamic_smem is None
                                        else (x.static_smem or 0) + (x.dynamic_smem or 0)),
            })
            k["durations_us"].append(x.duration_ns / 1000.0)
            counts[x.display_name] = counts.get(x.display_name, 0) + 1
        for name in kernels:
            kernels[name]["counts"].append(counts.get(name, 0))
    rows = []
    for k in kernels.values():
        rows.append({
            "name": k["name"], "kind": k["kind"],
            "launches_per_call": statistics.median(k["counts"]) if k["counts"] else 0,
            "per_launch_us": _stats(k["durations_us"]),
            "grid": k["grid"], "block": k["block"], "registers_per_thread": k["registers_per_thread"],
            "shared_memory_bytes": k["shared_memory_bytes"],
        })
    rows.sort(key=lambda r: -(r["per_launch_us"].get("median", 0.0) * r["launches_per_call"]))
    return {
        "backend": s.backend, "role": role, "nodeid": s.nodeid, "params": s.params, "source": s.source,
        "calls": len(s.calls), "launches_per_call": _stats([float(n) for n in per_call]),
        "device_time_per_call_us": _stats(device_us), "kernels": rows,
        "no_launch_data": s.source == "events",
    }


def _select(sets: list[LaunchSet], config: str, backends: list[str] | None, path: Path) -> list[LaunchSet]:
    chosen = [s for s in sets if s.params == config or s.nodeid == config]
    if not chosen:
        known = sorted({s.params for s in sets})
        close = difflib.get_close_matches(config, known, n=6, cutoff=0.4)
        close += [k for k in known if config in k and k not in close][:6]
        raise InputError(
            f"unknown config {config!r}" + (f"; close matches: {', '.join(close)}" if close else "")
            + f" ({len(known)} configs recorded)", path=path, key="--config")
    if backends:
        want = {id_token(b) for b in backends}
        picked = [s for s in chosen if id_token(s.backend) in want]
        if not picked:
            have = sorted({s.backend for s in chosen})
            raise InputError(f"no captures of backend(s) {', '.join(backends)} for {config!r} "
                             f"(have: {', '.join(have)})", path=path, key="--backend")
        chosen = picked
    return chosen


def render_timeline_text(kernel: str, config: str, source: str, summaries: list[dict[str, Any]]) -> str:
    lines = [f"{kernel}  {config}   (from {source})", ""]
    head = f"{'backend':<16}{'role':<11}{'calls':>6}{'launches/call':>15}{'device us/call':>16}  (median; min-max)"
    lines.append(head)
    for s in summaries:
        lpc, dev = s["launches_per_call"], s["device_time_per_call_us"]
        lpc_txt = f"{lpc['median']:g}" + (f" ({lpc['min']:g}-{lpc['max']:g})" if lpc and lpc["min"] != lpc["max"] else "") \
            if lpc else "-"
        dev_txt = f"{dev['median']:.2f} ({dev['min']:.2f}-{dev['max']:.2f})" if dev else "-"
        flag = "  NO LAUNCH DATA (CUDA events only)" if s["no_launch_data"] else ""
        lines.append(f"{s['backend']:<16}{s['role']:<11}{s['calls']:>6}{lpc_txt:>15}  {dev_txt:>22}{flag}")
    cand = next((s for s in summaries if s["role"] == "candidate" and s["device_time_per_call_us"]), None)
    base = next((s for s in summaries if s["role"] == "baseline" and s["device_time_per_call_us"]), None)
    if cand and base and base["device_time_per_call_us"]["median"] > 0:
        ratio = cand["device_time_per_call_us"]["median"] / base["device_time_per_call_us"]["median"]
        c_l, b_l = cand["launches_per_call"]["median"], base["launches_per_call"]["median"]
        verdict = ("extra launches per call: wrapper/host work (F: FIXABLE pattern)" if c_l > b_l
                   else "same launch count: compare per-launch kernel time, config and IR")
        lines += ["", f"candidate/baseline device time per call: {ratio:.2f}x; launches/call {c_l:g} vs {b_l:g}"
                      f" → {verdict}"]
    for s in summaries:
        lines += ["", f"{s['backend']} ({s['role']}): per launch, µs"]
        lines.append(f"  {'kernel':<48}{'kind':<8}{'n/call':>7}{'median':>10}{'min':>10}{'max':>10}"
                     f"  {'grid':<16}{'block':<14}{'regs':>5}{'smem':>9}")
        for k in s["kernels"]:
            pl = k["per_launch_us"]
            name = k["name"] if len(k["name"]) <= 47 else k["name"][:44] + "..."
            grid = "x".join(map(str, k["grid"])) if k["grid"] else "-"
            block = "x".join(map(str, k["block"])) if k["block"] else "-"
            regs = str(k["registers_per_thread"]) if k["registers_per_thread"] is not None else "-"
            smem = str(k["shared_memory_bytes"]) if k["shared_memory_bytes"] is not None else "-"
            lines.append(f"  {name:<48}{k['kind']:<8}{k['launches_per_call']:>7g}{pl.get('median', 0):>10.2f}"
                         f"{pl.get('min', 0):>10.2f}{pl.get('max', 0):>10.2f}  {grid:<16}{block:<14}{regs:>5}{smem:>9}")
    return "\n".join(lines) + "\n"


def write_perfetto(path: Path, trace: dict[str, Any], *, force: bool) -> None:
    """Atomic write of a Chrome trace; an existing non-JSON file is only replaced with ``force``."""
    path = Path(path)
    if path.is_dir():
        raise InputError("is a directory", path=path, key="--perfetto")
    if path.exists() and not force:
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            raise InputError("exists and is not JSON; refusing to replace it (use --force)",
                             path=path, key="--perfetto") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(trace, fh, separators=(",", ":"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def cmd_timeline(args: argparse.Namespace, stream: TextIO | None = None) -> int:
    out_stream = stream or sys.stdout
    try:
        from workbench.launches_io import load_launch_sets, to_chrome_trace

        path, session_json = find_launches(args.kernel, getattr(args, "out_root", None))
        sets = load_launch_sets(path)
        chosen = _select(sets, args.config, args.backend, path)
        roles = _roles(session_json, args.kernel)
        order = {"candidate": 0, "baseline": 1}
        chosen.sort(key=lambda s: (order.get(roles.get(id_token(s.backend), ""), 2), s.backend))
        summaries = [summarize_set(s, roles.get(id_token(s.backend), "-")) for s in chosen]
        if args.perfetto:
            write_perfetto(Path(args.perfetto), to_chrome_trace(chosen), force=args.force)
            out_stream.write(f"wrote {args.perfetto}: {sum(len(c.launches) for s in chosen for c in s.calls)} "
                             f"launches of {len(chosen)} backend(s); open it in https://ui.perfetto.dev\n")
            return 0
        if args.json:
            json.dump({"kernel": args.kernel, "config": args.config, "source": str(path),
                       "backends": summaries}, out_stream, indent=2)
            out_stream.write("\n")
            return 0
        out_stream.write(render_timeline_text(args.kernel, args.config, _display_path(path), summaries))
        return 0
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
