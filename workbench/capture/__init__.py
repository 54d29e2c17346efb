"""CUPTI capture engine and measuring harness (no Textual, no torch at import).

Public API:
- ``workbench.capture.session.open_session(backend, capture="auto"|"cupti"|"events")``: a session
  context manager (``CuptiSession`` / ``EventsSession``) with ``call()`` windows and ``captures()``.
- ``workbench.capture.harness.benchmark(fn, *, backend, ...) -> dict`` and ``benchmark_pair``.
- ``workbench.capture.records.attribute_calls``: the pure attribution + self-checks.
- ``workbench.capture.kineto_child``: the torch.profiler fallback, always in its own process.
- ``workbench.capture.tilegym_swap.install(config)``: TileGym's benchmark_fn_cupti → our harness.
"""
