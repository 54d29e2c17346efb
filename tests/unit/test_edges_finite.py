"""Non-finite numbers never leave E's stats: a row's ratio, its CI and the geomean are finite or the
row is NA with the numbers named (issue 35, item 4).

The logs are the REAL rms_norm H200 session (``profiles/rms_norm/session``), one config's numbers
replaced (SYNTHETIC edits, through ``tests/fuzzing/logedit.py`` or a regex on the samples). The parser
accepts every number used here (each is positive and <= its 1e15 bound): what is tested is what the
stats make of them.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fuzzing.logedit import Edit, edit_log

from cutile_workbench.artifacts.analysis import load_analysis
from cutile_workbench.artifacts.perflog.parser import MAX_VALUE, parse_perf_log
from cutile_workbench.stages.e.stats import RatioTable, build_ratio_table

SESSION = Path(__file__).resolve().parents[2] / "cutile_workbench/profiles/rms_norm/session/rms_norm"
CAND = SESSION / "reports/agent_logs/perf_cutile_rs.full.txt"
BASE = SESSION / "baseline_perf_triton_tileir.txt"
CONFIG = "8192-8192-torch.bfloat16"


def _table(cand_text: str, base_text: str, n_boot: int = 50) -> RatioTable:
    return build_ratio_table(
        "rms_norm",
        parse_perf_log(CAND.name, text=cand_text),
        {"triton_tileir": parse_perf_log(BASE.name, text=base_text)},
        load_analysis(SESSION / "reference/analysis.json"),
        n_boot=n_boot,
    )


def _median(text: str, token: str) -> str:
    return edit_log(text, {CONFIG: Edit("value", token=token)})


def _finite_everywhere(table: RatioTable) -> None:
    numbers: list[float] = []
    for r in table.rows:
        numbers += [x for x in (r.ratio, r.ci_low, r.ci_high) if x is not None]
    numbers += [x for x in (table.geomean, *(table.geomean_ci or ())) if x is not None]
    numbers += list(table.variant_geomeans.values())
    bad = [x for x in numbers if not (math.isfinite(x) and x > 0 and math.isfinite(1 / x))]
    assert not bad, bad


def _row(table: RatioTable):  # type: ignore[no-untyped-def]
    return next(r for r in table.rows if r.params == CONFIG)


@pytest.mark.parametrize(
    ("cand", "base"),
    [
        ("1e15", "1e-300"),  # the case: the quotient overflows to inf
        (repr(MAX_VALUE), "1e-294"),  # at the parser's bound, the quotient still overflows
        ("1e-300", "1e15"),  # the other way: the quotient 1e-315 is subnormal, 1/ratio is inf
        ("1e-300", "0.068480"),  # a real baseline, an absurdly small candidate: 1e-298 has a finite inverse
    ],
)
def test_an_absurd_median_makes_the_row_na_with_both_numbers(cand: str, base: str) -> None:
    table = _table(_median(CAND.read_text(), cand), _median(BASE.read_text(), base))
    _finite_everywhere(table)
    row = _row(table)
    if row.status == "OK":  # allowed only when the ratio and its inverse are ordinary numbers
        assert row.ratio is not None and math.isfinite(1 / row.ratio)
    else:
        assert row.status == "NA" and row.reason and "not finite" in row.reason
        assert float(cand) == pytest.approx(float(re.findall(r"candidate (\S+) ms", row.reason)[0]))
    assert table.verdict != "DONE" or row.status == "OK"


def test_a_subnormal_ratio_is_na_not_a_done_verdict() -> None:
    """1e-300 ms over 1e15 ms = 1e-315: finite, > 0, but its inverse is inf and the geomean
    (1e-45 over the real rows) would say DONE."""
    table = _table(_median(CAND.read_text(), "1e-300"), _median(BASE.read_text(), "1e15"))
    row = _row(table)
    assert row.status == "NA" and row.ratio is None
    assert (
        row.reason is not None
        and "1e-300" in row.reason
        and "1e+15" in row.reason.replace("1000000000000000.0", "1e+15")
    )
    assert table.verdict == "INVESTIGATE" and table.severity == "MISSING_DATA"
    _finite_everywhere(table)


def test_a_normal_ratio_just_inside_stays_ok() -> None:
    """The guard's other side: a 10x edit of the real median stays an OK row with its real CI."""
    table = _table(edit_log(CAND.read_text(), {CONFIG: Edit("scale", factor=10.0)}), BASE.read_text())
    row = _row(table)
    assert row.status == "OK" and row.ratio is not None and 5 < row.ratio < 50
    _finite_everywhere(table)


