""" "Measured by" derived from what each record carries (issue 18 §5), on the REAL recorded sessions.

The older stand-in sessions (rms_norm, softmax) were recorded before the harness marked its window
mode and before the CUDA-event self-check: their records carry raw samples but neither. The real
cutile-rs sessions (matmul, silu_and_mul) carry per-call windows and a self-check per record.
"""

from __future__ import annotations

import pytest

from cutile_workbench.cli import main


def _measured_by(kernel: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["table", kernel]) == 0
    return next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("measured by: "))


def test_older_stand_in_session_is_not_described_with_a_self_check(capsys: pytest.CaptureFixture[str]):
    line = _measured_by("rms_norm", capsys)
    assert "self-check (" not in line and "per-call windows" not in line
    assert line == (
        "measured by: candidate: workbench CUPTI harness (window mode not recorded, raw samples, "
        "no CUDA-event self-check) (7 rows); baseline: workbench CUPTI harness (window mode not "
        "recorded, raw samples, no CUDA-event self-check) (7 rows)"
    )


def test_real_session_names_what_its_records_carry(capsys: pytest.CaptureFixture[str]):
    line = _measured_by("matmul", capsys)
    assert line == (
        "measured by: candidate: workbench CUPTI harness (per-call windows, raw samples, CUDA-event "
        "self-check) (6 rows); baseline: workbench CUPTI harness (per-call windows, raw samples, "
        "CUDA-event self-check) (6 rows)"
    )
