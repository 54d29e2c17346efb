"""Read counts per command (issue 30): how often each file of the kernel dir is opened, each perf log
parsed, and ``load_e_table`` run, for one command on a REAL recorded session.

Run:  python bench/read_counts.py [--kernel matmul] [--out bench/data/read_counts-<tag>.json]

The session is the recorded H200 one shipped in the package (``profiles/tilegym/session/<kernel>``),
copied into a temp out root (so nothing of the package is touched and a command that would write
finds a writable dir). Each command runs in a fresh process (``python -c``), twice: the first run
warms the user cache (E's table, trust: cached on their inputs' hash), the second is counted — the
warm case, as a user sees it on the second command (``--cold``: the first run on an empty user cache
of its own is counted instead). Counted in the child:

- ``opens``: every ``os.open`` / ``io.open`` (``open``, ``Path.read_*``, ``gzip.open``) of a path
  inside the kernel dir, per path relative to it (sqlite's own opens of the history store are not
  seen: it opens the file in C);
- ``parses``: :func:`cutile_workbench.artifacts.perflog.parser.parse_perf_log` calls, per log (the
  sanitizer's parses of each test block it judges, inside ``report e``, are not counted: they are
  sanitizing, not a read of the log);
- ``load_e_table``: calls of :func:`cutile_workbench.stages.e.e_table.load_e_table`.

Commands: ``table``, ``report e --dry-run``, ``report f --dry-run``, ``timeline`` (first config),
``diff`` (no argument), ``history``, ``overview`` of the out root, and ``tui`` = the TUI's load
(``load_app_data``) plus its deferred IR pairs and history (what the screens pull after the paint).
Raw output → ``--out`` (JSON), and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CHILD = r"""
import builtins, contextlib, io, json, os, sys
spec = json.loads(sys.argv[1])
kdir = os.path.realpath(spec["kernel_dir"])
opens, parses, calls = {}, {}, {"load_e_table": 0}

def note(table, p):
    try:
        real = os.path.realpath(os.fspath(p))
    except (TypeError, ValueError):
        return
    if real == kdir or real.startswith(kdir + os.sep):
        rel = os.path.relpath(real, kdir)
        table[rel] = table.get(rel, 0) + 1

_os_open, _io_open = os.open, io.open
def os_open(p, *a, **k):
    note(opens, p)
    return _os_open(p, *a, **k)
def io_open(p, *a, **k):
    if not isinstance(p, int):
        note(opens, p)
    return _io_open(p, *a, **k)
os.open, io.open, builtins.open = os_open, io_open, io_open

import traceback
import cutile_workbench.artifacts.perflog.parser as parser
_parse = parser.parse_perf_log
def parse_perf_log(path, *a, **k):
    # the sanitizer's own parse of each test block it judges is part of sanitizing, not a read of the log
    if not any(f.filename.endswith("sanitizer.py") for f in traceback.extract_stack()[:-1]):
        note(parses, path)
    return _parse(path, *a, **k)
parser.parse_perf_log = parse_perf_log
import cutile_workbench.stages.e.e_table as e_table
_load = e_table.load_e_table
def load_e_table(*a, **k):
    calls["load_e_table"] += 1
    return _load(*a, **k)
e_table.load_e_table = load_e_table

rc = None
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    if spec["argv"][0] == "tui":
        from cutile_workbench.tui.loaders import load_app_data
        data = load_app_data(spec["kernel"], out_root=__import__("pathlib").Path(spec["out_root"]), tilegym=None)
        if data.ir_loader is not None:
            data.ir_loader()
        if data.history_loader is not None:
            data.history_loader()
        rc = 0
    else:
        from cutile_workbench.cli import main
        rc = main(spec["argv"])
