"""cutile-workbench: TileGym E (benchmark) and F (residual perf) stages, headless core + Textual app.

The folders are the pipeline, top to bottom; each imports only the ones below it (import-linter
contracts in ``pyproject.toml``, no cycles; README.md "Architecture" and CONTRIBUTING.md say more):

- faces: ``cli/`` (nothing imports it), ``tui/`` (the only part that imports Textual; ``widgets/``
  inside, fed model objects only) — they call ``services/``, the door to everything below;
- ``stages/f/`` on ``stages/session/`` on ``stages/e/`` (E never imports F), then ``evidence/``. The
  ``KernelSession`` (``stages/session/``) is the one home of a kernel dir's facts: the services open one
  per command and every face's facts come from it (each input read once, each fact computed once, the
  derived-facts cache underneath; one config naming for every ``--config``);
- ``run/`` (runner, capture, the pytest plugin, scale-out), ``ir/``, ``history/``, ``checks/``;
- ``artifacts/`` (the TileGym artifact layout and its files), ``profiles/`` (registry, GPU suites,
  recorded sessions as package data);
- ``infra/``, ``pystatic/``, ``proc/``, ``gpu/`` (plumbing written once), then ``model`` and ``errors``.

``__version__`` below is the one place the version is written (pyproject reads it).
"""

__version__ = "0.1.0"
