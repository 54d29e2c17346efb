"""Snapshot tests live here so their SVGs land in tests/snapshots/__snapshots__/ (one owner).

Makes ``tests/`` importable for the shared helper module ``tui_helpers``.
"""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parents[2])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