print(json.dumps({"rc": rc, "opens": opens, "parses": parses, **calls}))
"""


def commands(kernel: str, out_root: str, config: str) -> dict[str, list[str]]:
    k = [kernel, "--out-root", out_root]
    return {
        "table": ["table", *k],
        "report e": ["report", "e", *k, "--dry-run", "--no-real-scripts"],
        "report f": ["report", "f", *k, "--dry-run", "--no-real-scripts"],
        "timeline": ["timeline", *k, "--config", config],
        "diff": ["diff", *k],
        "history": ["history", *k],
        "overview": ["overview", "--out-root", out_root],
        "tui": ["tui"],
    }


def first_config(kernel_dir: Path) -> str:
    """A config of the recorded session, spelled as its perf log spells it (the params string)."""
    for line in (kernel_dir / "baseline_perf_cutile.txt").read_text(encoding="utf-8").splitlines():
        if "[" in line and "]" in line and "::" in line:
            test_id = line[line.index("[") + 1 : line.index("]")]
            return test_id.partition("-")[2]  # the backend token first, then the params
    raise SystemExit(f"no config found in {kernel_dir}")


def run_child(spec: dict[str, object], env: dict[str, str], repo: Path) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(repo),
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"child failed for {spec['argv']}: {proc.stderr[-2000:]}")
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="matmul")
    ap.add_argument("--only", default="", help="comma-separated command names (default: all)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument(
        "--cold", action="store_true", help="count the first run (an empty user cache), not the second"
    )
    ap.add_argument("--tree", default="", help="what the tree is, for the JSON (e.g. a commit)")
    ap.add_argument("--repo", type=Path, default=REPO, help="the tree to measure (default: this one)")
    args = ap.parse_args()
    repo = args.repo.resolve()
    sessions = repo / "cutile_workbench" / "profiles" / "tilegym" / "session"
    with tempfile.TemporaryDirectory(prefix="read_counts-") as tmp:
        out_root = Path(tmp) / "out"
        shutil.copytree(sessions / args.kernel, out_root / args.kernel)
        kernel_dir = out_root / args.kernel
        env = {**os.environ, "PYTHONPATH": str(repo), "XDG_CACHE_HOME": str(Path(tmp) / "cache")}
        env.pop("CUTILE_KERNEL_OUT_ROOT", None)
        env.pop("CUTILE_WORKBENCH_CACHE", None)
        config = first_config(kernel_dir)
        results: dict[str, object] = {}
        only = {c for c in args.only.split(",") if c}
        for name, argv in commands(args.kernel, str(out_root), config).items():
            if only and name not in only:
                continue
            spec = {
                "argv": argv,
                "kernel": args.kernel,
                "out_root": str(out_root),
                "kernel_dir": str(kernel_dir),
            }
            if args.cold:  # each command on an empty user cache of its own
                cold_env = {**env, "XDG_CACHE_HOME": str(Path(tmp) / f"cache-{len(results)}")}
                results[name] = run_child(spec, cold_env, repo)
                continue
            run_child(spec, env, repo)  # warm the user cache
            results[name] = run_child(spec, env, repo)
    logs = ("reports/agent_logs/perf_cutile_rs.full.txt", "baseline_perf_cutile.txt")
    print(
        f"{'command':10} {'rc':>3} {'cand opens':>10} {'base opens':>10} {'cand parses':>11} "
        f"{'base parses':>11} {'load_e_table':>12} {'files opened':>12} {'opens':>6}"
    )
    for name, r in results.items():
        assert isinstance(r, dict)
        o, p = r["opens"], r["parses"]
        print(
            f"{name:10} {r['rc']!s:>3} {o.get(logs[0], 0):>10} {o.get(logs[1], 0):>10} {p.get(logs[0], 0):>11} "
            f"{p.get(logs[1], 0):>11} {r['load_e_table']:>12} {len(o):>12} {sum(o.values()):>6}"
        )
    if args.out is not None:
        doc = {
            "kernel": args.kernel,
            "config": config,
            "cache": "cold (each command on an empty user cache)" if args.cold else "warm (second run)",
            "tree": args.tree or str(repo),
            "host": platform.node(),
            "python": platform.python_version(),
            "note": "2-core CPU box shared by 7 engineers (loaded); counts do not depend on load",
            "results": results,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
