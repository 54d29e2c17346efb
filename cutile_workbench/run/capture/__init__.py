"""CUPTI capture engine and measuring harness (no Textual, no torch at import).

Public API:
- ``cutile_workbench.run.capture.session.open_session(backend, capture="auto"|"cupti"|"events")``: a session
  context manager (``CuptiSession`` / ``EventsSession``) with ``call()`` windows and ``captures()``.
- ``cutile_workbench.run.capture.harness.benchmark(fn, *, backend, ...) -> dict`` and ``benchmark_pair``.
- ``cutile_workbench.run.capture.records.attribute_calls``: the pure attribution + self-checks.
- ``cutile_workbench.run.capture.kineto_child``: the torch.profiler fallback, always in its own process.
- ``cutile_workbench.run.capture.tilegym_swap.install(config)``: TileGym's benchmark_fn_cupti → our harness.
"""
