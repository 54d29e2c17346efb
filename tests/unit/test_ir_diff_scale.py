"""The IR diff on large pairs (issue 33 item 7): rendering costs one pass over the rows, not one per
hunk, and a side longer than ``MAX_DIFF_LINES`` is refused with the reason. REAL inputs: the recorded
matmul session's per-config dumps (cuTile's printer against cutile-rs's); the scaling (each real entry
repeated under a new name) is SYNTHETIC. No wall time is asserted: bench/ir_structdiff_scale.py measures."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MATMUL = REPO / "cutile_workbench/profiles/tilegym/session/matmul"
_ENTRY = re.compile(r"^(\s*entry @)([A-Za-z0-9_]+)\(", re.M)


def _scaled(text: str, copies: int) -> str:
    """``copies`` renamed copies of the one entry of a raw (module-less) real dump."""
    return "".join(_ENTRY.sub(lambda m, i=i: f"{m.group(1)}{m.group(2)}_c{i}(", text) for i in range(copies))


class _CountingRows(list):  # type: ignore[type-arg]
    passes = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        _CountingRows.passes += 1
        return super().__iter__()


def test_rendering_scans_the_rows_once_not_once_per_hunk() -> None:
    from cutile_workbench.cli.ir_diff import render_structural
    from cutile_workbench.services.ir_diff import IRDiff

    name = "True-True-False-False-4096-4096-4096-0-0-torch.float16.mlir"
    ref = _scaled((MATMUL / "workbench/ir/reference" / name).read_text(), 20)
    gen_one = (MATMUL / "workbench/ir/candidate" / name).read_text()
    inner = gen_one[gen_one.index("\n") + 1 : gen_one.rstrip().rindex("\n")]  # the module's body
    gen = gen_one[: gen_one.index("\n") + 1] + _scaled(inner + "\n", 20) + "}\n"
    from cutile_workbench.ir.structdiff import structural_diff

    sd = structural_diff(ref, gen)
    assert len(sd.hunks) > 50  # enough hunks that a per-hunk scan shows
    object.__setattr__(sd, "rows", _CountingRows(sd.rows))

    class _Fake:
        struct = sd
        launch_evidence: tuple[str, ...] = ()

        def audit_row_of(self, check: str | None) -> str | None:
            return None

    _CountingRows.passes = 0
    lines = render_structural(_Fake(), cosmetic=True)  # type: ignore[arg-type]
    assert lines and IRDiff is not None
    assert _CountingRows.passes <= 5, _CountingRows.passes  # was 2 per hunk (the number column's width)


def test_a_side_over_the_line_limit_is_refused_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cutile_workbench.services.ir_diff as svc
    from cutile_workbench.cli import main

    shutil.copytree(MATMUL, tmp_path / "matmul")
    monkeypatch.setattr(svc, "MAX_DIFF_LINES", 50)  # the real dumps are 92-116 lines
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(["diff", "matmul", "--out-root", str(tmp_path)])
    assert rc == 2, err.getvalue()
    assert "-line limit of the IR diff" in err.getvalue() and str(tmp_path) in err.getvalue()
    assert "internal error" not in err.getvalue()


def test_the_real_pairs_are_under_the_limit() -> None:
    from cutile_workbench.ir.loader import MAX_DIFF_LINES

    longest = max(
        p.read_text().count("\n") for p in (REPO / "cutile_workbench/profiles").glob("*/session/*/**/*.mlir")
    )
    assert longest < MAX_DIFF_LINES / 10
