"""TileGym test-id rules (contract §3.4/§3.5): split a nodeid into func key, backend token, params.

``test_perf[cutile_rs-2-2048-...]`` → func ``…::test_perf``, token ``cutile_rs``, params
``2-2048-...``. The token is compared exactly, since ``cutile_rs`` starts with ``cutile``.
"""

from __future__ import annotations

import re

#: backend tokens as they appear in ids (``cutile-rs`` becomes ``cutile_rs`` via the conftest hook)
BACKEND_TOKENS: tuple[str, ...] = (
    "cutile_rs",
    "cutile",
    "triton",
    "pytorch",
    "tilecpp",
    # the workbench's own profile suites (cutile_workbench/profiles/): a hot-path-flawed
    # wrapper, a second cuTile variant, and tilegym.ops
    "cutile_hotpath",
    "cutile_row",
    "tilegym",
)

_NODEID = re.compile(r"^(?P<func>[^\[\]]+?)(?:\[(?P<id>.*)\])?$")


def id_token(framework: str) -> str:
    """Record key → id token: ``cutile-rs`` → ``cutile_rs`` (TileGym's parametrize-id hook)."""
    return framework.replace("-", "_")


def split_nodeid(nodeid: str, extra_tokens: tuple[str, ...] = ()) -> tuple[str, str, str]:
    """Return ``(func_key, backend_token, params)``; token is "" when the id has none we know."""
    m = _NODEID.match(nodeid.strip())
    if not m:
        return nodeid, "", ""
    func, test_id = m.group("func"), m.group("id") or ""
    first, sep, rest = test_id.partition("-")
    if first in BACKEND_TOKENS or first in extra_tokens:
        return func, first, rest if sep else ""
    return func, "", test_id


def shape_token(params: str) -> str:
    """File-name-safe form of a params string (contract §5.4 proposal)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", params) or "unnamed"


_DIGIT_RUNS = re.compile(r"(\d+)")


def natural_key(params: str) -> tuple[tuple[int, int | str], ...]:
    """Natural order of a params string: shape fields compare as numbers (4096 before 16384).
    The Ratios table and the run history order configs by it."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in _DIGIT_RUNS.split(params) if part
    )
