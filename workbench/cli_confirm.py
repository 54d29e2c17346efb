"""The one confirmation gate every writing CLI command goes through (``report e``, ``report f``).

Contract: ``confirm_write(plan, yes=...)`` returns None when writing may proceed, else the exit
code to return (2) after telling the user why on stderr. Non-interactive stdin never writes
without ``--yes``; a TTY is asked ``[y/N]`` with No as the default.
"""

from __future__ import annotations

import sys

from workbench.model import ReportPlan


def ask_yes_no(prompt: str) -> bool:
    """Ask on stderr, read one line from stdin; anything but y/yes (or an error) means No."""
    print(prompt + " [y/N] ", end="", file=sys.stderr, flush=True)
    try:
        answer = sys.stdin.readline()
    except (OSError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in ("y", "yes")


def confirm_write(plan: ReportPlan, *, yes: bool) -> int | None:
    """None = go ahead and write ``plan``; an int = refuse with that exit code."""
    if yes:
        return None
    if not sys.stdin.isatty():
        print("error: refusing to write without confirmation: stdin is not a terminal; pass --yes "
              "(or --dry-run to preview)", file=sys.stderr)
        return 2
    if not ask_yes_no(f"Write {len(plan.files)} file(s) under {plan.kernel_dir}?"):
        print("not written", file=sys.stderr)
        return 2
    return None
