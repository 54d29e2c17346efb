"""The TileGym-side checks' commands: ``check``, ``kselect``, ``audit-wrapper``.

Contract: each command calls :mod:`cutile_workbench.services.checks` (and the core checks of
:mod:`cutile_workbench.checks`) on the TileGym checkout (``--tilegym``, else ``$TILEGYM_PATH``)
and returns an exit code — 0 ok, 1 BLOCKED (precondition failed, no cutile-rs perf case), 2 bad
input (``WorkbenchError`` from the core; unknown kernel, missing test file, syntax error), 3
refused (the two sides of a run select different configs; a wiring edit that could not be
proven). Nothing is written except the two BLOCKED files of a failed precondition (through the
guarded writer), and the test file only with ``--apply-wiring`` (asked on a TTY; ``--yes`` for
non-interactive use, like every writing command).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cutile_workbench.cli.common import (
    EXIT_BLOCKED,
    EXIT_OK,
    EXIT_REFUSED,
    Command,
    confirm,
    positive_seconds,
)
from cutile_workbench.errors import InputError, WorkbenchError
from cutile_workbench.services import checks
from cutile_workbench.services.checks import (
    KernelPaths,
    audit_wrapper,
    childproc,
    kselect,
    precondition,
    split_nodeid,
    tilegym_checkout,
    wiring,
)
from cutile_workbench.services.runs import parse_env_items


def add_checks_arguments(p: argparse.ArgumentParser) -> None:
    """The flags all three commands share."""
    # SUPPRESS keeps a global --tilegym/--out-root given before the sub-command from being reset
    p.add_argument("kernel", help="op name, e.g. bmm (tests/ops/test_<kernel>.py)")
    p.add_argument("--tilegym", default=argparse.SUPPRESS, help="TileGym checkout (default: $TILEGYM_PATH)")
    p.add_argument(
        "--out-root", default=argparse.SUPPRESS, help="kernel out root (default: $CUTILE_KERNEL_OUT_ROOT)"
    )
    p.add_argument(
        "--python", default=sys.executable, help="the TileGym environment's Python (default: this one)"
    )
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for the child, e.g. CUTILE_TUTORIALS_BACKEND=triton (repeatable)",
    )
    p.add_argument(
        "--timeout",
        type=positive_seconds,
        default=300.0,
        metavar="S",
        help="seconds per child process (default 300)",
    )


def _out_root(args: argparse.Namespace) -> Path | None:
    return checks.out_root_of(getattr(args, "out_root", None))


def _env(args: argparse.Namespace) -> dict[str, str]:
    return parse_env_items(args.env)


def _analysis(args: argparse.Namespace, kernel: str) -> Any:
    return checks.analysis_for(
        kernel, analysis_path=getattr(args, "analysis", None), out_root=_out_root(args)
    )


def cmd_check(args: argparse.Namespace) -> int:
    tilegym = checks.tilegym_root(getattr(args, "tilegym", None))
    kernel = args.kernel
    wiring.find_test_file(tilegym, kernel)  # unknown kernel → exit 2 before any child runs
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
            print(
                "note: no --out-root / CUTILE_KERNEL_OUT_ROOT, so the BLOCKED files were not written",
                file=out,
            )
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
        print(
            "note: several test_perf classes need wiring; each edit is re-proposed and applied in turn",
            file=out,
        )
    if not args.apply_wiring:
        print(
            "not applied (the test file is unchanged): re-run with --apply-wiring to make this edit", file=out
        )
        return EXIT_BLOCKED
    out.flush()
    refused = confirm(f"Apply {len(edits)} edit(s) to {check.relpath} under {tilegym}?", yes=args.yes)
    if refused is not None:
        return refused
    backup_dir = None
    root = _out_root(args)
    if root is not None:
        backup_dir = KernelPaths.under(root, kernel).workbench_dir / "wiring_backup"
    applied = None
    for applied in checks.apply_wiring_edits(
        tilegym, kernel, check, python=args.python, backup_dir=backup_dir, env=env, timeout_s=args.timeout
    ):
        print(f"backup: {applied.backup}", file=out)
        print(applied.message, file=out)
        if not applied.applied:
            return EXIT_REFUSED
    return EXIT_OK if applied is not None else EXIT_BLOCKED


# ---------------------------------------------------------------------------- kselect


def cmd_kselect(args: argparse.Namespace) -> int:
    kernel = args.kernel
    inputs = checks.selection_inputs(
        kernel,
        analysis_path=getattr(args, "analysis", None),
        out_root=_out_root(args),
        candidate=args.candidate,
    )
    analysis, candidate = inputs.analysis, inputs.candidate
    baseline = args.baseline
    if baseline == "auto":
        baseline = checks.reference_winner(analysis)
        if baseline is None:
            raise InputError("cannot tell the baseline backend: pass --baseline", key="reference_backend")
    tilegym_value = tilegym_checkout(getattr(args, "tilegym", None))
    module = None
    default_test = None
    cases_by_test: dict[str, list[Any]] = {}
    if tilegym_value:
        cases = checks.static_cases(precondition.require_tilegym(tilegym_value), kernel)
        module, default_test, cases_by_test = cases.module, cases.default_test, cases.cases_by_test
    selection = kselect.build_k_expressions(
        analysis, candidate, baseline, cases_by_test=cases_by_test, default_test=default_test
    )
    out = sys.stdout
    print(
        f"# {inputs.analysis_path} · candidate {candidate} ({inputs.candidate_source}) · baseline {baseline}",
        file=out,
    )
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
                    raise InputError(
                        "--static needs --tilegym and a statically derivable test", key="--static"
                    )
                ids = [c.nodeid for c in cases_by_test[t.test]]
                sink.extend(kselect.simulate_k(ids, t.expr))
            else:
                tilegym = precondition.require_tilegym(tilegym_value)
                if not t.test:
                    raise InputError(
                        "the config group names no test; pass --tilegym so test_perf is found", key="test"
                    )
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


def _note_k_filters(
    selection: kselect.KSelection, cases_by_test: dict[str, list[Any]], base_ids: list[str]
) -> None:
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


# ---------------------------------------------------------------------------- audit-wrapper


def cmd_audit(args: argparse.Namespace) -> int:
    tilegym = checks.tilegym_root(getattr(args, "tilegym", None))
    path = checks.wrapper_source(tilegym, args.kernel)
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
    findings = audit_wrapper(path, analysis)
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


class CheckCommand(Command):
    name = "check"
    group = None
    help = "E preconditions: autotune_launch import + test_perf cutile-rs wiring"
    description = (
        "E's preconditions on the TileGym checkout: tilegym.backend.cutile_rs.autotune_launch must import "
        "(else the BLOCKED files are written with --out-root), and test_perf must select cutile-rs cases "
        "(else the minimal edit is shown; --apply-wiring makes it, guarded)."
    )

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_checks_arguments(parser)
        parser.add_argument(
            "--apply-wiring", action="store_true", help="apply the proposed test_perf edit (guarded)"
        )
        parser.add_argument("--yes", action="store_true", help="with --apply-wiring: edit without asking")
        parser.add_argument("--max-ids", type=int, default=20, help="node ids to print (default 20)")

    def run(self, args: argparse.Namespace) -> int:
        return cmd_check(args)


class KselectCommand(Command):
    name = "kselect"
    group = None
    help = "-k expressions for candidate and baseline from analysis.json"
    description = (
        "The matching pytest -k expressions for the candidate and the baseline from analysis.json's "
        "test_perf_configs; --show collects both sides, --static derives the ids with ast."
    )

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_checks_arguments(parser)
        parser.add_argument(
            "--analysis",
            help="analysis.json (default: <kernel>/reference/analysis.json of the out "
            "root, else of the recorded session)",
        )
        parser.add_argument(
            "--candidate",
            default=None,
            help="candidate backend (default: session.json's, else the profile's, else cutile-rs)",
        )
        parser.add_argument(
            "--baseline", default="auto", help="baseline backend (default: analysis.json's winner)"
        )
        parser.add_argument(
            "--show", action="store_true", help="collect both sides and show/compare the node ids"
        )
        parser.add_argument(
            "--static", action="store_true", help="like --show, from ids derived with ast (no torch needed)"
        )

    def run(self, args: argparse.Namespace) -> int:
        return cmd_kselect(args)


class AuditWrapperCommand(Command):
    name = "audit-wrapper"
    group = None
    help = "static audit of src/tilegym/ops/cutile_rs/<kernel>.py"
    description = "Static (ast) audit of the cutile-rs wrapper src/tilegym/ops/cutile_rs/<kernel>.py: file:line, rule, action."

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_checks_arguments(parser)
        parser.add_argument(
            "--analysis",
            help="analysis.json (default: <out-root>/<kernel>/reference/analysis.json if present)",
        )
        parser.add_argument("--json", action="store_true", help="findings as JSON")

    def run(self, args: argparse.Namespace) -> int:
        return cmd_audit(args)


COMMANDS = (CheckCommand(), KselectCommand(), AuditWrapperCommand())
