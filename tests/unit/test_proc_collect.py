"""One parser of ``pytest --collect-only -q`` output for the runner and the TileGym checks.

The text is shaped like pytest 8/9's real output (synthetic ids; the warnings summary, whose lines
name node ids too, is what a second parser used to count again).
"""

from __future__ import annotations

from cutile_workbench.checks import childproc
from cutile_workbench.run import runner

IDS = [
    "tests/ops/test_rms_norm.py::Test_RMSNorm::test_perf[cutile_rs-4096-1024-torch.bfloat16]",
    "tests/ops/test_rms_norm.py::Test_RMSNorm::test_perf[cutile_rs-8192 x 8192-torch.bfloat16]",
]
OUTPUT = (
    f"{IDS[0]}\n{IDS[1]}\n\n"
    "=============================== warnings summary ===============================\n"
    f"{IDS[0]}\n"
    "  /x/tilegym/ops.py:12: UserWarning: TF32 disabled\n"
    "    warnings.warn(\n\n"
    "-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html\n"
    "2/40 tests collected (38 deselected) in 0.41s\n"
)


def test_the_runner_and_the_checks_share_one_parser() -> None:
    assert childproc.parse_collect_output is runner.parse_collect_output


def test_ids_end_at_the_first_blank_line_warnings_summary_not_counted() -> None:
    assert list(runner.parse_collect_output(OUTPUT)) == IDS


def test_error_lines_and_banners_are_no_ids() -> None:
    text = (
        "ERROR tests/ops/test_x.py::test_perf - ImportError: no cutile_rs\n"
        "==================== short test summary info ====================\n"
        "!!!!!!!! Interrupted: 1 error during collection !!!!!!!!\n"
    )
    assert list(runner.parse_collect_output(text)) == []
