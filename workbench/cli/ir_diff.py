"""``diff <kernel> [--variant V] [--color|--json]``: Tile IR side by side + the diff_ir.sh-parity audit.

Contract: resolves the kernel dir like every command (``--out-root``/``$CUTILE_KERNEL_OUT_ROOT``/
recorded session) and asks :mod:`workbench.services.ir_diff` for the variant's pair (canonical
diff + raw-text audit). Text output fits the terminal width (unchanged runs folded, 3 lines of
context), then the audit verdict and its critical/warn rows; ``--color`` highlights both sides
with the MLIR lexer; ``--json`` prints rows, hunks and the audit. Exit 0 on success, 2 on bad
input (missing/ambiguous variant, bad IR — the error names the file and line).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from typing import Any

from workbench.cli.common import add_kernel_args, path_arg
from workbench.ir.audit import IRAudit
from workbench.ir.diffmodel import DiffRow, Fold, SideBySide
from workbench.ir.loader import IRPair
from workbench.services.ir_diff import diff_variant
from workbench.services.stand_ins import workspace_stand_ins
from workbench.workspace import open_workspace

_MARK = {"equal": " ", "replace": "|", "delete": "<", "insert": ">"}


def _fit(s: str, width: int, spans: tuple[tuple[int, int], ...] = ()) -> str:
    """Cut to ``width``; when the first change lies past the cut, slide the window so it shows."""
    if spans and spans[0][1] > width - 1 and len(s) > width:
        start = max(1, spans[0][0] - width // 3)
        s = "…" + s[start:]
    s = s.replace("\t", "    ")
    return s if len(s) <= width else s[: max(width - 1, 0)] + "…"


def render_side_by_side(sbs: SideBySide, *, width: int = 160, context: int = 3, color: bool = False,
                        left_src: tuple[int, ...] | None = None,
                        right_src: tuple[int, ...] | None = None) -> list[str]:
    """Side-by-side lines for a terminal ``width`` columns wide (folded). Numbers are the original
    file lines when ``left_src``/``right_src`` (canonical → source maps) are given, so they match
    the audit's ``L`` numbers and an editor; else canonical line numbers."""
    num_w = max(4, len(str(max(len(sbs.rows), max(left_src or (0,)), max(right_src or (0,))))))
    cell = max(10, (width - 2 * (num_w + 1) - 3) // 2)
    hl = None
    if color:
        from workbench.ir.lexer import highlight_terminal

        def hl(s: str) -> str:
            return highlight_terminal(s).rstrip("\n")

    out: list[str] = []
    index = {id(r): i for i, r in enumerate(sbs.rows)}
    for item in sbs.folded(context):
        if isinstance(item, Fold):
            out.append(f"{'':>{num_w}} ⋯ {item.count} unchanged line(s) ⋯")
            continue
        r: DiffRow = item
        lno = r.left_no if r.left_no is None or left_src is None else left_src[r.left_no - 1]
        rno = r.right_no if r.right_no is None or right_src is None else right_src[r.right_no - 1]
        ln = f"{lno:>{num_w}}" if lno is not None else " " * num_w
        rn = f"{rno:>{num_w}}" if rno is not None else " " * num_w
        lsp, rsp = sbs.spans(index[id(r)]) if r.kind == "replace" else ((), ())
        left, right = _fit(r.left, cell, lsp), _fit(r.right, cell, rsp)
        pad_l = left.ljust(cell)
        if hl is not None:
            pad_l = (hl(left) if left else "") + " " * (cell - len(left))
            right = hl(right) if right else ""
        mark = _MARK[r.kind]
        if color and mark != " ":
            mark = f"\x1b[1;33m{mark}\x1b[0m"
        out.append(f"{ln} {pad_l} {mark} {rn} {right}".rstrip())
    return out


def audit_summary(audit: IRAudit) -> list[str]:
    lines = [audit.verdict_line + f"  (diff_ir.sh parity, exit={audit.exit_code})"]
    for row in audit.rows:
        if row.severity in ("CRITICAL", "WARN"):
            where = ""
            if row.ref_lines or row.gen_lines:
                where = (f"  [ref L{','.join(map(str, row.ref_lines[:6]))}"
                         f" gen L{','.join(map(str, row.gen_lines[:6]))}]")
            lines.append(f"  {row.severity}: {row.message}{where}")
    return lines


def _row_json(sbs: SideBySide, i: int, ls: tuple[int, ...], rs: tuple[int, ...]) -> dict[str, Any]:
    r = sbs.rows[i]
    lsp, rsp = sbs.spans(i)
    return {"kind": r.kind, "left_no": r.left_no, "right_no": r.right_no,
            "left_src": ls[r.left_no - 1] if r.left_no else None,
            "right_src": rs[r.right_no - 1] if r.right_no else None,
            "left": r.left, "right": r.right,
            "left_spans": [list(s) for s in lsp], "right_spans": [list(s) for s in rsp]}


def to_json(pair: IRPair, sbs: SideBySide, audit: IRAudit) -> dict[str, Any]:
    """JSON document of ``diff --json`` (line numbers: canonical 1-based + original source line)."""
    ls, rs = pair.reference.canon.source_lines, pair.generated.canon.source_lines
    return {
        "variant": pair.variant,
        "reference": str(pair.reference.path),
        "generated": str(pair.generated.path),
        "identical": sbs.identical,
        "stats": sbs.stats(),
        "notes": sbs.notes,
        "hunks": sbs.hunks,
        "rows": [_row_json(sbs, i, ls, rs) for i in range(len(sbs.rows))],
        "audit": {"verdict": audit.verdict, "exit_code": audit.exit_code, "critical": audit.critical_count,
                  "workarounds": audit.workaround_count, "notes": audit.notes,
                  "rows": [{"check": r.check, "severity": r.severity, "message": r.message,
                            "ref": r.ref_value, "gen": r.gen_value, "ref_lines": list(r.ref_lines),
                            "gen_lines": list(r.gen_lines)} for r in audit.rows]},
    }


class DiffCommand:
    name = "diff"
    group = None
    help = "side-by-side Tile IR diff + diff_ir.sh-parity audit"
    description = "Pair reference/generated IR by variant, diff canonical text, audit."

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_kernel_args(parser)
        parser.add_argument("--variant", default=None, help="variant name (default: the single pair)")
        g = parser.add_mutually_exclusive_group()
        g.add_argument("--color", action="store_true", help="syntax-highlight both sides")
        g.add_argument("--json", action="store_true", help="print hunks + audit as JSON")

    def run(self, args: argparse.Namespace) -> int:
        ws = open_workspace(args.kernel, out_root=path_arg(args.out_root), tilegym=path_arg(args.tilegym),
                            strict=False)
        ir = diff_variant(ws, args.variant)
        pair, sbs, audit = ir.pair, ir.diff, ir.audit
        stand_ins = workspace_stand_ins(ws)  # issue 18 §5: a stand-in's "generated" IR is not cutile-rs's
        if args.json:
            json.dump({**to_json(pair, sbs, audit), "stand_ins": stand_ins.lines()}, sys.stdout, indent=1)
            sys.stdout.write("\n")
            return 0
        width = shutil.get_terminal_size((160, 40)).columns
        for line in stand_ins.lines():
            print(line)
        print(f"reference: {pair.reference.path}\ngenerated: {pair.generated.path}")
        for note in ir.notes + sbs.notes:
            print(f"note: {note}")
        st = sbs.stats()
        print(f"{len(sbs.hunks)} hunk(s): {st['replace']} changed, {st['delete']} only in reference, "
              f"{st['insert']} only in generated")
        for line in render_side_by_side(sbs, width=width, color=args.color,
                                        left_src=pair.reference.canon.source_lines,
                                        right_src=pair.generated.canon.source_lines):
            print(line)
        print()
        for line in audit_summary(audit):
            print(line)
        return 0


COMMANDS = (DiffCommand(),)
