"""Shared by the perflog tests: the fixture dir and a cached import of its suite runner.

``tests/fixtures/perflog/suite_runner.py`` is not a package module (the fixtures dir holds test
suites pytest must not collect), so it is loaded by path, once per session, under one name.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

FIXTURES = Path(__file__).parent / "fixtures" / "perflog"
_NAME = "perflog_suite_runner"


def load_suite_runner() -> ModuleType:
    """The fixture suite runner module (real child pytest runs of the fixture perf suite)."""
    if _NAME not in sys.modules:
        spec = importlib.util.spec_from_file_location(_NAME, FIXTURES / "suite_runner.py")
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[_NAME] = mod
        spec.loader.exec_module(mod)
    return sys.modules[_NAME]
