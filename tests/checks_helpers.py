"""Shared by the TileGym-checks tests: one import of the SYNTHETIC TileGym-tree builders.

``tests/fixtures/tilegym_tree/fake_tilegym.py`` lives beside the trees it writes (not a package
module), so it is loaded by path once and shared as ``fake``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "fake_tilegym", Path(__file__).parent / "fixtures" / "tilegym_tree" / "fake_tilegym.py"
)
assert _spec and _spec.loader
fake = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake)
