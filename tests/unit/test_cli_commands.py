"""The CLI's command base class: every registered command derives from it and declares itself."""

from __future__ import annotations

import argparse
import types

import pytest

from cutile_workbench.cli import COMMAND_MODULES, load_commands
from cutile_workbench.cli.common import Command


def test_every_registered_command_is_a_command() -> None:
    commands = load_commands()
    assert len(commands) >= len(COMMAND_MODULES)
    assert all(isinstance(c, Command) for c in commands)
    assert all(c.name and c.help for c in commands)


def test_a_command_without_a_name_is_refused_when_declared() -> None:
    with pytest.raises(TypeError, match="name"):

        class Nameless(Command):  # the class statement itself must fail
            help = "h"

            def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
                pass

            def run(self, args: argparse.Namespace) -> int:
                return 0


def test_registering_something_that_is_not_a_command_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("fake_cli_module")
    fake.COMMANDS = (object(),)  # type: ignore[attr-defined]
    monkeypatch.setitem(__import__("sys").modules, "fake_cli_module", fake)
    with pytest.raises(TypeError, match="fake_cli_module"):
        load_commands(("fake_cli_module",))
