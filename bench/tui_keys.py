"""TUI first paint, first key and per-key latency as ratios to a bare Textual app and a plain DataTable.

Run: ``python bench/tui_keys.py --out bench/data/tui_keys-DATE.json`` (headless; 25 s on the
idle 2-core box, ~110 s at load 10). ``--quick`` (2 repeats, 3 presses per key; 57 s at load 10
on that box, one process at a time, so well under 4 minutes) is the GPU machine's run: from the
repository root, ``pip install -e .`` (textual comes from its wheel), then
``python bench/tui_keys.py --quick --box "GPU machine, 16 cores" --out /tmp/tui_keys-gpu.json``.
Issue #34's targets: the first key answered within 0.2 s of the first paint; per key at most 2x a
plain DataTable doing the same job.

Every scenario runs in a fresh child interpreter, ``--repeats`` times, interleaved in one run (so
the ratios compare minutes of the same box load; on a loaded box absolute seconds are not
portable, the ratios are the figures; the load average before and after is recorded). Three apps,
same terminal size (160x48):

- ``bare``: a Textual app with one Static; ``s`` updates it.
- ``datatable``: a Textual app with one DataTable of N rows x 9 columns (the Ratios table's shape);
  ``s`` sorts it by the next column, ``8`` (a binding) re-adds the rows whose shown text holds "8"
  (``clear`` + ``add_row``; the rows each app kept are in ``filter_rows``). No Input: in this
  harness an ``Input`` in that app answered its first character only after ~1 s (not explained);
  the workbench's ``8`` goes through its filter Input, so that ratio is on the safe side.
- ``workbench``: :func:`cutile_workbench.tui.app.make_app` on ``synthetic.big_table(N)``
  (SYNTHETIC configs of realistic shape); ``s`` sorts, ``/`` + ``8`` filters, ``2`` opens the
  Timeline (first visit: built then), ``1`` back to Ratios.

Measured per app: first frame (process start → the first screen composited), first paint
(process start → ``on_ready``: in the workbench ~0.2 s after the first frame, Textual's Ready
being queued behind the first screen's mount), first key (``s`` posted as soon as the first frame
is seen → its state change seen, counted from the first frame), then per key the median of ``--presses`` presses (post → state
change seen and, for the workbench, every shown row in the table: a view whose rows are still being
added has not answered; the app's loop polled with ``asyncio.sleep(0)``, no fixed sleeps), in wall
seconds and in CPU seconds of the app's thread (``*_cpu_s``: on a loaded box a key longer than a
scheduler time slice also waits behind the other processes, which stretches wall ratios).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPEATS = 3
PRESSES = 5
SIZES = (100, 1000)

_CHILD = r"""
import asyncio, json, sys, time
T0 = time.perf_counter()
kind, n, presses = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if kind == "workbench-nofreeze":  # the A/B of gc.freeze: the workbench's calls do nothing
    import gc
    gc.freeze = lambda: None
    kind = "workbench"
import gc
GC = {"n": 0, "s": 0.0, "t": 0.0}
def _gc_full(phase, info):  # the full (generation 2) collections of the whole run, and their time
    if info["generation"] == 2:
        if phase == "start":
            GC["t"] = time.perf_counter()
        else:
            GC["n"] += 1
            GC["s"] += time.perf_counter() - GC["t"]
gc.callbacks.append(_gc_full)

async def wait(pred):
    t = time.perf_counter()
    while not pred():
        await asyncio.sleep(0)
    return time.perf_counter()

def key(app, k, ch):
    from textual import events
    ev = events.Key(k, ch)
    ev.set_sender(app)
    app.post_message(ev)
    return time.perf_counter()

