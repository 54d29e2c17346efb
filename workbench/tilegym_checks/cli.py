"""CLI twins of the TileGym-side checks: ``check``, ``kselect``, ``audit-wrapper``.

Contract: :func:`register` adds the sub-commands to ``workbench.cli``'s registry; each handler
returns an exit code — 0 ok, 1 BLOCKED (precondition failed, no cutile-rs perf case), 2 bad input
(``WorkbenchError`` from the core; unknown kernel, missing test file, syntax error), 3 refused
(the two sides of a run select different configs; a wiring edit that could not be proven).
``python -m workbench.tilegym_checks.cli`` runs the same commands standalone. Nothing is written
except the two BLOCKED files of a failed precondition (through the guarded writer), and the test
file only with ``--apply-wiring``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.errors import InputError, WorkbenchError
from workbench.layout import KernelPaths
from workbench.testids import split_nodeid

from . import childproc, kselect, precondition, wiring, wrapper_audit
from .static_eval import Assumptions, Unresolvable
from .testfile import load_test_module

EXIT_OK, EXIT_BLOCKED, EXIT_BAD_INPUT, EXIT_REFUSED = 0, 1, 2, 3


# ---------------------------------------------------------------------------- shared options


def _common(p: argparse.ArgumentParser) -> None:
    # SUPPRESS keeps a global --tilegym/--out-root given before the sub-command from being reset
    p.add_argument("kernel", help="op name, e.g. bmm (tests/ops/test_<kernel>.py)")
    p.add_argument("--tilegym", default=argparse.SUPPRESS, help="TileGym checkout (default: $TILEGYM_PATH)")
    p.add_argument("--out-root", default=argparse.SUPPRESS, help="kernel out root (default: $CUTILE_KERNEL_OUT_ROOT)")
    p.add_argument("--python", default=sys.executable, help="the TileGym environment's Python (default: this one)")
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for the child, e.g. CUTILE_TUTORIALS_BACKEND=triton (repeatable)",
    )
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per child process (default 300)")


def _tilegym(args: argparse.Namespace) -> Path:
    return precondition.require_tilegym(getattr(args, "tilegym", None) or os.environ.get("TILEGYM_PATH"))


def _out_root(args: argparse.Namespace) -> Path | None:
    value = getattr(args, "out_root", None) or os.environ.get("CUTILE_KERNEL_OUT_ROOT")
    return Path(value) if value else None


def _env(args: argparse.Namespace) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"--env expects KEY=VALUE, got {item!r}", key="--env")
        env[key] = value
    return env


def _analysis(args: argparse.Namespace, kernel: str) -> Any:
    path = getattr(args, "analysis", None)
    if path is None:
        root = _out_root(args)
        if root is None:
            raise InputError("no analysis.json: pass --analysis PATH or --out-root DIR", key="--analysis")
        path = KernelPaths.under(root, kernel).analysis_json
    path = Path(path)
    if not path.is_file():
        raise InputError("analysis.json not found", path=path)
    try:
        from workbench.analysis import load_analysis
    except ImportError:  # the analysis module is another engineer's; the raw JSON is enough here
        return _load_raw_json(path)
    return load_analysis(path)


def _load_raw_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", path=path, line=exc.lineno) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", path=path) from exc
    if not isinstance(data, dict):
        raise InputError("top level must be an object", path=path)
    return data


# ---------------------------------------------------------------------------- check


def cmd_check(args: argparse.Namespace) -> int:
    tilegym = _tilegym(args)
    kernel = args.kernel
    test_path = wiring.find_test_file(tilegym, kernel)  # unknown kernel → exit 2 before any child runs
    env = _env(args)
    out = sys.stdout
    pre = precondition.check_precondition(tilegym, python=args.python, env=env, timeout_s=args.timeout)
    print(f"precondition: $ {pre.display_command}  (cwd {tilegym})", file=out)
    if not pre.ok:
        print(f"precondition FAILED: {pre.reason}", file=out)
        for hint in pre.hints:
            print(f"hint: {hint}", file=out)
        root = _out_root(args)
        if root is None:
            print("note: no --out-root / CUTILE_KERNEL_OUT_ROOT, so the BLOCKED files were not written", file=out)
        else:
            plan = precondition.plan_blocked(pre, kernel, root)
            try:
                for path in precondition.write_blocked(plan):
                    print(f"wrote {path}", file=out)
            except WorkbenchError as exc:
                # the verdict stays BLOCKED; the writer refused (e.g. no kernel dir): say why
                print(f"note: BLOCKED files not written: {exc}", file=out)
        out.write(precondition.validator_block(pre))
        return EXIT_BLOCKED
    print("precondition OK: autotune_launch imports", file=out)

    check = wiring.check_wiring(tilegym, kernel, python=args.python, env=env, timeout_s=args.timeout)
    targets = [s.target for s in check.statuses]
    collect = check.collect
    assert collect is not None
    print(f"$ {collect.child.command}", file=out)
    print(f"cutile-rs perf cases selected: {check.selected}", file=out)
    for nodeid in check.cutile_rs_cases[: args.max_ids]:
        print(f"  {nodeid}", file=out)
    if check.selected > args.max_ids:
        print(f"  … {check.selected - args.max_ids} more", file=out)
    if check.selected and collect.ok:
        return EXIT_OK
    if not collect.ok:
        print("collection problem (pytest output tail):", file=out)
        for line in collect.child.output.splitlines()[-15:]:
            print(f"  | {line}", file=out)
    edits = []
    for status in check.statuses:
        print(f"{status.target}: {status.state}: {status.message}", file=out)
        if status.edit is not None:
            edits.append(status.edit)
    if not edits:
        print("BLOCKED: no cutile-rs perf case can be selected", file=out)
        return EXIT_BLOCKED
    for edit in edits:
        print(edit.diff(check.relpath), file=out, end="")
    if len(edits) > 1:
        print("note: several test_perf classes need wiring; each edit is re-proposed and applied in turn", file=out)
    if not args.apply_wiring:
        print("not applied (the test file is unchanged): re-run with --apply-wiring to make this edit", file=out)
        return EXIT_BLOCKED
    backup_dir = None
    root = _out_root(args)
    if root is not None:
        backup_dir = KernelPaths.under(root, kernel).workbench_dir / "wiring_backup"
    applied = None
    for status in check.statuses:
        if status.edit is None:
            continue
        # re-propose against the current file so a second class sees the first edit
        module = load_test_module(test_path, tilegym)
        fresh = wiring.analyse_wiring(module, module.find(status.target.split("::", 1)[1]))
        if fresh.edit is None:
            continue
        applied = wiring.apply_wiring(
            fresh.edit, tilegym, targets, python=args.python, backup_dir=backup_dir, env=env, timeout_s=args.timeout
        )
        print(f"backup: {applied.backup}", file=out)
        print(applied.message, file=out)
        if not applied.applied:
            return EXIT_REFUSED
    return EXIT_OK if applied is not None else EXIT_BLOCKED


# ---------------------------------------------------------------------------- kselect


def cmd_kselect(args: argparse.Namespace) -> int:
    kernel = args.kernel
    analysis = _analysis(args, kernel)
    baseline = args.baseline
    if baseline == "auto":
        baseline = _winner(analysis)
    tilegym_value = getattr(args, "tilegym", None) or os.environ.get("TILEGYM_PATH")
    module = None
    default_test = None
    cases_by_test: dict[str, list[Any]] = {}
    if tilegym_value:
        tilegym = precondition.require_tilegym(tilegym_value)
        path = wiring.find_test_file(tilegym, kernel)
        module = load_test_module(path, tilegym)
        perf = wiring.perf_targets(module)
        if perf:
            default_test = module.func_key(perf[0])
        assumptions = Assumptions(frozenset({"cutile", "cutile-rs", "triton", "pytorch"}))
        for fn in module.perf_functions():
            try:
                cases_by_test[module.func_key(fn)] = module.derive_cases(fn, assumptions)
            except Unresolvable:
                continue
    selection = kselect.build_k_expressions(
        analysis, args.candidate, baseline, cases_by_test=cases_by_test, default_test=default_test
    )
    out = sys.stdout
    for label, targets in (("candidate", selection.candidate), ("baseline", selection.baseline)):
        for t in targets:
            print(f"{label} ({t.token}): -k {t.expr!r}", file=out)
            print(f"  $ {t.command('python', '-sv', '--print-record')}", file=out)
    for note in selection.notes:
        print(f"note: {note}", file=out)
    if not (args.show or args.static):
        return EXIT_OK
    cand_ids: list[str] = []
    base_ids: list[str] = []
    for targets, sink in ((selection.candidate, cand_ids), (selection.baseline, base_ids)):
        for t in targets:
            if args.static:
                if module is None or not t.test or t.test not in cases_by_test:
                    raise InputError("--static needs --tilegym and a statically derivable test", key="--static")
                ids = [c.nodeid for c in cases_by_test[t.test]]
                sink.extend(kselect.simulate_k(ids, t.expr))
            else:
                tilegym = precondition.require_tilegym(tilegym_value)
                if not t.test:
                    raise InputError("the config group names no test; pass --tilegym so test_perf is found", key="test")
                res = childproc.collect_nodeids(
                    args.python, tilegym, t.test, t.expr, env=_env(args), timeout_s=args.timeout
                )
                if not res.ok:
                    print(f"collection failed for {t.token}:", file=out)
                    for line in res.child.output.splitlines()[-15:]:
                        print(f"  | {line}", file=out)
                    return EXIT_BLOCKED
                sink.extend(res.nodeids)
    if args.static:
        _note_k_filters(selection, cases_by_test, base_ids)
    how = "statically derived ids + pytest's -k matcher" if args.static else "collect-only"
    print(f"selected node ids ({how}):", file=out)
    for nodeid in cand_ids + base_ids:
        print(f"  {nodeid}", file=out)
    diff = kselect.compare_selections(cand_ids, base_ids)
    print(diff.describe(), file=out)
    if not diff.ok:
        print("REFUSED: candidate and baseline select different config sets", file=out)
        return EXIT_REFUSED
    return EXIT_OK


def _note_k_filters(selection: kselect.KSelection, cases_by_test: dict[str, list[Any]], base_ids: list[str]) -> None:
    """Say when Agent A's recorded ``k_filter`` selects other configs than its own shapes list."""
    wanted = {split_nodeid(n)[2] for n in base_ids}
    for k_filter, test in sorted({(c.k_filter, c.test) for c in selection.configs if c.k_filter and c.test}):
        if test not in cases_by_test:
            continue
        picked = kselect.simulate_k([c.nodeid for c in cases_by_test[test]], k_filter)
        params = {split_nodeid(n)[2] for n in picked}
        if params != wanted:
            print(
                f"note: analysis.json k_filter {k_filter!r} selects {len(picked)} node ids "
                f"({len(params)} configs); its shapes list selects {len(wanted)} configs — using the shapes list",
                file=sys.stdout,
            )