def _samples(text: str, values: list[float]) -> str:
    """SYNTHETIC: the CONFIG block's raw samples (repr and record_json alike) replaced by ``values``."""
    lines = text.splitlines(keepends=True)
    out, inside = [], False
    body = ", ".join(repr(v) for v in values)
    for line in lines:
        if line.startswith("params: "):
            inside = line.strip() == f"params: {CONFIG}"
        if inside:
            line = re.sub(r"""(['"]samples['"]: )\[[^\]]*\]""", lambda m: m.group(1) + "[" + body + "]", line)
        out.append(line)
    return "".join(out)


def test_bootstrap_replicates_that_overflow_leave_no_inf_in_the_ci() -> None:
    """Medians ordinary (1 ms each), samples spanning 1e-300..1e15: a replicate's ratio of medians
    overflows. The row's CI (and so the joint geomean CI) must be absent, not inf."""
    cand = _samples(_median(CAND.read_text(), "1.0"), [1.0, 1e15])
    base = _samples(_median(BASE.read_text(), "1.0"), [1e-300, 1.0])
    table = _table(cand, base, n_boot=200)
    row = _row(table)
    assert row.status == "OK" and row.ratio == pytest.approx(1.0)
    assert (row.ci_low, row.ci_high) == (None, None)
    assert table.geomean_ci is None
    _finite_everywhere(table)


def test_no_ok_row_with_na_and_unmatched_rows_does_not_claim_no_baseline_matches() -> None:
    """The BLOCKED note 'no baseline matches any of them' only when nothing failed: here one config
    failed (an NA row, its baseline present) and the others lack a baseline (SYNTHETIC drops of the
    REAL baseline's blocks)."""
    cand_text = CAND.read_text()
    others = {
        line.split(": ", 1)[1].strip()
        for line in BASE.read_text().splitlines()
        if line.startswith("params: ") and line.split(": ", 1)[1].strip() != CONFIG
    }
    base_text = edit_log(BASE.read_text(), dict.fromkeys(others, Edit("drop")))
    table = _table(edit_log(cand_text, {CONFIG: Edit("fail")}), base_text)
    assert table.geomean is None and table.verdict == "BLOCKED"
    assert {r.status for r in table.rows} == {"NA", "NO_BASELINE"}
    assert not [n for n in table.notes if "no baseline matches" in n]


def test_a_row_without_candidate_samples_gets_no_ci_and_the_others_keep_theirs() -> None:
    """One config's candidate samples removed (SYNTHETIC; TileGym's own harness prints none): that row
    has no CI, every other row keeps its own, the joint geomean CI is absent; n_boot=0 gives none."""
    table = _table(_samples(CAND.read_text(), []), BASE.read_text(), n_boot=50)
    row = _row(table)
    assert row.status == "OK" and (row.ci_low, row.ci_high) == (None, None)
    others = [r for r in table.matched if r.params != CONFIG]
    assert others and all(r.ci_low is not None and r.ci_high is not None for r in others)
    assert table.geomean_ci is None
    plain = _table(CAND.read_text(), BASE.read_text(), n_boot=0)
    assert plain.geomean_ci is None and all(r.ci_low is None for r in plain.rows)