async def main():
    out = {}
    sys.path.insert(0, "tests")  # the SYNTHETIC builders are test fixtures (cwd: the repo root)
    import tui_synthetic as syn
    from textual.app import App
    from textual.binding import Binding
    from textual.widgets import DataTable, Static
    if kind == "bare":
        class Bare(App):
            BINDINGS = [Binding("s", "bump", "bump")]
            count = 0
            painted = None
            def compose(self):
                yield Static("0", id="s")
            def on_ready(self):
                self.painted = time.perf_counter()
            def action_bump(self):
                self.count += 1
                self.query_one("#s", Static).update(str(self.count))
        app = Bare()
        state = lambda: app.count
    elif kind == "datatable":
        from textual.screen import Screen as _Screen
        rows = syn.big_table(n).rows
        class TableScreen(_Screen):
            def compose(self):
                yield DataTable(id="t")
            def on_mount(self):
                self.app.start(self.query_one(DataTable))
        class OtherScreen(_Screen):  # what "2" shows: built on its first visit, as the Timeline
            def compose(self):
                yield Static("other")
        class Plain(App):
            MODES = {"table": TableScreen, "other": OtherScreen}
            BINDINGS = [Binding("s", "sort", "sort"), Binding("r", "reverse", "reverse"),
                        Binding("slash", "filter", "filter"), Binding("8", "eight", "8"),
                        Binding("2", "switch_mode('other')", "2"), Binding("1", "switch_mode('table')", "1")]
            count = 0
            painted = None
            col = 0
            backwards = False
            DEFAULT_MODE = "table"
            def start(self, t):
                t.add_columns(*[f"c{i}" for i in range(9)])
                self._fill("")
                t.focus()
            def _fill(self, needle):
                # the same job as the workbench's filter: the rows whose shown text holds the needle
                t = self.query_one(DataTable)
                t.clear()
                for r in rows:
                    cells = (r.params, r.variant or "", r.baseline_backend or "", f"{r.baseline_ms:.4f}",
                             f"{r.candidate_ms:.4f}", f"{r.ratio:.3f}x", f"{r.ci_low:.3f}", f"{r.ci_high:.3f}",
                             r.row_verdict)
                    if any(needle in c.lower() for c in cells):
                        t.add_row(*cells)
            def on_ready(self):
                self.painted = time.perf_counter()
            def action_sort(self):
                t = self.query_one(DataTable)
                self.col = (self.col + 1) % 9
                t.sort(list(t.columns)[self.col])
                self.count += 1
            def action_reverse(self):
                t = self.query_one(DataTable)
                self.backwards = not self.backwards
                t.sort(list(t.columns)[self.col], reverse=self.backwards)
                self.count += 1
            def action_filter(self):
                pass
            def action_eight(self):
                self._fill("8")
                self.count += 1
        app = Plain()
        state = lambda: app.count
    else:
        from cutile_workbench.tui.app import make_app
        from cutile_workbench.tui.data import AppData
        data = AppData(kernel="rms_norm", source="synthetic", gpu="bench", table=syn.big_table(n))
        app = make_app(data)
        def state():
            from cutile_workbench.tui.widgets.ratio_table import RatioTable
            try:
                t = app.screen.query_one(RatioTable)
            except Exception:
                return None
            if t.row_count != len(t.shown_rows):
                return None  # rows still being added: the view has not answered yet
            return (t.sort_key, t.reverse, t.filter_text, len(t.shown_rows))
    # the first frame: the first time any screen is composited (bench instrumentation only)
    from textual.screen import Screen
    frame = {}
    real_refresh = Screen._compositor_refresh
    def compositor_refresh(self):
        result = real_refresh(self)
        now = time.perf_counter()
        frame.setdefault("t", now)
        frame["last"] = now
        return result
    Screen._compositor_refresh = compositor_refresh
    if kind == "workbench":
        first_done = lambda: (state() or ("config",))[0] != "config"
    else:
        first_done = lambda: app.count >= 1
    async def shown(since):
        # the first frame composited after `since` (the key's state change): what the user sees
        return await wait(lambda: frame.get("last", 0.0) > since)

    async def press(k, ch, changed):
        # one key: (state s, painted s, state CPU s, painted CPU s)
        cpu = time.thread_time()
        t = key(app, k, ch)
        done = await wait(changed)
        state_cpu = time.thread_time() - cpu
        seen = await shown(done)
        return done - t, seen - t, state_cpu, time.thread_time() - cpu

    async with app.run_test(size=(160, 48)) as pilot:
        painted = lambda: (app.first_paint_at if kind == "workbench" else app.painted)
        await wait(lambda: "t" in frame)
        out["first_frame_s"] = frame["t"] - T0
        t = key(app, "s", "s")  # typed as soon as the table is on screen
        answered = await wait(first_done)
        out["first_key_s"] = answered - t
        out["first_key_after_frame_s"] = answered - frame["t"]
        await wait(lambda: painted() is not None)
        out["first_paint_s"] = painted() - T0  # on_ready
        await pilot.pause()
        for name, k in (("sort", "s"), ("reverse", "r")):
            if kind == "bare" and name != "sort":
                continue
            got = []
            for _ in range(presses):
                before = state()
                got.append(await press(k, k, lambda: state() not in (before, None)))
                await pilot.pause()
            out[f"{name}_s"] = [g[0] for g in got]
            out[f"{name}_paint_s"] = [g[1] for g in got]
            out[f"{name}_cpu_s"] = [g[2] for g in got]
            out[f"{name}_paint_cpu_s"] = [g[3] for g in got]
        if kind != "bare":
            key(app, "slash", "/")
            if kind == "workbench":  # its filter Input is shown and laid out (not the filter key's cost)
                await wait(lambda: any(w.region.height for w in app.screen.query("Input")))
            await pilot.pause()
            await pilot.pause()
            before = state()
            got = await press("8", "8", lambda: state() not in (before, None))
            out["filter_s"], out["filter_paint_s"], out["filter_cpu_s"], out["filter_paint_cpu_s"] = got
            out["filter_rows"] = (
                app.query_one(DataTable).row_count if kind == "datatable" else app.screen.query_one("#table").row_count
            )
            await pilot.pause()
        if kind != "bare":
            if kind == "workbench":
                from cutile_workbench.tui.screens.ratios import RatiosScreen as Home
                from cutile_workbench.tui.screens.timeline import TimelineScreen as Away
                key(app, "escape", "\x1b")
            else:
                Home, Away = TableScreen, OtherScreen
            await pilot.pause()
            got = []
            for i in range(3):
                got.append(await press("2", "2", lambda: isinstance(app.screen, Away) and app.screen.is_mounted))
                await pilot.pause()
                key(app, "1", "1")
                await wait(lambda: isinstance(app.screen, Home))
                await pilot.pause()
            out["switch_first_visit_s"], out["switch_first_visit_paint_s"] = got[0][0], got[0][1]
            out["switch_again_s"] = [g[0] for g in got[1:]]
            out["switch_again_paint_s"] = [g[1] for g in got[1:]]
            out["switch_again_cpu_s"] = [g[2] for g in got[1:]]
    out["gc_full_n"], out["gc_full_s"] = GC["n"], GC["s"]
    print(json.dumps(out))

