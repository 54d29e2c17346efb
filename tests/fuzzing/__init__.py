"""Fuzzing helpers shared by ``tests/test_fuzz_*.py``, ``tests/fuzz/test_invariants.py`` and ``bench/fuzz_report.py``.

``mutator`` (seeded byte/line mutations), ``targets`` (every parser + the rule), ``strategies``
(structured hypothesis strategies), ``logedit`` (per-config edits of real perf logs), ``cli_case``
(one CLI case on a mutated copy of a recorded session). ``seeds/`` holds extra real seed files.
"""
