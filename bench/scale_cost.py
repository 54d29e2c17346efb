"""Cost as a session grows: wall time and peak RSS per command on the REAL matmul session scaled to N configs.

Run:  python bench/scale_cost.py [--configs 10 100 1000 10000] [--runs 10 100 1000] [--reps 5]
                                 [--big-only timeline,help] [--out bench/data/scale_cost.json]

Sessions (built under a temp dir, never in the repo): the REAL recorded H200 matmul session
(``cutile_workbench/profiles/tilegym/session/matmul``: 6 configs, CUPTI samples, per-launch captures, events) is
replicated to N configs — each replica is one of the 6 real configs, its test blocks in the raw
candidate log and the baseline log, its analysis.json selection and variant, its events and its
launch sets copied verbatim with a distinct params string (the 10th id token, ``0`` in the recording,
becomes the replica number: same shape, same samples). That is what a real run of that size writes.
The captures are written as the runner writes them now (``cutile_workbench.artifacts.launch_store``: one gzip member
per set + index); ``timeline-legacy`` times the first open of today's single-member file (converted
once into the user cache dir) and ``timeline-legacy-warm`` the opens after it. The per-config IR files
stay the 6 recorded ones.

History (``--runs``): the REAL recorded matmul session plus N-1 derived cutile-rs runs (resampled from
its real samples: ``tests/history_helpers.derived_entry``, as bench/history_load.py), then
``cutile-workbench history matmul --json``: a cold read (comparisons computed and cached in the history
store) and a warm one.

Each measurement is one fresh process (``python -c`` → ``cutile_workbench.cli.main(argv)``, stdout discarded):
wall = process start to exit, CPU = the child's user+system time (steadier than wall on a loaded box),
peak RSS = the child's ``VmHWM``. ``tui`` = what ``run_app`` does (the quick first screen of
``loaders.quick_app_data`` where the tree has it, else ``load_app_data``) + the Ratios screen's first
frame (160x48): ``first_paint_s`` = process start to the ratios on screen, ``loaded_s`` = to the whole
session shown (the same instant for a tree that loads everything first). Medians of ``--reps`` per cell, all commands of one N run
interleaved (rep by rep) so the box's load hits them alike. Growth: the least-squares exponent k of
wall ≈ c·N^k over the sizes measured. Raw data → ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

SOURCE = REPO / "cutile_workbench" / "profiles" / "tilegym" / "session" / "matmul"
CANDIDATE_LOG = "reports/agent_logs/perf_cutile_rs.full.txt"
BASELINE_LOG = "baseline_perf_cutile.txt"

_CHILD = r"""
import contextlib, io, json, os, resource, sys, time
T0 = time.perf_counter()
sys.setrecursionlimit(10000)
spec = json.loads(sys.argv[1])
out = {}
def report():
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec (it would report the parent's peak)
    hwm = next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
    out["maxrss_mib"] = int(hwm.split()[1]) / 1024
    ru = resource.getrusage(resource.RUSAGE_SELF)
    out["cpu_s"] = ru.ru_utime + ru.ru_stime
    print("BENCH " + json.dumps(out), flush=True)
if spec["kind"] == "floor":  # the floor: parse both logs, each config's forward median (no workbench code)
    import statistics
    for rel in spec["logs"]:
        medians = {}
        with open(os.path.join(spec["kdir"], rel), encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("record_json: "):
                    doc = json.loads(line[13:])
                    for fw in doc["benchmark"].values():
                        fwd = fw.get("forward") or {}
                        if fwd.get("samples"):
                            medians[doc["params"]] = statistics.median(fwd["samples"])
        out[rel] = len(medians)
    out["rc"] = 0
    report()
elif spec["kind"] == "cli":
    from cutile_workbench.cli import main
    sink = open(os.devnull, "w")
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(io.StringIO()) as err:
        out["rc"] = main(spec["argv"])
    out["stderr_tail"] = err.getvalue()[-300:]
    report()
else:  # tui: what run_app does: load (the quick first screen where the tree has it) + first frame
    import asyncio
    async def run():
        from cutile_workbench.tui import loaders
        from cutile_workbench.tui.app import make_app
        from pathlib import Path
        root = Path(spec["root"])
        quick = getattr(loaders, "quick_app_data", None)  # absent in trees before the progressive open
        data = (quick("matmul", out_root=root, tilegym=None, env={}) if quick else None) or loaders.load_app_data(
            "matmul", out_root=root, tilegym=None, env={})
        out["progressive"] = getattr(data, "full_loader", None) is not None
        app = make_app(data)
        async with app.run_test(size=(160, 48)):
            while app.first_paint_at is None:
                await asyncio.sleep(0.001)
            out["first_paint_s"] = app.first_paint_at - T0  # the ratios on screen
            out["rows"] = len(data.table.rows) if data.table else 0
            while getattr(app, "session_loading", False):  # the rest of the session in (its worker)
                await asyncio.sleep(0.005)
            out["loaded_s"] = time.perf_counter() - T0  # everything shown (= first_paint_s before)
            out["rc"] = 0
            report()
            os._exit(0)  # measured: the app's teardown is not part of the first paint
    asyncio.run(run())
"""


def _replica_params(params: str, r: int) -> str:
    if r == 0:
        return params
    head, sep, tail = params.rpartition("-0-torch.")
    if not sep:
        raise SystemExit(f"unexpected matmul params {params!r}")
    return f"{head}-{r}-torch.{tail}"


def _scale_log(text: str, params: list[str], n: int) -> str:
    """Replicate the per-test blocks of a raw pytest log to n configs (see module doc)."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, ln in enumerate(lines) if ln.startswith("tests/") and "::test_perf[" in ln]
    end = next(i for i in range(starts[-1], len(lines)) if lines[i].startswith("===="))
    head, tail = "".join(lines[: starts[0]]), "".join(lines[end:])
    blocks = ["".join(lines[a:b]) for a, b in zip(starts, [*starts[1:], end], strict=True)]
    by_params = {}
    for block in blocks:
        p = next(p for p in params if f"-{p}]" in block.splitlines()[0])
        by_params[p] = block
    body = []
    for j in range(n):
        p = params[j % len(params)]
        body.append(by_params[p].replace(p, _replica_params(p, j // len(params))))
    count = len(blocks)
    head = head.replace(f"/ {count} selected", f"/ {n} selected")
    tail = tail.replace(f" {count} passed", f" {n} passed")
    return head + "".join(body) + tail


def build_session(root: Path, n: int) -> tuple[Path, str]:
    """The scaled kernel dir ``root/matmul``; returns it and one config's params."""
    from cutile_workbench.artifacts.launch_store import write_store
    from cutile_workbench.artifacts.launches_io import load_launch_sets
    from cutile_workbench.model import LaunchSet

    kdir = root / "matmul"
    shutil.copytree(SOURCE, kdir)
    analysis = json.loads((kdir / "reference/analysis.json").read_text())
    params = list(analysis["config_to_variant"])
    for rel in (CANDIDATE_LOG, BASELINE_LOG):
        (kdir / rel).write_text(_scale_log((SOURCE / rel).read_text(), params, n))
    shapes = analysis["test_perf_configs"]["all"]["shapes"]
    by_p = {p: next(s for s in shapes if s["id"].endswith(p)) for p in params}
    analysis["test_perf_configs"]["all"]["shapes"] = [
        {
            **by_p[params[j % 6]],
            "id": by_p[params[j % 6]]["id"].replace(params[j % 6], _replica_params(params[j % 6], j // 6)),
        }
        for j in range(n)
    ]
    analysis["config_to_variant"] = {
        _replica_params(params[j % 6], j // 6): analysis["config_to_variant"][params[j % 6]] for j in range(n)
    }
    (kdir / "reference/analysis.json").write_text(json.dumps(analysis, indent=1))
    # events: the lines naming a config are replicated with it
    ev_lines = (SOURCE / "workbench/events.jsonl").read_text().splitlines(keepends=True)
    named = [i for i, ln in enumerate(ev_lines) if any(p in ln for p in params)]
    head, tail = ev_lines[: named[0]], ev_lines[named[-1] + 1 :]
    per_p: dict[str, list[str]] = {p: [] for p in params}
    for ln in ev_lines[named[0] : named[-1] + 1]:
        hit = [p for p in params if p in ln]
        for p in hit[:1]:
            per_p[p].append(ln)
    body = [
        ln.replace(params[j % 6], _replica_params(params[j % 6], j // 6))
        for j in range(n)
        for ln in per_p[params[j % 6]]
    ]
    (kdir / "workbench/events.jsonl").write_text("".join(head + body + tail))
    # captures: replicated sets, written as the runner writes them; the legacy file kept beside for timing
    sets = load_launch_sets(SOURCE / "workbench/launches.json.gz")

    def scaled() -> list[LaunchSet]:
        out = []
        for j in range(n):
            p, r = params[j % 6], j // 6
            for s in sets:
                if s.params == p:
                    out.append(
                        LaunchSet(
                            nodeid=s.nodeid.replace(p, _replica_params(p, r)),
                            backend=s.backend,
                            params=_replica_params(p, r),
                            calls=s.calls,
                            source=s.source,
                        )
                    )
        return out

    all_sets = scaled()
    write_store(kdir / "workbench/launches.json.gz", all_sets)
    legacy = root / "legacy" / "matmul" / "workbench"
    legacy.mkdir(parents=True)
    # today's single-member layout, streamed (save_launch_sets would build the 2.7 GB document of a
    # 10,000-config session in memory)
    from cutile_workbench.artifacts.launches_io import set_to_dict

    with gzip.open(legacy / "launches.json.gz", "wb", compresslevel=6) as fh:
        fh.write(b'{"version":1,"sets":[')
        for i, s in enumerate(all_sets):
            fh.write((b"," if i else b"") + json.dumps(set_to_dict(s), separators=(",", ":")).encode())
        fh.write(b"]}")
    for f in ("session.json",):
        shutil.copy(kdir / "workbench" / f, legacy / f)
    return kdir, _replica_params(params[0], (n - 1) // 6)


def _rerecord_block(block: str, factor: float) -> str:
    """One test block with its forward samples (and their statistics) scaled by ``factor``, as a
    re-run of that config that measured it ``factor`` slower writes it (record_json line only: the
    parser reads the record from it)."""
    out = []
    for line in block.splitlines(keepends=True):
        if line.startswith("record_json: "):
            doc = json.loads(line[len("record_json: ") :])
            for fw in doc["benchmark"].values():
                fwd = fw.get("forward")
                if isinstance(fwd, dict):
                    for k in ("mean", "median", "min", "max", "std"):
                        if isinstance(fwd.get(k), float):
                            fwd[k] *= factor
                    if isinstance(fwd.get("samples"), list):
                        fwd["samples"] = [x * factor for x in fwd["samples"]]
            line = "record_json: " + json.dumps(doc) + "\n"
        out.append(line)
    return "".join(out)


def rerecord_config(kdir: Path, params: str, factor: float = 1.03) -> None:
    """ "After one config changed": ``params``'s samples re-recorded in both logs (scaled by ``factor``)
    and its capture members rewritten (every launch's duration scaled), as a re-run of that one
    config writes them; every other config's bytes stay as they were (the store's other members are
    copied raw)."""
    import dataclasses

    from cutile_workbench.artifacts.launch_store import open_store, write_store

    for rel in (CANDIDATE_LOG, BASELINE_LOG):
        path = kdir / rel
        lines = path.read_text().splitlines(keepends=True)
        starts = [i for i, ln in enumerate(lines) if ln.startswith("tests/") and "::test_perf[" in ln]
        ends = [*starts[1:], next(i for i in range(starts[-1], len(lines)) if lines[i].startswith("===="))]
        hit = [(a, b) for a, b in zip(starts, ends, strict=True) if lines[a].rstrip().endswith(f"-{params}]")]
        if len(hit) != 1:
            raise SystemExit(f"{rel}: {len(hit)} blocks of {params!r}")
        a, b = hit[0]
        block = _rerecord_block("".join(lines[a:b]), factor)
        path.write_text("".join(lines[:a]) + block + "".join(lines[b:]))
    data = kdir / "workbench/launches.json.gz"
    store = open_store(data)
    mine = set(store.indices_for_params(params))
    items: list = []
    for i, raw in enumerate(store.raw_members()):
        if i not in mine:
            items.append(raw)
            continue
        s = store[i]
        calls = [
            dataclasses.replace(
                c,
                launches=tuple(
                    dataclasses.replace(x, end_ns=x.start_ns + round((x.end_ns - x.start_ns) * factor))
                    for x in c.launches
                ),
            )
            for c in s.calls
        ]
        items.append(dataclasses.replace(s, calls=calls))
    write_store(data, items)


def build_history(root: Path, runs: int) -> Path:
    from history_helpers import SP_2048, candidate_configs, copy_matmul, derived_entry, provenance, utc

    from cutile_workbench.history.query import open_history

    paths = copy_matmul(root)
    store, _report = open_history(paths, source="out_root")
    with store:
        base = candidate_configs(store)
        for i in range(1, runs):
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
    return root


def _pythonpath(first: Path) -> str:
    """``first`` ahead of the caller's own PYTHONPATH (on the GPU machine the carried wheels are there)."""
    rest = os.environ.get("PYTHONPATH", "")
    return str(first) + (os.pathsep + rest if rest else "")


def measure(spec: dict, cache: Path, repo: Path = REPO) -> dict:
    env = {**os.environ, "PYTHONPATH": _pythonpath(repo), "CUTILE_WORKBENCH_CACHE": str(cache)}
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
        cwd=repo,
        timeout=1800,
    )
    wall = time.perf_counter() - t0
    line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("BENCH ")), None)
    if line is None:
        return {"wall_s": wall, "failed": (proc.stderr or proc.stdout)[-600:]}
    got = json.loads(line[6:])
    got["wall_s"] = wall
    return got


def commands(kdir: Path, config: str) -> dict[str, dict]:
    root = str(kdir.parent)
    legacy = str(kdir.parent / "legacy")
    return {
        "floor": {"kind": "floor", "kdir": str(kdir), "logs": [CANDIDATE_LOG, BASELINE_LOG]},
        "help": {"kind": "cli", "argv": ["--help"]},
        "table": {"kind": "cli", "argv": ["--out-root", root, "table", "matmul", "--json"]},
        "report-e": {"kind": "cli", "argv": ["--out-root", root, "report", "e", "matmul", "--dry-run"]},
        "report-f": {"kind": "cli", "argv": ["--out-root", root, "report", "f", "matmul", "--dry-run"]},
        "timeline": {
            "kind": "cli",
            "argv": ["--out-root", root, "timeline", "matmul", "--config", config, "--json"],
        },
        "timeline-legacy": {
            "kind": "cli",
            "argv": ["--out-root", legacy, "timeline", "matmul", "--config", config, "--json"],
            "fresh_cache": True,
        },
        "timeline-legacy-warm": {
            "kind": "cli",
            "argv": ["--out-root", legacy, "timeline", "matmul", "--config", config, "--json"],
        },
        "tui": {"kind": "tui", "root": root},
    }


def growth(points: list[tuple[int, float]]) -> float | None:
    pts = [(n, w) for n, w in points if w > 0]
    if len(pts) < 2:
        return None
    xs = [math.log(n) for n, _ in pts]
    ys = [math.log(w) for _, w in pts]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else None


CASES = ("fresh", "warm", "changed")


def run_cases(n: int, names: list[str], reps: int, trees: dict[str, Path], tmp: Path) -> dict:
    """Issue 31's cases for one size: per command and code tree, ``fresh`` (an empty user cache),
    ``warm`` (the same command again) and ``changed`` (one config re-recorded in both logs and its
    capture members rewritten, :func:`rerecord_config`, then the command with the cache it left).
    Every measurement is one fresh process; CPU seconds are the child's; the floor runs in the same
    rep, so ratios to it are of one run."""
    kdir, config = build_session(tmp, n)
    specs = commands(kdir, config)
    out: dict = {name: {t: {c: [] for c in CASES} for t in trees} for name in names}
    flip = 0
    for _rep in range(reps):
        for name in names:
            for tree, repo in trees.items():
                cache = tmp / f"cache-{tree}-{name}"
                shutil.rmtree(cache, ignore_errors=True)
                cell = out[name][tree]
                cell["fresh"].append(measure(specs[name], cache, repo))
                cell["warm"].append(measure(specs[name], cache, repo))
                flip ^= 1
                rerecord_config(kdir, config, 1.03 if flip else 1 / 1.03)
                cell["changed"].append(measure(specs[name], cache, repo))
                shutil.rmtree(cache, ignore_errors=True)
    return {"config_changed": config, "cells": out}


def _cpu(reps: list[dict]) -> float | None:
    ok = [r["cpu_s"] for r in reps if "cpu_s" in r]
    return statistics.median(ok) if ok else None


def print_cases(n: int, got: dict) -> None:
    cells = got["cells"]
    floor = statistics.median(
        [
            c
            for case in CASES
            for t in cells["floor"]
            for c in [_cpu(cells["floor"][t][case])]
            if c is not None
        ]
    )
    print(f"N={n}: floor {floor:.3f} CPU-s", flush=True)
    for name, trees in cells.items():
        if name == "floor":
            continue
        for tree, cases in trees.items():
            parts = []
            for case in CASES:
                cpu = _cpu(cases[case])
                rss = max((r.get("maxrss_mib", 0) for r in cases[case]), default=0)
                fails = [r for r in cases[case] if "failed" in r or r.get("rc") not in (0, 1)]
                paint = ""
                if name == "tui" and not fails and cpu is not None:  # walls: the ratios, then the rest
                    shown = statistics.median(r["first_paint_s"] for r in cases[case])
                    loaded = statistics.median(r.get("loaded_s", r["first_paint_s"]) for r in cases[case])
                    paint = f", ratios shown {shown:.2f} s wall, all {loaded:.2f} s"
                parts.append(
                    "FAILED"
                    if fails or cpu is None
                    else f"{case} {cpu:.2f} s ({cpu / floor:.1f}x) {rss:.0f} MiB{paint}"
                )
            print(f"  {name} [{tree}]: " + " | ".join(parts), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", type=int, nargs="*", default=[10, 100, 1000, 10000])
    ap.add_argument("--runs", type=int, nargs="*", default=[10, 100, 1000])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated commands (default: all)")
    ap.add_argument("--big", type=int, default=10000, help="sizes ≥ this run only --big-only commands")
    ap.add_argument("--big-only", default="timeline,timeline-legacy,timeline-legacy-warm,help")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument(
        "--cases",
        default="",
        help="issue 31's cases (fresh, warm, after one config changed) for these comma-separated commands "
        "(the floor is added); --configs and --reps apply, history is skipped",
    )
    ap.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="also measure the code tree at PATH (e.g. `git archive <commit>` unpacked), for --cases",
    )
    ap.add_argument(
        "--box",
        default="shared 2-core CPU box (other engineers' processes: see loadavg_before)",
        help="what the machine was, for the JSON (e.g. 'GPU machine, 16 cores, idle')",
    )
    ns = ap.parse_args()
    if ns.cases:
        trees = {"this": REPO, **{t.split("=", 1)[0]: Path(t.split("=", 1)[1]) for t in ns.tree}}
        names = ["floor", *[c for c in ns.cases.split(",") if c and c != "floor"]]
        results: dict = {
            "host": platform.node(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "reps": ns.reps,
            "trees": {k: str(v) for k, v in trees.items()},
            "box": ns.box,
            "loadavg_before": os.getloadavg(),
            "note": "compare CPU seconds and ratios to the floor of one run, not absolute wall times "
            "(the box's load is in loadavg_before)",
            "sizes": {},
        }
        for n in ns.configs:
            with tempfile.TemporaryDirectory() as tmp:
                got = run_cases(n, names, ns.reps, trees, Path(tmp))
            results["sizes"][str(n)] = got
            print_cases(n, got)
            if ns.out:
                ns.out.parent.mkdir(parents=True, exist_ok=True)
                ns.out.write_text(json.dumps(results, indent=1) + "\n")
        return 0
    only = {c for c in ns.only.split(",") if c}
    big_only = {c for c in ns.big_only.split(",") if c}
    results: dict = {
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "reps": ns.reps,
        "box": ns.box,
        "loadavg_before": os.getloadavg(),
        "note": "absolute times are noisy on a loaded box (loadavg_before): compare cells of one run",
        "sessions": {},
        "history": {},
    }
    for n in ns.configs:
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            kdir, config = build_session(Path(tmp), n)
            build_s = time.perf_counter() - t
            cmds = {
                k: v
                for k, v in commands(kdir, config).items()
                if (not only or k in only) and (n < ns.big or k in big_only)
            }
            cells: dict[str, list[dict]] = {k: [] for k in cmds}
            cache = Path(tmp) / "user-cache"
            for _rep in range(ns.reps):
                for name, spec in cmds.items():
                    if spec.get("fresh_cache"):
                        shutil.rmtree(cache / "launches", ignore_errors=True)
                    cells[name].append(measure(spec, cache))
            results["sessions"][str(n)] = {
                "build_s": build_s,
                "data_bytes": {
                    "candidate_log": (kdir / CANDIDATE_LOG).stat().st_size,
                    "launches": (kdir / "workbench/launches.json.gz").stat().st_size,
                },
                "cells": cells,
            }
            _print_row(n, cells)
    for runs in ns.runs:
        with tempfile.TemporaryDirectory() as tmp:
            root = build_history(Path(tmp), runs)
            cache = Path(tmp) / "user-cache"
            spec = {"kind": "cli", "argv": ["--out-root", str(root), "history", "matmul", "--json"]}
            cold = measure(spec, cache)  # computes and caches every comparison
            warm = [measure(spec, cache) for _ in range(ns.reps)]
            results["history"][str(runs)] = {"cold": cold, "warm": warm}
            print(
                f"history runs={runs}: cold {cold['wall_s']:.2f} s, warm median "
                f"{statistics.median(c['wall_s'] for c in warm):.2f} s, "
                f"{max(c.get('maxrss_mib', 0) for c in warm):.0f} MiB",
                flush=True,
            )
    summary = {}
    names = sorted({k for s in results["sessions"].values() for k in s["cells"]})
    for name in names:
        pts = [
            (int(n), statistics.median(c["wall_s"] for c in s["cells"][name]))
            for n, s in results["sessions"].items()
            if name in s["cells"]
        ]
        summary[name] = {"growth_exponent": growth(pts)}
    results["growth"] = summary
    print(
        "growth exponent k (wall ≈ c·N^k):",
        {
            k: None if v["growth_exponent"] is None else round(v["growth_exponent"], 2)
            for k, v in summary.items()
        },
    )
    if ns.out:
        ns.out.parent.mkdir(parents=True, exist_ok=True)
        ns.out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


def _print_row(n: int, cells: dict[str, list[dict]]) -> None:
    parts = []
    for name, reps in cells.items():
        failed = [r for r in reps if "failed" in r]
        if failed:
            parts.append(f"{name}: FAILED ({failed[0]['failed'][-200:]!r})")
            continue
        wall = statistics.median(r["wall_s"] for r in reps)
        rss = statistics.median(r["maxrss_mib"] for r in reps)
        cpu = statistics.median(r["cpu_s"] for r in reps)
        extra = f" paint {statistics.median(r['first_paint_s'] for r in reps):.2f}s" if name == "tui" else ""
        rcs = sorted({r.get("rc") for r in reps})
        parts.append(f"{name}: {wall:.2f}s (cpu {cpu:.2f}s) {rss:.0f}MiB rc={rcs}{extra}")
    print(f"N={n}: " + " | ".join(parts), flush=True)


if __name__ == "__main__":
    sys.exit(main())
