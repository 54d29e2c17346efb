"""TileGym test-id rules (contract §3.4/§3.5): split a nodeid into func key, backend token, params.

``test_perf[cutile_rs-2-2048-...]`` → func ``…::test_perf``, token ``cutile_rs``, params
``2-2048-...``. The token is compared exactly, since ``cutile_rs`` starts with ``cutile``.
"""

from __future__ import annotations

import re

# the id rules a face shows (backend tokens, splitting a node id, the natural order of params) live in the
# model (issue 30: widgets import the model only); re-exported here, where the artifact code reads them
from cutile_workbench.model import BACKEND_TOKENS as BACKEND_TOKENS
from cutile_workbench.model import natural_key as natural_key
from cutile_workbench.model import split_nodeid as split_nodeid


def id_token(framework: str) -> str:
    """Record key → id token: ``cutile-rs`` → ``cutile_rs`` (TileGym's parametrize-id hook)."""
    return framework.replace("-", "_")


def shape_token(params: str) -> str:
    """File-name-safe form of a params string (contract §5.4 proposal)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", params) or "unnamed"