def _winner(analysis: Any) -> str:
    raw = analysis if isinstance(analysis, dict) else getattr(analysis, "raw", {})
    winner = raw.get("reference_backend") or (raw.get("reference_backend_selection") or {}).get("winner")
    if winner in ("cutile", "triton"):
        return str(winner)
    raise InputError("cannot tell the baseline backend: pass --baseline", key="reference_backend")


# ---------------------------------------------------------------------------- audit-wrapper


def cmd_audit(args: argparse.Namespace) -> int:
    tilegym = _tilegym(args)
    path = tilegym / "src" / "tilegym" / "ops" / "cutile_rs" / f"{args.kernel}.py"
    if not path.is_file():
        raise InputError(f"unknown kernel '{args.kernel}': no cutile-rs wrapper", path=path)
    analysis = None
    if getattr(args, "analysis", None) or _out_root(args):
        try:
            analysis = _analysis(args, args.kernel)
        except InputError as exc:
            if getattr(args, "analysis", None):
                raise
            print(f"note: {exc} — auditing without analysis.json", file=sys.stderr)
    findings = wrapper_audit.audit_wrapper(path, analysis)
    if args.json:
        rows = [
            {
                "kind": f.kind,
                "summary": f.summary,
                "fixable": f.fixable,
                "evidence": list(f.evidence),
                "confidence": f.confidence,
                "details": f.details,
            }
            for f in findings
        ]
        json.dump(rows, sys.stdout, indent=2, default=str)
        print()
        return EXIT_OK
    if not findings:
        print(f"{path}: no wrapper findings")
    for f in findings:
        d = f.details
        print(f"{f.evidence[0]}: [{d['rule']}] ({f.confidence}) {f.summary}")
        print(f"    rule ({d['source']}): {d['rule_text']}")
        print(f"    action: {d['action']}")
    return EXIT_OK


