"""Conftest of the profile suites, written to TileGym's ``tests/conftest.py`` conventions.

- ``pytest_make_parametrize_id``: primitives render as ``str(v)`` with ``-``→``_`` (so the framework
  ``cutile-hotpath`` has the id token ``cutile_hotpath``); other values use ``repr`` with the same
  replacement (``torch.bfloat16``), unless the repr is an object address.
- ``--print-record`` is registered the TileGym way: inside ``try/except ValueError`` (a parent
  conftest may have added it), never unconditionally. Importing this file needs no torch.
"""

from __future__ import annotations

from typing import Any


def pytest_addoption(parser: Any) -> None:
    try:
        parser.addoption(
            "--print-record",
            action="store_true",
            default=False,
            help="Print record_property content in tests",
        )
    except ValueError:
        pass  # already registered by a parent conftest


def pytest_make_parametrize_id(config: Any, val: Any, argname: str) -> str | None:
    if isinstance(val, (int, float, str, bool, type(None))):
        return str(val).replace("-", "_")
    text = repr(val)
    if text.startswith("<") and " at 0x" in text:
        return None
    return text.replace("-", "_")
