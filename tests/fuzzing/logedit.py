"""Semantic edits of a REAL raw perf log, per config, for the invariant property tests.

Contract: ``edit_log(text, edits)`` returns the log with, for each ``params → Edit``:
``keep``; ``scale`` (the forward median × factor, in the repr, record_json and summary lines alike);
``value`` (the median replaced by a token: ``nan``, ``-1``, ``0``, ``1e308``, ``inf``); ``fail`` (the
test's status word becomes FAILED and its block goes, as the printer prints nothing for a failed
test, contract §3.4); ``fail_keep_record`` (FAILED but the block stays: a contradictory log, used by
a known-bug reproducer); ``drop`` (the record block and its status line removed). The
blocks are found by the "Performance Test Results" marker and the ``params:`` line; the status word
is the nearest PASSED line before the block (how ``pytest -sv --print-record`` prints it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MARKER = "Performance Test Results"
_MEDIAN_RE = re.compile(r"""(['"]median['"]: |median_ms=)([-+0-9.eE]+|nan|NaN|inf|Infinity)""")


@dataclass(frozen=True)
class Edit:
    kind: str  # keep | scale | value | fail | fail_keep_record | drop
    factor: float = 1.0
    token: str = ""


def _new_median(old: str, edit: Edit, quoted_json: bool) -> str:
    if edit.kind == "scale":
        return repr(float(old) * edit.factor)
    tok = edit.token
    if quoted_json:  # record_json is JSON: Python's json spells these NaN / Infinity
        return {"nan": "NaN", "inf": "Infinity"}.get(tok, tok)
    return tok


def _sub_medians(line: str, edit: Edit) -> str:
    is_json = line.startswith("record_json:")

    def repl(m: re.Match[str]) -> str:
        return m.group(1) + _new_median(m.group(2), edit, is_json)

    return _MEDIAN_RE.sub(repl, line)


def _blocks(lines: list[str]) -> list[tuple[int, int, str]]:
    """(first line, last line, params) of every record block."""
    out = []
    i = 0
    while i < len(lines):
        if MARKER in lines[i]:
            j = i + 1
            params = ""
            while j < len(lines) and not lines[j].startswith("-----") and MARKER not in lines[j]:
                if lines[j].startswith("params: "):
                    params = lines[j][len("params: ") :].strip()
                j += 1
            out.append((i, min(j, len(lines) - 1), params))
            i = j
        i += 1
    return out


def edit_log(text: str, edits: dict[str, Edit]) -> str:
    lines = text.split("\n")
    drop: set[int] = set()
    for first, last, params in _blocks(lines):
        edit = edits.get(params)
        if edit is None or edit.kind == "keep":
            continue
        status = next(
            (k for k in range(first - 1, max(-1, first - 4), -1) if lines[k].rstrip().endswith("PASSED")),
            None,
        )
        if edit.kind == "drop":
            drop.update(range(first, last + 1))
            if status is not None:
                drop.add(status)
        elif edit.kind in ("fail", "fail_keep_record"):
            if status is not None:
                lines[status] = lines[status].rstrip()[: -len("PASSED")] + "FAILED"
            if edit.kind == "fail":
                drop.update(range(first, last + 1))
        else:
            for k in range(first, last + 1):
                lines[k] = _sub_medians(lines[k], edit)
    return "\n".join(line for k, line in enumerate(lines) if k not in drop)
