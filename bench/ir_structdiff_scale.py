"""CPU cost of the structural Tile IR diff on large pairs made of REAL dumps (issue 33 item 7).

Run: ``.venv/bin/python bench/ir_structdiff_scale.py [--lines 10000 100000] [--out FILE.json]``.

A pair of about N lines per side is built from the recorded matmul session's per-config IR
(``cutile_workbench/profiles/tilegym/session/matmul/workbench/ir/{reference,candidate}``: 6 real
H200 pairs, cuTile's printer against cutile-rs's): the kernel entries of the real files, in turn,
each copy's ``entry @name`` renamed ``@name_c<i>`` (so every entry is its own function, as in a
module with many kernels), the candidate's inside one ``cuda_tile.module``. The bodies are the real
ones, unchanged. Per size it times :func:`cutile_workbench.ir.structdiff.structural_diff` (what
``diff`` and the IR screen build) in this process, as CPU seconds (``time.process_time``; the box
is shared, so wall seconds are kept beside them with the load average), and the rows and hunks it
found; and the CPU seconds of the whole ``diff matmul`` command (in this process, warm) on a copy
of the session whose ``static_persistent`` variant pair is the large pair, beside the same command
on the copy as recorded. Every number goes to ``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cutile_workbench.ir.structdiff import structural_diff  # noqa: E402

IR = ROOT / "cutile_workbench/profiles/tilegym/session/matmul/workbench/ir"
_ENTRY = re.compile(r"^(\s*entry @)([A-Za-z0-9_]+)\(")


def _entry_block(text: str) -> list[str]:
    """The lines of the file's one ``entry`` (its signature to its closing brace)."""
    lines = text.rstrip("\n").split("\n")
    start = next(i for i, ln in enumerate(lines) if _ENTRY.match(ln))
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = next(i for i in range(start + 1, len(lines)) if lines[i] == " " * indent + "}")
    return [ln[indent:] for ln in lines[start : end + 1]]


def build_pair(target_lines: int) -> tuple[str, str, dict[str, Any]]:
    refs = sorted((IR / "reference").glob("*.mlir"))
    pairs = [
        (_entry_block(r.read_text()), _entry_block((IR / "candidate" / r.name).read_text())) for r in refs
    ]
    ref_out: list[str] = []
    gen_out: list[str] = ["cuda_tile.module @matmul_module {"]
    copies = 0
    while len(ref_out) < target_lines:
        ref_block, gen_block = pairs[copies % len(pairs)]
        for block, out, pad in ((ref_block, ref_out, ""), (gen_block, gen_out, "  ")):
            suffix = f"_c{copies}("
            first = _ENTRY.sub(lambda m, sfx=suffix: f"{m.group(1)}{m.group(2)}{sfx}", block[0], count=1)
            out.extend(pad + ln for ln in [first, *block[1:]])
        copies += 1
    gen_out.append("}")
    meta = {
        "copies": copies,
        "sources": [str(r.relative_to(ROOT)) for r in refs],
        "ref_lines": len(ref_out),
        "gen_lines": len(gen_out),
    }
    return "\n".join(ref_out) + "\n", "\n".join(gen_out) + "\n", meta


def command_cpu(ref: str | None, gen: str | None) -> tuple[float, int, str]:
    """CPU seconds of ``cutile-workbench diff matmul`` run in this process on a temp copy of the
    recorded session whose ``static_persistent`` variant pair is replaced by ``ref``/``gen`` (None:
    the copy as recorded, the command's cost without the large pair), its exit status and, when it
    is not 0, its last stderr line."""
    import contextlib
    import io
    import shutil
    import tempfile

    from cutile_workbench.cli import main as cli_main

    with tempfile.TemporaryDirectory(prefix="ir-scale-") as d:
        kdir = Path(d) / "matmul"
        shutil.copytree(IR.parent.parent, kdir)
        if ref is not None and gen is not None:
            (kdir / "reference/reference_static_persistent.mlir").write_text(ref)
            (kdir / "generated/generated_static_persistent.mlir").write_text(gen)
        c0 = time.process_time()
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = cli_main(["diff", "matmul", "--out-root", d])
        cpu = time.process_time() - c0
    if rc != 0:
        lines = err.getvalue().strip().splitlines()
        return cpu, rc, (lines[-1] if lines else "").replace(d, "<tmp>")
    return cpu, rc, ""


def measure(target_lines: int) -> dict[str, Any]:
    ref, gen, meta = build_pair(target_lines)
    command_cpu(None, None)  # warm: imports and caches, so the two runs below differ by the pair only
    base, _, _ = command_cpu(None, None)
    whole, rc, message = command_cpu(ref, gen)
    load = os.getloadavg()[0]
    c0, w0 = time.process_time(), time.perf_counter()
    diff = structural_diff(ref, gen)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    rows = getattr(diff, "rows", ())
    hunks = getattr(diff, "hunks", ())
    return {
        "target_lines": target_lines,
        **meta,
        "ref_bytes": len(ref.encode()),
        "gen_bytes": len(gen.encode()),
        "cpu_s": round(cpu, 3),
        "wall_s": round(wall, 3),
        "load_1min_before": load,
        "diff_command_cpu_s": round(whole, 3),
        "diff_command_rc": rc,
        "diff_command_refusal": message,
        "diff_command_cpu_s_recorded_pair": round(base, 3),
        "rows": len(rows),
        "hunks": len(hunks),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    results = []
    for n in args.lines:
        r = measure(n)
        results.append(r)
        print(
            f"{r['ref_lines']:>7} / {r['gen_lines']:>7} lines ({r['copies']} real entries each side): "
            f"structural_diff {r['cpu_s']:.3f} s CPU, {r['wall_s']:.3f} s wall (load {r['load_1min_before']:.1f}); "
            f"the diff command {r['diff_command_cpu_s']:.3f} s CPU, exit {r['diff_command_rc']} "
            f"({r['diff_command_cpu_s_recorded_pair']:.3f} s with the recorded pair), "
            f"{r['rows']} rows, {r['hunks']} hunks",
            flush=True,
        )
    doc = {
        "bench": "ir_structdiff_scale",
        "commit": commit,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "results": results,
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
