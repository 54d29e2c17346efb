"""``timeline <kernel> --config PARAMS``: launches per call and per-launch times of one config.

Contract: reads the per-launch captures through :mod:`cutile_workbench.services.timeline`
(``workbench/launches.json.gz`` of the kernel dir, else the profile's recorded session) and
prints launches per call and per-launch times per backend; ``--json`` is machine-readable;
``--perfetto FILE`` writes Chrome-trace JSON atomically and refuses to replace an existing file
that is not JSON unless ``--force``. An unknown config exits 2 listing close matches.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cutile_workbench.cli.common import OUT_ROOT_HELP, Command, path_arg
from cutile_workbench.services.timeline import config_timeline, config_trust, write_perfetto


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies under it (shorter to read and paste)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def render_timeline_text(
    kernel: str, config: str, source: str, summaries: list[dict[str, Any]], stand_ins: list[str] | None = None
) -> str:
    lines = [f"{kernel}  {config}   (from {source})", *(stand_ins or []), ""]

    def role_of(s: dict[str, Any]) -> str:  # "candidate", or "candidate backward" for a test's 2nd set
        return f"{s['role']} {s['measurement']}" if s.get("measurement") else s["role"]

    rw = max([11, *(len(role_of(s)) + 2 for s in summaries)])
    head = f"{'backend':<16}{'role':<{rw}}{'calls':>6}{'launches/call':>15}{'device us/call':>16}  (median; min-max)"
    lines.append(head)
    for s in summaries:
        lpc, dev = s["launches_per_call"], s["device_time_per_call_us"]
        lpc_txt = (
            f"{lpc['median']:g}"
            + (f" ({lpc['min']:g}-{lpc['max']:g})" if lpc and lpc["min"] != lpc["max"] else "")
            if lpc
            else "-"
        )
        dev_txt = f"{dev['median']:.2f} ({dev['min']:.2f}-{dev['max']:.2f})" if dev else "-"
        flag = "  NO LAUNCH DATA (CUDA events only)" if s["no_launch_data"] else ""
        lines.append(f"{s['backend']:<16}{role_of(s):<{rw}}{s['calls']:>6}{lpc_txt:>15}  {dev_txt:>22}{flag}")
    cand = next((s for s in summaries if s["role"] == "candidate" and s["device_time_per_call_us"]), None)
    base = next((s for s in summaries if s["role"] == "baseline" and s["device_time_per_call_us"]), None)
    if cand and base and base["device_time_per_call_us"]["median"] > 0:
        ratio = cand["device_time_per_call_us"]["median"] / base["device_time_per_call_us"]["median"]
        c_l, b_l = cand["launches_per_call"]["median"], base["launches_per_call"]["median"]
        verdict = (
            "extra launches per call: wrapper/host work (F: FIXABLE pattern)"
            if c_l > b_l
            else "same launch count: compare per-launch kernel time, config and IR"
        )
        lines += [
            "",
            f"candidate/baseline device time per call: {ratio:.2f}x; launches/call {c_l:g} vs {b_l:g}"
            f" → {verdict}",
        ]
    for s in summaries:
        lines += ["", f"{s['backend']} ({role_of(s)}): per launch, µs"]
        lines.append(
            f"  {'kernel':<48}{'kind':<8}{'n/call':>7}{'median':>10}{'min':>10}{'max':>10}"
            f"  {'grid':<16}{'block':<14}{'regs':>5}{'smem':>9}"
        )
        for k in s["kernels"]:
            pl = k["per_launch_us"]
            name = k["name"] if len(k["name"]) <= 47 else k["name"][:44] + "..."
            grid = "x".join(map(str, k["grid"])) if k["grid"] else "-"
            block = "x".join(map(str, k["block"])) if k["block"] else "-"
            regs = str(k["registers_per_thread"]) if k["registers_per_thread"] is not None else "-"
            smem = str(k["shared_memory_bytes"]) if k["shared_memory_bytes"] is not None else "-"
            lines.append(
                f"  {name:<48}{k['kind']:<8}{k['launches_per_call']:>7g}{pl.get('median', 0):>10.2f}"
                f"{pl.get('min', 0):>10.2f}{pl.get('max', 0):>10.2f}  {grid:<16}{block:<14}{regs:>5}{smem:>9}"
            )
    return "\n".join(lines) + "\n"


class TimelineCommand(Command):
    name = "timeline"
    group = None
    help = "launches per call and per-launch times of one config"
    description = (
        "Launches per call, device time per call and per-launch kernel times of one config, per "
        "backend, from the per-launch CUPTI captures (or Chrome-trace JSON for ui.perfetto.dev)."
    )

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("kernel")
        parser.add_argument(
            "--config",
            required=True,
            metavar="PARAMS",
            help="the params string of a config, e.g. 16384-2048-torch.bfloat16",
        )
        parser.add_argument(
            "--backend", "-b", action="append", metavar="B", help="only these backends (repeatable)"
        )
        parser.add_argument("--out-root", metavar="DIR", default=argparse.SUPPRESS, help=OUT_ROOT_HELP)
        fmt = parser.add_mutually_exclusive_group()
        fmt.add_argument("--json", action="store_true", help="machine-readable output")
        fmt.add_argument(
            "--perfetto", metavar="FILE", help="write Chrome-trace JSON (opens in ui.perfetto.dev)"
        )
        parser.add_argument(
            "--force", action="store_true", help="with --perfetto: replace an existing non-JSON file"
        )

    def run(self, args: argparse.Namespace, stream: Any = None) -> int:
        from cutile_workbench.services.timeline import to_chrome_trace

        out_stream = stream or sys.stdout
        tl = config_timeline(
            args.kernel, args.config, backends=args.backend, out_root=getattr(args, "out_root", None)
        )
        if args.perfetto:
            write_perfetto(Path(args.perfetto), to_chrome_trace(tl.sets), force=args.force)
            out_stream.write(
                f"wrote {args.perfetto}: {sum(len(c.launches) for s in tl.sets for c in s.calls)} "
                f"launches of {len(tl.sets)} backend(s); open it in https://ui.perfetto.dev\n"
            )
            return 0
        trust = config_trust(
            args.kernel,
            args.config,
            out_root=getattr(args, "out_root", None),
            tilegym=path_arg(getattr(args, "tilegym", None)),
            session=tl.session,  # the command's one session (the kernel dir of the captures)
        )
        if args.json:
            json.dump(
                {
                    "kernel": args.kernel,
                    "config": args.config,
                    "source": str(tl.source),
                    "stand_ins": tl.stand_ins,
                    "backends": tl.summaries,
                    **trust.as_dict(),
                },
                out_stream,
                indent=2,
            )
            out_stream.write("\n")
            return 0
        out_stream.write(
            render_timeline_text(
                args.kernel, args.config, display_path(tl.source), tl.summaries, tl.stand_ins
            )
        )
        out_stream.write("\n" + "\n".join(trust.lines()) + "\n")
        return 0


COMMANDS = (TimelineCommand(),)
