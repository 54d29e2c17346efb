"""In-process validator twins vs TileGym's real shell scripts: byte-identical stdout and exit codes.

The comparison tests run the real ``validate_*.sh`` from the read-only TileGym snapshot at
``.fetched/TileGym`` and skip when it is absent. The perf-log bodies are built from the contract's
§3.6 block with real H200 numbers (rms_norm 262144x1024 triton 0.34896 ms, contract §3.3); the
corruptions (CRLF, NUL, trailing spaces, two geomean lines...) are synthetic edge cases.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cutile_workbench.stages.e.validators import (
    ValidatorResult,
    run_real_validator,
    transcript,
    validate_agent_e,
    validate_agent_f,
    validate_perf_log,
)

TILEGYM = Path(__file__).resolve().parents[2] / ".fetched" / "TileGym"
SCRIPTS = TILEGYM / "skills" / "tilegym-converting-cutile-triton-to-cutile-rs" / "scripts"
needs_scripts = pytest.mark.skipif(
    not (SCRIPTS / "validate_agent_e.sh").is_file(),
    reason="TileGym snapshot with the skill's scripts is absent",
)

# real H200 record (contract §3.3), rendered as the §3.6 printer block
BLOCK = (
    "tests/ops/test_rms_norm.py::Test_RMSNorm::test_perf[triton-static_persistent-262144-1024-torch.float16] PASSED\n"
    "-------------------- Performance Test Results --------------------\n"
    "nodeid: tests/ops/test_rms_norm.py::Test_RMSNorm::test_perf[triton-static_persistent-262144-1024-torch.float16]\n"
    "framework: triton\n"
    "params: static_persistent-262144-1024-torch.float16\n"
    "Triton: {'forward': {'mean': 0.34924473333333333, 'median': 0.34895899999999985, 'nrep': 120}} ms\n"
    "forward: median_ms=0.348959 mean_ms=0.349245 nrep=120 launches_per_iter=1\n"
    "------------------------------------------------------------------\n"
)
GOOD_LOG = (
    "============================= test session starts ==============================\n"
    + BLOCK
    + "=========== 1 passed, 27 deselected in 28.78s ===========\n"
)
GOOD_PERF_MD = (
    "VERDICT: INVESTIGATE\n\n## Performance Results: rms_norm\n\n"
    "| Config | baseline (ms) | cutile-rs (ms) | ratio | verdict |\n|---|---|---|---|---|\n"
    "| static_persistent-262144-1024-torch.float16 | 0.278 | 0.349 | 1.25x | INVESTIGATE |\n\n"
    "geomean_ratio=1.2548\nGeo-mean ratio: 1.25x\nSeverity: MODERATE_GAP\n"
)


def real(script: str, *args: str, env_root: Path | None = None) -> tuple[bytes, int]:
    env = {"PATH": os.environ["PATH"], "LC_ALL": "C.UTF-8"}
    if env_root is not None:
        env["CUTILE_KERNEL_OUT_ROOT"] = str(env_root)
    proc = subprocess.run(["bash", str(SCRIPTS / script), *args], capture_output=True, env=env, check=False)
    return proc.stdout, proc.returncode


def as_bytes(r: ValidatorResult) -> bytes:
    return r.output.encode("utf-8", "surrogateescape")


PERF_CASES: dict[str, bytes] = {
    "pass": GOOD_LOG.encode(),
    "warn_extra_passed": (GOOD_LOG + "x PASSED\n").encode(),
    "failed": (GOOD_LOG + "FAILED tests/x.py::t[cutile_rs-1]\n").encode(),
    "no_marker": b"collected 3 items\nfoo PASSED\n",
    "skipped_only": (GOOD_LOG + "t[cutile-1] SKIPPED\n").encode(),
    "crlf": GOOD_LOG.replace("\n", "\r\n").encode(),
    "no_final_newline": GOOD_LOG.rstrip("\n").encode() + b" PASSED",
    "nul_splits_lines": b"Performance Test Results\0PASSED\0PASSED\n",
    "invalid_utf8": b"\xff\xfePerformance Test Results PASSED\n",
    "only_newline": b"\n",
    "cr_only": b"Performance Test Results\rPASSED\rPASSED\n",
    "two_markers_one_line": b"Performance Test Results Performance Test Results PASSED\n",
}


@needs_scripts
@pytest.mark.parametrize("case", sorted(PERF_CASES))
def test_perf_log_twin_is_byte_identical(tmp_path: Path, case: str) -> None:
    log = tmp_path / "perf_cutile_rs.txt"
    log.write_bytes(PERF_CASES[case])
    for label in (None, "mylabel"):
        args = [str(log)] + ([label] if label else [])
        out, rc = real("validate_perf_log.sh", *args)
        mine = validate_perf_log(log, label)
        assert (as_bytes(mine), mine.exit_code) == (out, rc), case
        # the overlay form (text=) must agree when the bytes are valid UTF-8 text
        text = PERF_CASES[case].decode("utf-8", "surrogateescape")
        via_text = validate_perf_log(log, label, text=text)
        assert (as_bytes(via_text), via_text.exit_code) == (out, rc)


@needs_scripts
def test_perf_log_missing_and_empty(tmp_path: Path) -> None:
    for path in (tmp_path / "absent.txt", tmp_path):
        out, rc = real("validate_perf_log.sh", str(path))
        mine = validate_perf_log(path)
        assert (as_bytes(mine), mine.exit_code) == (out, rc)
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    out, rc = real("validate_perf_log.sh", str(empty), "lbl")
    assert (as_bytes(validate_perf_log(empty, "lbl")), 1) == (out, rc)


def kernel(tmp_path: Path, files: dict[str, bytes], name: str = "rms_norm") -> Path:
    kdir = tmp_path / "out" / name
    kdir.mkdir(parents=True)
    for rel, data in files.items():
        p = kdir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return kdir


GOOD_E = {
    "reports/performance.md": GOOD_PERF_MD.encode(),
    "perf_cutile_rs.txt": GOOD_LOG.encode(),
    "baseline_perf_cutile.txt": GOOD_LOG.encode(),
    "reports/agent_logs/agent_e.md": b"# Agent E log: rms_norm\n",
}


def _mut(**changes: bytes | None) -> dict[str, bytes]:
    out = dict(GOOD_E)
    for k, v in changes.items():
        key = {
            "perf": "reports/performance.md",
            "cand": "perf_cutile_rs.txt",
            "base": "baseline_perf_cutile.txt",
            "log": "reports/agent_logs/agent_e.md",
        }[k]
        if v is None:
            out.pop(key)
        else:
            out[key] = v
    return out


PMD = GOOD_PERF_MD.encode()
E_CASES: dict[str, dict[str, bytes]] = {
    "pass": GOOD_E,
    "done": _mut(perf=PMD.replace(b"INVESTIGATE\n", b"DONE\n", 1)),
    "blocked_verdict": _mut(perf=PMD.replace(b"VERDICT: INVESTIGATE", b"VERDICT: BLOCKED")),
    "crlf": _mut(perf=PMD.replace(b"\n", b"\r\n")),
    "trailing_space_verdict": _mut(perf=PMD.replace(b"INVESTIGATE\n", b"INVESTIGATE \n", 1)),
    "trailing_space_geomean": _mut(perf=PMD.replace(b"=1.2548\n", b"=1.2548 \t\n")),
    "unicode_space_geomean": _mut(perf=PMD.replace(b"=1.2548\n", "=1.2548\u3000\n".encode())),
    "nbsp_geomean": _mut(perf=PMD.replace(b"=1.2548\n", "=1.2548\u00a0\n".encode())),
    "two_geomean": _mut(perf=PMD + b"geomean_ratio=1.3\n"),
    "malformed_first_geomean": _mut(
        perf=PMD.replace(b"geomean_ratio=1.2548", b"geomean_ratio=1.25x\ngeomean_ratio=1.2548")
    ),
    "geomean_with_x": _mut(perf=PMD.replace(b"=1.2548", b"=1.2548x")),
    "no_geomean": _mut(perf=PMD.replace(b"geomean_ratio=1.2548\n", b"")),
    "integer_geomean": _mut(perf=PMD.replace(b"=1.2548", b"=1")),
    "nul_in_report": _mut(perf=PMD.replace(b"Severity", b"Sev\0erity")),
    "nul_in_verdict": _mut(perf=PMD.replace(b"VERDICT: INV", b"VERDICT: I\0NV")),
    "invalid_utf8_geomean": _mut(perf=PMD.replace(b"=1.2548\n", b"=1.2548\n\xff\n")),
    "invalid_utf8_first_of_two": _mut(
        perf=PMD.replace(b"geomean_ratio=1.2548\n", b"geomean_ratio=1.0\xff\ngeomean_ratio=1.2548\n")
    ),
    "nul_in_first_96k": _mut(perf=PMD + b"x" * 70000 + b"\n\0\n"),
    "nul_after_96k": _mut(perf=PMD + b"x" * 200000 + b"\n\0\n"),
    "nul_and_geomean_in_second_buffer": _mut(
        perf=PMD.replace(
            b"geomean_ratio=1.2548\n", b"y\n" * 60000 + b"geomean_ratio=1.2548\n" + b"x" * 50000 + b"\0\n"
        )
    ),
    "empty_report": _mut(perf=b""),
    "missing_report": _mut(perf=None),
    "missing_candidate": _mut(cand=None),
    "failed_candidate": _mut(cand=GOOD_LOG.encode() + b"FAILED x\n"),
    "missing_baseline": _mut(base=None),
    "warn_baseline": _mut(base=GOOD_LOG.encode() + b"PASSED\n"),
    "empty_agent_log": _mut(log=b""),
    "missing_agent_log": _mut(log=None),
    "verdict_not_first": _mut(perf=b"\n" + PMD),
    "everything_missing": {},
}


@needs_scripts
@pytest.mark.parametrize("case", sorted(E_CASES))
def test_agent_e_twin_is_byte_identical(tmp_path: Path, case: str) -> None:
    kdir = kernel(tmp_path, E_CASES[case])
    out, rc = real("validate_agent_e.sh", "rms_norm", env_root=kdir.parent)
    mine = validate_agent_e(kdir)
    assert as_bytes(mine) == out, case
    assert mine.exit_code == rc


@needs_scripts
@pytest.mark.parametrize("case", ["pass", "crlf", "two_geomean", "missing_report", "missing_candidate"])
def test_agent_e_overlay_equals_written(tmp_path: Path, case: str) -> None:
    files = E_CASES[case]
    planned = {k: v.decode("utf-8", "surrogateescape") for k, v in files.items()}
    empty_dir = kernel(tmp_path / "a", {})
    written = kernel(tmp_path / "b", files)
    via_overlay = validate_agent_e(empty_dir, planned)
    out, rc = real("validate_agent_e.sh", "rms_norm", env_root=written.parent)
    # outputs differ only in the shown base path (FAIL: file not found → <base>/...)
    assert as_bytes(via_overlay).replace(str(empty_dir).encode(), str(written).encode()) == out
    assert via_overlay.exit_code == rc


F_GOOD = {
    "reports/perf_investigation_all_shapes.md": b"VERDICT: FIXABLE\n\n# Perf Investigation\n",
    "reports/agent_logs/agent_f.md": b"# Agent F log\n",
}
F_CASES: dict[str, dict[str, bytes]] = {
    "pass": F_GOOD,
    "several": {
        **F_GOOD,
        "reports/perf_investigation_16384-2048.md": b"VERDICT: ALIGNED\n",
        "reports/perf_investigation_A.md": b"VERDICT: BLOCKED\n",
    },
    "done_is_wrong": {**F_GOOD, "reports/perf_investigation_x.md": b"VERDICT: DONE\n"},
    "crlf": {**F_GOOD, "reports/perf_investigation_x.md": b"VERDICT: ALIGNED\r\n"},
    "empty_file": {**F_GOOD, "reports/perf_investigation_e.md": b""},
    "empty_scope": {**F_GOOD, "reports/perf_investigation_.md": b"VERDICT: ALIGNED\n"},
    "space_in_name": {**F_GOOD, "reports/perf_investigation_a b.md": b"VERDICT: ALIGNED\n"},
    "two_spaces_in_name": {**F_GOOD, "reports/perf_investigation_a b c.md": b"VERDICT: ALIGNED\n"},
    "dir_named_like_report": {**F_GOOD, "reports/perf_investigation_d.md/x": b"z"},
    "no_reports": {"reports/agent_logs/agent_f.md": b"log\n"},
    "no_log": {"reports/perf_investigation_all_shapes.md": b"VERDICT: ALIGNED\n"},
    "nothing": {},
}


@needs_scripts
@pytest.mark.parametrize("case", sorted(F_CASES))
def test_agent_f_twin_is_byte_identical(tmp_path: Path, case: str) -> None:
    kdir = kernel(tmp_path, F_CASES[case], name="softmax")
    out, rc = real("validate_agent_f.sh", "softmax", env_root=kdir.parent)
    mine = validate_agent_f(kdir)
    assert (as_bytes(mine), mine.exit_code) == (out, rc), case


def test_agent_f_overlay_shadows_disk(tmp_path: Path) -> None:
    kdir = kernel(tmp_path, {"reports/perf_investigation_all_shapes.md": b"VERDICT: DONE\n"}, name="softmax")
    assert validate_agent_f(kdir).exit_code == 1
    fixed = validate_agent_f(
        kdir,
        {
            "reports/perf_investigation_all_shapes.md": "VERDICT: ALIGNED\n",
            "reports/agent_logs/agent_f.md": "log\n",
        },
    )
    assert fixed.exit_code == 0
    assert (
        fixed.output
        == "OK: perf_investigation_all_shapes.md: VERDICT: ALIGNED\nOK: agent_f.md log\n---\nPASS\n"
    )


def test_transcript_format() -> None:
    r = ValidatorResult("bash x.sh k", "PASS", 0)
    assert r.transcript() == "$ bash x.sh k\nPASS\nexit=0\n"
    assert transcript([r, ValidatorResult("c", "", 1)]) == "$ bash x.sh k\nPASS\nexit=0\n$ c\nexit=1\n"


@needs_scripts
def test_run_real_validator_uses_overlay_and_never_touches_kernel_dir(tmp_path: Path) -> None:
    files = dict(GOOD_E)
    kdir = kernel(tmp_path, {k: v for k, v in files.items() if k != "reports/performance.md"})
    before = sorted((p.relative_to(kdir), p.stat().st_mtime_ns) for p in kdir.rglob("*"))
    res = run_real_validator(
        TILEGYM, "validate_agent_e.sh", ["rms_norm"], kdir, {"reports/performance.md": GOOD_PERF_MD}
    )
    assert res is not None and res.exit_code == 0, res
    assert res.output == validate_agent_e(kdir, {"reports/performance.md": GOOD_PERF_MD}).output
    assert sorted((p.relative_to(kdir), p.stat().st_mtime_ns) for p in kdir.rglob("*")) == before
    assert (
        run_real_validator(tmp_path / "no-tilegym", "validate_agent_e.sh", ["rms_norm"], kdir, None) is None
    )


@needs_scripts
def test_differential_fuzz_against_real_scripts(tmp_path: Path) -> None:
    """SYNTHETIC random reports/logs built from the tricky pieces; twin == real script, byte for byte."""
    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies
    pieces = st.sampled_from(
        [
            "VERDICT: DONE",
            "VERDICT: INVESTIGATE",
            "VERDICT: BLOCKED",
            "geomean_ratio=1.0506",
            "geomean_ratio=1",
            "geomean_ratio=1.05x",
            "geomean_ratio= 1.0",
            "Performance Test Results",
            "PASSED",
            "FAILED",
            "SKIPPED",
            " ",
            "\t",
            "\r",
            "\0",
            "\x0b",
            "\u3000",
            "\u00a0",
            "\udcff",
            "-n",
            "x",
            "|a|b|",
        ]
    )
    line = st.lists(pieces, max_size=4).map("".join)
    doc = st.lists(line, max_size=6).map("\n".join).map(lambda s: s.encode("utf-8", "surrogateescape"))
    counter = iter(range(10**6))

    n = int(os.environ.get("WB_VALIDATOR_FUZZ_EXAMPLES", "40"))  # fuzz profile: set it to 1000+

    @hyp.settings(max_examples=n, deadline=None)
    @hyp.given(doc, doc, st.booleans())
    def check(perf_md: bytes, cand_log: bytes, trailing_newline: bool) -> None:
        files = dict(GOOD_E)
        files["reports/performance.md"] = perf_md + (b"\n" if trailing_newline else b"")
        files["perf_cutile_rs.txt"] = cand_log
        kdir = kernel(tmp_path / str(next(counter)), files)
        out, rc = real("validate_agent_e.sh", "rms_norm", env_root=kdir.parent)
        mine = validate_agent_e(kdir)
        assert (as_bytes(mine), mine.exit_code) == (out, rc)
        fdir = kernel(
            tmp_path / str(next(counter)),
            {"reports/perf_investigation_x.md": perf_md, "reports/agent_logs/agent_f.md": cand_log},
            name="softmax",
        )
        out, rc = real("validate_agent_f.sh", "softmax", env_root=fdir.parent)
        mine = validate_agent_f(fdir)
        assert (as_bytes(mine), mine.exit_code) == (out, rc)

    check()
