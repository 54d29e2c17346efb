"""The check-then-open race of issue 33 §4, run for real: a thread swaps a dir of the kernel dir with
a link out (and back) in a bounded loop while the main thread writes through the one atomic write.

SYNTHETIC trees in tmp_path (the race is about the file system, not about the data). An *escape* is
any byte, temp file or dir that lands in the outside dir; a refusal (``UnsafePath``) is the right
answer while the link is in place, and a write into the real dir the right one otherwise. The loop
counts are fixed (no wall time): the default run does 300 writes per target, ``-m slow`` 2,500.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confine_race_helpers import race, writer_race


@pytest.mark.parametrize("sub", ["workbench", "reports"])
def test_no_escape_while_a_dir_swaps_with_a_link(tmp_path: Path, sub: str) -> None:
    escapes, refused, written = race(tmp_path, sub, 300)
    assert escapes == 0
    assert refused + written == 300


@pytest.mark.slow
@pytest.mark.parametrize("sub", ["workbench", "reports"])
def test_no_escape_in_thousands_of_racing_writes(
    tmp_path: Path, sub: str, request: pytest.FixtureRequest
) -> None:
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("a long sweep: select it with -m slow")
    escapes, refused, written = race(tmp_path, sub, 2_500)
    assert escapes == 0, f"{escapes} escapes in 2,500 writes ({refused} refused, {written} written)"


@pytest.mark.parametrize("swapped", ["kernel dir", "reports"])
def test_no_report_set_byte_lands_outside_while_the_kernel_dir_swaps(tmp_path: Path, swapped: str) -> None:
    escapes, refused, written = writer_race(tmp_path, swapped, 60)
    assert escapes == 0 and refused + written == 60


@pytest.mark.slow
@pytest.mark.parametrize("swapped", ["kernel dir", "reports"])
def test_no_report_set_byte_lands_outside_in_a_thousand_racing_writes(
    tmp_path: Path, swapped: str, request: pytest.FixtureRequest
) -> None:
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("a long sweep: select it with -m slow")
    escapes, refused, written = writer_race(tmp_path, swapped, 1_000)
    assert escapes == 0, f"{escapes} escapes in 1,000 writes ({refused} refused, {written} written)"
