"""pytest plugin: ``--workbench-only-ids FILE`` keeps exactly the node ids listed in FILE.

Contract: FILE is UTF-8, one node id per line (as ``pytest --collect-only -q`` prints them,
relative to the rootdir). After collection, every item whose ``nodeid`` is not listed is
deselected through pytest's own ``pytest_deselected`` hook (so pytest's "N deselected" count and
``-k`` keep working on top). Exact string match: a listed ``[a-1]`` never keeps ``[a-10]``. An
unreadable FILE is a usage error (pytest exit 4). Loaded by a shard worker with
``-p cutile_workbench.run.scaleout.select_plugin`` through ``RunSpec.extra_args``, so the collection child and
every resumed attempt of :func:`cutile_workbench.run.runner.run` see the same shard.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--workbench-only-ids",
        metavar="FILE",
        default=None,
        help="cutile-workbench shard: run only the node ids listed in FILE (one per line)",
    )


def _listed(config: pytest.Config) -> set[str] | None:
    path = config.getoption("--workbench-only-ids")
    if not path:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise pytest.UsageError(f"--workbench-only-ids: cannot read {path}: {exc.strerror or exc}") from None
    return {line for line in text.split("\n") if line.strip()}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    keep = _listed(config)
    if keep is None:
        return
    selected = [item for item in items if item.nodeid in keep]
    deselected = [item for item in items if item.nodeid not in keep]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected
