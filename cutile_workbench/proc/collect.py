"""The node ids a ``pytest --collect-only -q`` child printed (one parser for the runner and the checks).

Contract: :func:`parse_collect_output` returns, in order, the lines of the form
``<path>.py::<rest>`` printed before the first blank line that follows them — pytest's ``-q``
collection list. What comes after (the warnings summary, which names node ids again; the
``N tests collected`` line) and ``ERROR …`` / banner lines are never ids.
"""

from __future__ import annotations

import re

_NODEID_LINE = re.compile(r"^(?P<id>[^\s:][^\s]*?\.py::\S.*)$")


def parse_collect_output(text: str) -> list[str]:
    """Node ids from ``pytest --collect-only -q`` output (see the module contract)."""
    ids: list[str] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            if ids:
                break
            continue
        m = _NODEID_LINE.match(line)
        if m:
            ids.append(m.group("id"))
    return ids
