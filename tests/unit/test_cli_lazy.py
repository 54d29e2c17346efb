"""Commands import only what they run (issue 26): ``--help`` loads no command module and no
service; a command loads its own module only; the static command index matches the modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _modules_after(argv: list[str]) -> set[str]:
    code = (
        "import contextlib, io, json, sys\nfrom cutile_workbench.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    rc = main({argv!r})\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


HEAVY = (
    "numpy",
    "scipy",
    "textual",
    "cutile_workbench.stages.e.stats",
    "cutile_workbench.stages.f.diagnosis",
    "cutile_workbench.services",
    "cutile_workbench.run.runner",
    "cutile_workbench.stages.e.report",
    "cutile_workbench.checks",
)


def test_help_imports_no_command_module_and_no_service() -> None:
    mods = _modules_after(["--help"])
    loaded = sorted(
        m
        for m in mods
        if m.split(".")[0] in ("numpy", "scipy", "textual")
        or any(m == h or m.startswith(h + ".") for h in HEAVY if h.startswith("workbench"))
    )
    assert not loaded, f"--help imported {loaded}"
    commands = sorted(
        m for m in mods if m.startswith("cutile_workbench.cli.") and m != "cutile_workbench.cli.common"
    )
    assert commands == [], f"--help imported command modules {commands}"


def test_a_command_imports_its_own_module_only() -> None:
    mods = _modules_after(["table", "--help"])
    assert "cutile_workbench.cli.stage_e" in mods
    others = sorted(
        m
        for m in mods
        if m.startswith("cutile_workbench.cli.")
        and m not in ("cutile_workbench.cli.stage_e", "cutile_workbench.cli.common")
    )
    assert (
        others == []
        and "cutile_workbench.stages.f.diagnosis" not in mods
        and "cutile_workbench.cli.stage_f" not in mods
    )


def test_command_index_matches_the_modules() -> None:
    import importlib

    from cutile_workbench.cli import COMMAND_INDEX

    declared = [(e.module, e.name, e.group, e.help) for e in COMMAND_INDEX]
    actual = [
        (m, c.name, c.group, c.help)
        for m in dict.fromkeys(e.module for e in COMMAND_INDEX)
        for c in importlib.import_module(m).COMMANDS
    ]
    assert declared == actual


@pytest.mark.parametrize("argv", [["report", "--help"], ["histroy", "matmul"], ["report", "f", "--help"]])
def test_lazy_parser_keeps_usage_behaviour(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from cutile_workbench.cli import main

    rc = main(argv)
    out = capsys.readouterr()
    if argv[0] == "histroy":
        assert rc == 2 and "did you mean history" in out.err
    else:
        assert rc == 0 and "usage:" in out.out
