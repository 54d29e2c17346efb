"""Benchmark of the IR diff engine: realistic 10k-line pairs and difflib's pathological cases.

Run: ``.venv/bin/python bench/ir_diff.py [--repeat N]``. Prints one table: per case, the time of
our guarded :func:`cutile_workbench.ir.diffmodel.diff_lines`, of canonicalize (both sides), of the
diff_ir.sh-parity audit, of the whole pair the IR diff screen builds (canonicalize both sides,
diff, audit, screen rows: ``cutile_workbench.tui.ir_rows.build_ir_pair``, which since issue 19 builds the
structural diff instead of the canonical line diff: ``bench/ir_structdiff.py`` times that engine alone), and of plain
``difflib.SequenceMatcher(autojunk=False)`` over the same lines (the unguarded baseline, capped
by a time budget), with the ratio plain/ours side by side.
Target (issue 4): ≤ 0.3 s for the diff of a 10k-line pair. Inputs are generated (synthetic): the
rms_norm loop body of contract §6.1 repeated with fresh value names, then edited.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import sys
import time
from collections.abc import Callable
from difflib import SequenceMatcher
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cutile_workbench.ir.audit import audit_texts
from cutile_workbench.ir.canon import canonicalize
from cutile_workbench.ir.diffmodel import diff_lines

BODY = """    %pview_{i} = make_partition_view %tview : partition_view<tile=({tm}x{tn}), padding_value = zero, tensor_view<?x?xf16, strides=[?,1]>>
    %tile_{i}, %tok_{i} = load_view_tko weak %pview_{i}[%loopIdx, %c0] token = %0 optimization_hints = <sm_90 = {{latency = 10}}> : partition_view<tile=({tm}x{tn})> -> tile<{tm}x{tn}xf16>, token
    %x_{i} = ftof %tile_{i} : tile<{tm}x{tn}xf16> -> tile<{tm}x{tn}xf32>
    %sq_{i} = mulf %x_{i}, %x_{i} : tile<{tm}x{tn}xf32>
    %red_{i} = reduce %sq_{i} dim=1 identities=[0.000000e+00 : f32] : tile<{tm}x{tn}xf32> -> tile<{tm}xf32>
    %r_{i} = rsqrt %red_{i} : tile<{tm}x1xf32>
    %y_{i} = mulf %x_{i}, %r_{i} : tile<{tm}x{tn}xf32>
    %o_{i} = ftof %y_{i} : tile<{tm}x{tn}xf32> -> tile<{tm}x{tn}xf16>
    %s_{i} = store_view_tko weak %o_{i}, %pview_{i}[%loopIdx, %c0] token = %0 optimization_hints = <sm_90 = {{allow_tma = false, latency = 3}}> : tile<{tm}x{tn}xf16>, token
    }}
    for %loopIdx_{i} in (%blockId_x to %n, step %gridSize_x) : tile<i32> {{"""


def make_ir(n_lines: int, tm: int, tn: int, seed: int = 0) -> str:
    head = [
        "entry @_rms_norm_kernel_I16_I1024(%arg0: tile<ptr<f16>>, %arg1: tile<i32>) optimization_hints=<sm_90 = {}> {",
        "  %0 = make_token : token",
        "  for %loopIdx in (%blockId_x to %n, step %gridSize_x) : tile<i32> {",
    ]
    lines = list(head)
    i = 0
    while len(lines) < n_lines - 3:
        lines += BODY.format(i=i, tm=tm, tn=tn).split("\n")
        i += 1
    lines += ["    }", "  return", "}"]
    return "\n".join(lines) + "\n"


def edit(text: str, frac: float, seed: int) -> str:
    rnd = random.Random(seed)
    lines = text.split("\n")
    for _ in range(int(len(lines) * frac)):
        k = rnd.randrange(1, len(lines) - 2)
        op = rnd.random()
        if 0.4 <= op < 0.7 and (lines[k].strip() == "}" or lines[k].rstrip().endswith("{")):
            continue  # never delete a brace line: that would truncate the program, not edit it (issue 26)
        if op < 0.4:
            lines[k] = lines[k].replace("latency = 10", "latency = 3").replace("mulf", "addf")
        elif op < 0.7:
            del lines[k]
        else:
            lines.insert(k, f"    %extra_{k} = ftof %x_0 : tile<16x1024xf16> -> tile<16x1024xf32>")
    return "\n".join(lines)


def _plain(a: list[str], b: list[str], q: mp.Queue) -> None:  # type: ignore[type-arg]
    t = time.perf_counter()
    SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    q.put(time.perf_counter() - t)


def plain_difflib(a: list[str], b: list[str], budget_s: float) -> float | None:
    """Seconds for plain difflib in a child process; None when it exceeded ``budget_s``."""
    q: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    p = mp.Process(target=_plain, args=(a, b, q))
    p.start()
    p.join(budget_s)
    if p.is_alive():
        p.kill()
        p.join()
        return None
    return float(q.get())


def best_of(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def cases() -> list[tuple[str, str, str]]:
    base = make_ir(10_000, 16, 1024)
    out = [
        ("10k realistic, 1% edits", base, edit(base, 0.01, 1)),
        ("10k realistic, tile 16x1024 vs 4x8192", base, make_ir(10_000, 4, 8192)),
        ("10k identical", base, base),
        ("10k realistic, 10% edits", base, edit(base, 0.10, 2)),
    ]
    rep = "\n".join(["  }"] * 10_000)
    rep2 = "\n".join(["  }" if k % 3 else "  return" for k in range(10_000)])
    out.append(("pathological: 10k repeated line vs interleaved", rep, rep2))
    rnd = random.Random(3)
    a = "\n".join(f"  %a{rnd.random()} = op" for _ in range(10_000))
    b = "\n".join(f"  %b{rnd.random()} = op" for _ in range(10_000))
    out.append(("pathological: 10k x 10k, nothing in common", a, b))
    long_a = "\n".join("  %x = op " + "a" * 200_000 + str(k) for k in range(20))
    long_b = "\n".join("  %x = op " + "a" * 199_999 + "b" + str(k) for k in range(20))
    out.append(("pathological: 20 lines of 200k chars, all changed", long_a, long_b))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--plain-budget", type=float, default=10.0, help="seconds allowed for plain difflib")
    args = ap.parse_args()
    # imported here: bench/ir_structdiff.py imports this module and must not need Textual
    from cutile_workbench.tui.ir_rows import build_ir_pair

    print(
        f"{'case':<50} {'lines':>11} {'diff (s)':>9} {'canon (s)':>9} {'audit (s)':>9} {'TUI pair (s)':>12} "
        f"{'plain difflib (s)':>17} {'plain/ours':>10} {'hunks':>6}"
    )
    for name, a_text, b_text in cases():
        a_lines, b_lines = a_text.split("\n"), b_text.split("\n")
        sbs = diff_lines(a_lines, b_lines)
        t_diff = best_of(lambda a=a_lines, b=b_lines: diff_lines(a, b), args.repeat)
        t_canon = best_of(lambda a=a_text, b=b_text: (canonicalize(a), canonicalize(b)), args.repeat)
        t_audit = best_of(lambda a=a_text, b=b_text: audit_texts(a, b), args.repeat)
        t_pair = best_of(lambda a=a_text, b=b_text: build_ir_pair("bench", a, b), args.repeat)
        plain = plain_difflib(a_lines, b_lines, args.plain_budget)
        plain_s = f">{args.plain_budget:.0f} (killed)" if plain is None else f"{plain:.3f}"
        ratio = f">{args.plain_budget / t_diff:.0f}x" if plain is None else f"{plain / t_diff:.1f}x"
        print(
            f"{name:<50} {len(a_lines):>5}/{len(b_lines):<5} {t_diff:>9.3f} {t_canon:>9.3f} {t_audit:>9.3f} "
            f"{t_pair:>12.3f} {plain_s:>17} {ratio:>10} {len(sbs.hunks):>6}"
        )
    print(f"(every column: best of {args.repeat} runs; python {sys.version.split()[0]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
