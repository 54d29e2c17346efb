"""Which backend is the candidate of a kernel dir — resolved once, in one order, for E's views and F.

Contract: :func:`resolve_candidate_backend` returns, first that applies:
1. ``explicit`` — what the user chose (``--candidate-backend``, the TUI's choice);
2. ``session.json``'s ``candidate`` — recorded sessions name it (a stand-in says which backend stands in);
3. the one framework of the candidate log's records, when there is exactly one;
4. the id token the candidate role was run with (``runs.candidate.backend_token``, ``_`` → ``-``:
   a ``run`` before E wrote any report);
5. the framework of the candidate log's first record (a log holding several);
6. None — the caller says what it assumes (F: ``cutile-rs``).

:func:`log_framework` is the candidate *log's* framework, what identity and the speed of light are
computed for: its one framework, ``cutile-rs`` when it holds none or several (the same rule everywhere).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cutile_workbench.model import PerfLog


def log_framework(candidate_log: PerfLog | None) -> str:
    """The candidate log's framework: its records' one framework, else ``cutile-rs`` (module contract)."""
    frameworks = sorted({r.framework for r in candidate_log.records}) if candidate_log is not None else []
    return frameworks[0] if len(frameworks) == 1 else "cutile-rs"


def run_token(session: Mapping[str, Any] | None) -> str | None:
    """The id token the candidate role was run with (``session.json`` ``runs.candidate.backend_token``)."""
    runs = (session or {}).get("runs")
    cand = runs.get("candidate") if isinstance(runs, Mapping) else None
    token = cand.get("backend_token") if isinstance(cand, Mapping) else None
    return token if isinstance(token, str) and token else None


def resolve_candidate_backend(
    session: Mapping[str, Any] | None,
    candidate_log: PerfLog | Sequence[str] | None,
    explicit: str | None = None,
) -> str | None:
    """The candidate backend (record key) by the module contract's order. ``candidate_log`` may be
    given as its records' frameworks in log order (repeats may be left out: the rule reads the set
    and the first), what a caller without the parsed log has (F's cached records)."""
    if explicit:
        return explicit
    named = (session or {}).get("candidate")
    if isinstance(named, str) and named:
        return named
    if isinstance(candidate_log, PerfLog):
        frameworks = [r.framework for r in candidate_log.records]
    else:
        frameworks = list(candidate_log or ())
    if len(set(frameworks)) == 1:
        return frameworks[0]
    token = run_token(session)
    if token:
        return token.replace("_", "-")
    return frameworks[0] if frameworks else None