# ---------------------------------------------------------------------------- registry


def register(commands: argparse._SubParsersAction, report_commands: argparse._SubParsersAction | None = None) -> None:
    """Add ``check``, ``kselect`` and ``audit-wrapper`` to the workbench CLI."""
    p = commands.add_parser("check", help="E preconditions: autotune_launch import + test_perf cutile-rs wiring")
    _common(p)
    p.add_argument("--apply-wiring", action="store_true", help="apply the proposed test_perf edit (guarded)")
    p.add_argument("--max-ids", type=int, default=20, help="node ids to print (default 20)")
    p.set_defaults(func=cmd_check)

    p = commands.add_parser("kselect", help="-k expressions for candidate and baseline from analysis.json")
    _common(p)
    p.add_argument("--analysis", help="analysis.json (default: <out-root>/<kernel>/reference/analysis.json)")
    p.add_argument("--candidate", default="cutile-rs", help="candidate backend (default cutile-rs)")
    p.add_argument("--baseline", default="auto", help="baseline backend (default: analysis.json's winner)")
    p.add_argument("--show", action="store_true", help="collect both sides and show/compare the node ids")
    p.add_argument("--static", action="store_true", help="like --show, from ids derived with ast (no torch needed)")
    p.set_defaults(func=cmd_kselect)

    p = commands.add_parser("audit-wrapper", help="static audit of src/tilegym/ops/cutile_rs/<kernel>.py")
    _common(p)
    p.add_argument("--analysis", help="analysis.json (default: <out-root>/<kernel>/reference/analysis.json if present)")
    p.add_argument("--json", action="store_true", help="findings as JSON")
    p.set_defaults(func=cmd_audit)


def main(argv: Sequence[str] | None = None) -> int:
    """Standalone entry point (``python -m workbench.tilegym_checks.cli``)."""
    parser = argparse.ArgumentParser(prog="cutile-workbench-checks")
    commands = parser.add_subparsers(dest="command", required=True)
    register(commands, None)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_BAD_INPUT
    try:
        return int(args.func(args))
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
