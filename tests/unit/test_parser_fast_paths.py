"""The perf-log parser's fast paths give the exact rules' answers (issue 31: parse cost at 1,000 configs).

Three shortcuts keep a 1,000-config parse near the floor's work, and each must decide exactly as the
item-by-item rule it skips:
- ``_status_line``'s prefilter: a line with no status word and no ``.py`` is not a status line, so
  the four patterns are not tried (the logs' ~200,000 test-output lines at 1,000 configs);
- ``_samples``' float path: a list of floats with a finite sum, inside [0, MAX_VALUE], is accepted at
  C speed; anything else goes to the item-by-item check;
- ``unsafe_value`` passes a container of non-string scalars by its items' types.

Checked on every line of the recorded sessions' real logs, on lines built around each status word,
and on sample lists at and around every edge (NaN, ±inf, -0.0, the bound, just past it, bools, ints,
huge ints, a finite list whose sum overflows).
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

from cutile_workbench.artifacts.perflog import parser as P
from cutile_workbench.errors import InputError
from cutile_workbench.infra.jsonutil import unsafe_value

PROFILES = Path(P.__file__).resolve().parents[2] / "profiles"
REAL_LOGS = sorted(PROFILES.glob("*/session/*/**/*perf*.txt"))


def _corpus() -> list[str]:
    lines: list[str] = []
    for log in REAL_LOGS:
        lines += [ln.strip() for ln in log.read_text(encoding="utf-8", errors="replace").split("\n")]
    rng = random.Random(0)
    nodeid = "tests/ops/test_x.py::Test::test_perf[cutile_rs-a b-1]"
    for word in P._WORDS:
        lines += [
            word,
            f"{word} (reason)",
            f"{word} [ 50%]",
            f"{word} {nodeid}",
            f"{word} {nodeid} - boom",
            f"[gw1] [ 10%] {word} {nodeid}",
            f"{nodeid} {word}",
            f"{nodeid} {word} [100%]",
            f"output then {word}",
            f"some{word.lower()}",
            word[:-1],
        ]
    lines += [nodeid, f"{nodeid} output", "x.py", "a .py b", "::", "tests/a.py::t", ""]
    alphabet = "PASEDFILKXRO .py:[]()-%0123456789abc"
    lines += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30))) for _ in range(5000)]
    return lines


def test_the_real_logs_are_there() -> None:
    assert len(REAL_LOGS) >= 4, REAL_LOGS


@pytest.mark.parametrize("pending", [None, ("tests/a.py::t", 3)])
def test_a_line_the_prefilter_passes_over_is_no_status_line(pending: tuple[str, int] | None) -> None:
    skipped = 0
    for line in _corpus():
        got = P._status_line(line, pending)
        exact = P._status_line_patterns(line, pending)
        assert got == exact, line
        skipped += P._MAY_BE_STATUS_RE.search(line) is None
    assert skipped > 1000, "the prefilter never applied: the test checks nothing"


def _state() -> Any:
    return P._State(path="x.txt", strict=True, extra_tokens=(), log=P.PerfLog(path="x.txt"))


def _decide(fn: Any, samples: Any) -> Any:
    try:
        return (
            "ok",
            fn(_state(), {"samples": samples}, "w", 1) if fn is P._samples else fn(_state(), samples, "w", 1),
        )
    except InputError as exc:
        return ("refused", exc.message)


EDGE_SAMPLES: list[Any] = [
    [1.0, 2.0],
    [0.0],
    [-0.0, 1.0],
    [P.MAX_VALUE],
    [P.MAX_VALUE, 1.0],
    [math.nextafter(P.MAX_VALUE, math.inf)],
    [1.0, -1e-300],
    [1.0, math.nan],
    [math.nan],
    [1.0, math.inf],
    [math.inf, -math.inf],
    [-math.inf],
    [1e308, 1e308],  # finite items whose sum overflows: the exact path decides
    [1.0, True],
    [True],
    [1, 2.5],
    [3],
    [10**400],
    [1.0, "2"],
    [1.0, None],
    [],
    "1.0",
    (1.0, 2.0),
    {"a": 1.0},
]


@pytest.mark.parametrize("samples", EDGE_SAMPLES, ids=repr)
def test_the_float_path_decides_as_the_exact_rule(samples: Any) -> None:
    assert _decide(P._samples, samples) == _decide(P._samples_exact, samples)


def test_random_sample_lists_decide_as_the_exact_rule() -> None:
    rng = random.Random(1)
    pool = [0.0, -0.0, 1.5, 1e-9, P.MAX_VALUE, 2e15, -1.0, math.nan, math.inf, 7, True, 1e308]
    for _ in range(3000):
        samples = [rng.choice(pool) for _ in range(rng.randint(1, 6))]
        assert _decide(P._samples, samples) == _decide(P._samples_exact, samples), samples


class _Str(str):
    pass


class _Float(float):
    pass


@pytest.mark.parametrize(
    ("doc", "unsafe"),
    [
        ({"samples": [1.0, 2, True, None]}, False),
        ({"samples": [1.0, "\ud800"]}, True),
        ({"samples": [1.0, _Str("\ud800")]}, True),
        ({"samples": [_Float(1.0), "\udc80"]}, True),
        ({"k": {"samples": [1.0]}}, False),
        ([[[[1.0]]]], False),
    ],
)
def test_unsafe_value_still_sees_strings_among_numbers(doc: Any, unsafe: bool) -> None:
    assert (unsafe_value(doc, 32) is not None) is unsafe


def test_unsafe_value_still_counts_depth_past_number_lists() -> None:
    doc: Any = [1.0, 2.0]
    for _ in range(40):
        doc = [1.0, doc]
    assert unsafe_value(doc, 32) is not None
    assert unsafe_value(doc, 64) is None
