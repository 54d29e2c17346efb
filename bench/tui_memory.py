"""The TUI process's memory through its open at N configs: after the data, the first frame, the whole
session, and the IR pairs' load (issue 31 item 6: ≤ 300 MiB at 1,000 configs for every command).

Run: ``python bench/tui_memory.py --configs 1000 --out FILE`` from the repository root (the session is
``bench/scale_cost.py``'s builder, in a temp dir with its own user cache). ``--tree PATH`` measures the
code tree at PATH instead (``git archive`` unpacked); a tree without ``loaders.quick_app_data`` loads
everything first, as its ``run_app`` did. Each point is one fresh child process: VmRSS and VmHWM
(peak) from ``/proc/self/status`` at: data loaded, first frame, whole session shown, and
``--settle`` seconds later (the IR pairs load in a worker after the whole session). Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import asyncio, json, os, sys, time
from pathlib import Path
spec = json.loads(sys.argv[1])
def mem():
    d = dict(l.split(":", 1) for l in open("/proc/self/status"))
    return {"rss_mib": int(d["VmRSS"].split()[0]) / 1024, "hwm_mib": int(d["VmHWM"].split()[0]) / 1024}
async def main():
    from cutile_workbench.tui import loaders
    from cutile_workbench.tui.app import make_app
    out, root = {"points": {}}, Path(spec["root"])
    quick = getattr(loaders, "quick_app_data", None)
    data = (quick("matmul", out_root=root, tilegym=None, env={}) if quick else None) or loaders.load_app_data(
        "matmul", out_root=root, tilegym=None, env={})
    out["progressive"] = getattr(data, "full_loader", None) is not None
    out["points"]["data"] = mem()
    app = make_app(data)
    async with app.run_test(size=(160, 48)):
        while app.first_paint_at is None:
            await asyncio.sleep(0.001)
        out["points"]["first_frame"] = mem()
        while getattr(app, "session_loading", False):
            await asyncio.sleep(0.005)
        out["points"]["whole_session"] = mem()
        t = time.monotonic()
        while getattr(app, "ir_loading", False) and time.monotonic() - t < 120:
            await asyncio.sleep(0.01)
        await asyncio.sleep(spec["settle"])
        out["points"]["after_ir"] = mem()
        print("BENCH " + json.dumps(out), flush=True)
        os._exit(0)
asyncio.run(main())
"""


def _run(tree: Path, root: Path, cache: Path, settle: float) -> dict[str, object]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": f"{tree}:{ROOT / 'tests'}"}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps({"root": str(root), "settle": settle})],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tree),
        timeout=600,
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("BENCH ")), None)
    if line is None:
        return {"failed": (proc.stderr or proc.stdout)[-400:]}
    return json.loads(line[6:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", type=int, default=1000)
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--settle", type=float, default=1.0)
    parser.add_argument("--box", default="")
    parser.add_argument("--out", type=Path)
    ns = parser.parse_args()
    sys.path.insert(0, str(ROOT / "bench"))
    import scale_cost

    trees = {"this": ROOT, **{t.split("=", 1)[0]: Path(t.split("=", 1)[1]).resolve() for t in ns.tree}}
    results: dict[str, object] = {
        "what": "TUI memory through its open (bench/tui_memory.py)",
        "configs": ns.configs,
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "box": ns.box,
        "loadavg_before": os.getloadavg(),
        "trees": {k: str(v) for k, v in trees.items()},
        "runs": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        kdir, _config = scale_cost.build_session(Path(tmp) / "out", ns.configs)
        for name, tree in trees.items():
            got = _run(tree, kdir.parent, Path(tmp) / f"cache-{name}", ns.settle)
            results["runs"][name] = got  # type: ignore[index]
            points = got.get("points", {}) if isinstance(got, dict) else {}
            print(
                name, {k: f"{v['rss_mib']:.0f}/{v['hwm_mib']:.0f} MiB" for k, v in points.items()}, flush=True
            )
    results["loadavg_after"] = os.getloadavg()
    if ns.out:
        ns.out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
