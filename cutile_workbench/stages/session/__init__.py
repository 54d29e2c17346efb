"""One :class:`~cutile_workbench.stages.session.kernel.KernelSession` per kernel dir (issue 30).

The session is the one home of the facts of a kernel dir: every face (CLI command, TUI screen) gets
them through ``services/``, which open the session once per command and ask it. It sits in the layers
between ``stages/f`` (F's inputs take a session) and ``stages/e`` (what it reads and computes: E's
table, trust, the history's noise floors, the artifacts). ``configs`` is the one config-naming rule
(full params, the TUI's label, a node id → one config).
"""