asyncio.run(main())
"""


def child(kind: str, n: int, presses: int = PRESSES, tree: Path = ROOT) -> dict[str, object]:
    """One app in a fresh interpreter; ``tree``: the checkout whose ``cutile_workbench`` it imports
    (the child's cwd comes first on its ``sys.path``)."""
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, str(n), str(presses)],
        capture_output=True,
        text=True,
        cwd=tree,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{kind} {n}: rc {proc.returncode}\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


def _med(values: list[float]) -> float:
    return statistics.median(values)


def _field(raw: dict[str, list[dict[str, object]]], name: str, field: str) -> float:
    vals: list[float] = []
    for run in raw[name]:
        v = run[field]
        vals += v if isinstance(v, list) else [v]  # type: ignore[list-item]
    return _med(vals)


def _versus(raw: dict[str, list[dict[str, object]]], n: int, field: str, with_base: bool) -> dict[str, float]:
    """One measure at ``n`` configs: each app's median and the workbench's ratio to the DataTable
    (and, when run, the baseline tree's and the workbench without gc.freeze)."""
    dt = _field(raw, f"datatable-{n}", field)
    wb = _field(raw, f"workbench-{n}", field)
    out = {"datatable": dt, "workbench": wb, "workbench_over_datatable": wb / dt, "target_ratio": 2.0}
    if with_base:
        bt = _field(raw, f"baseline-{n}", field)
        out |= {"baseline_tree": bt, "baseline_tree_over_datatable": bt / dt}
    if f"nofreeze-{n}" in raw:
        nf = _field(raw, f"nofreeze-{n}", field)
        out |= {"nofreeze": nf, "nofreeze_over_datatable": nf / dt, "workbench_over_nofreeze": wb / nf}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description="\n\n".join(__doc__.split("\n\n")[:2]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, help="write the raw runs and the summary here (JSON)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="2 repeats, 3 presses per key: 57 s on the 2-core box at load 10 (one process at a time)",
    )
    parser.add_argument("--repeats", type=int, help=f"fresh processes per app and size (default {REPEATS})")
    parser.add_argument("--presses", type=int, help=f"presses of each key per process (default {PRESSES})")
    parser.add_argument(
        "--baseline-tree",
        type=Path,
        help="also run the workbench of this checkout (e.g. `git archive REF | tar -x -C DIR`), "
        "interleaved in the same run: 'baseline-N' in the JSON",
    )
    parser.add_argument(
        "--gc-freeze-ab",
        action="store_true",
        help="also run the workbench with gc.freeze a no-op, interleaved: 'nofreeze-N' in the JSON",
    )
    parser.add_argument(
        "--box",
        default="2-core CPU box shared with other engineers' test runs (their load: loadavg_before/after)",
        help="what the machine was, for the JSON (e.g. 'GPU machine, 16 cores, idle')",
    )
    args = parser.parse_args()
    repeats = args.repeats or (2 if args.quick else REPEATS)
    presses = args.presses or (3 if args.quick else PRESSES)
    base = args.baseline_tree.resolve() if args.baseline_tree else None
    raw: dict[str, list[dict[str, object]]] = {}
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    for rep in range(repeats):  # interleaved: each repeat runs every app once, minutes apart at most
        for n in SIZES:
            for kind in ("bare", "datatable", "workbench", "baseline", "nofreeze"):
                if (
                    (kind == "bare" and n != SIZES[0])
                    or (kind == "baseline" and base is None)
                    or (kind == "nofreeze" and not args.gc_freeze_ab)
                ):
                    continue
                name = f"{kind}-{n}" if kind != "bare" else "bare"
                app = {"baseline": "workbench", "nofreeze": "workbench-nofreeze"}.get(kind, kind)
                raw.setdefault(name, []).append(child(app, n, presses, base if kind == "baseline" else ROOT))
        print(f"repeat {rep + 1}/{repeats} done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)

    def med(name: str, field: str) -> float:
        vals: list[float] = []
        for run in raw[name]:
            v = run[field]
            vals += v if isinstance(v, list) else [v]  # type: ignore[list-item]
        return _med(vals)

    summary: dict[str, object] = {}
    bare_paint = med("bare", "first_paint_s")
    bare_key = med("bare", "sort_s")
    for n in SIZES:
        wb, dt = f"workbench-{n}", f"datatable-{n}"
        summary[str(n)] = {
            "first_paint_s": {
                "bare": bare_paint,
                "datatable": med(dt, "first_paint_s"),
                "workbench": med(wb, "first_paint_s"),
                "workbench_over_bare": med(wb, "first_paint_s") / bare_paint,
                "workbench_over_datatable": med(wb, "first_paint_s") / med(dt, "first_paint_s"),
            },
            "first_frame_s": {
                "bare": med("bare", "first_frame_s"),
                "datatable": med(dt, "first_frame_s"),
                "workbench": med(wb, "first_frame_s"),
                "workbench_over_bare": med(wb, "first_frame_s") / med("bare", "first_frame_s"),
                "workbench_over_datatable": med(wb, "first_frame_s") / med(dt, "first_frame_s"),
            },
            "first_key_after_frame_s": {
                "bare": med("bare", "first_key_after_frame_s"),
                "datatable": med(dt, "first_key_after_frame_s"),
                "workbench": med(wb, "first_key_after_frame_s"),
                "workbench_max": max(float(r["first_key_after_frame_s"]) for r in raw[wb]),  # type: ignore[arg-type]
                "target_s": 0.2,
            },
            # per key: to the key's state change (``_s``), to the first frame after it (``_paint_s``:
            # what the user sees), CPU seconds of the app's thread to the state change and to the frame
            **{
                f"{name}_{what}": _versus(raw, n, f"{name}_{what}", base is not None)
                for name in ("sort", "reverse", "filter", "switch_again")
                for what in ("s", "paint_s", "cpu_s", "paint_cpu_s")
                if f"{name}_{what}" in raw[f"workbench-{n}"][0]
            },
            "switch_first_visit_s": _versus(raw, n, "switch_first_visit_s", base is not None),
            "switch_first_visit_paint_s": _versus(raw, n, "switch_first_visit_paint_s", base is not None),
            "bare_update_key_s": bare_key,
        }
        for other, label in (("baseline", "baseline_tree"), ("nofreeze", "nofreeze")):
            if f"{other}-{n}" not in raw:
                continue
            for field in ("first_paint_s", "first_frame_s", "first_key_after_frame_s"):
                summary[str(n)][field][label] = med(f"{other}-{n}", field)  # type: ignore[index]
            summary[str(n)]["first_key_after_frame_s"][f"{label}_max"] = max(  # type: ignore[index]
                float(r["first_key_after_frame_s"])  # type: ignore[arg-type]
                for r in raw[f"{other}-{n}"]
            )
    report = {
        "what": "bench/tui_keys.py: first paint, first key, per key; ratios to a bare Textual app and a plain DataTable",
        "started_utc": started,
        "host": platform.node(),
        "python": platform.python_version(),
        "textual": _version("textual"),
        "cpus": os.cpu_count(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "wall_s": round(time.perf_counter() - t0, 1),
        "repeats": repeats,
        "presses": presses,
        "box": args.box,
        "summary": summary,
        "raw": raw,
    }
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
