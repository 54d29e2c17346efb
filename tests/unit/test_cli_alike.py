"""Commands that behave alike, tried as a new user would: through ``python -m cutile_workbench``.

Each test pins one fix of issue #14 (it failed before the fix): TileGym resolved the same way by
``run`` as by every other command (and the run says which suite it runs), ``--yes`` for every
writing command, ``kselect`` on the embedded default, usage errors that name the real mistake,
timeouts that must be positive, ``--perfetto`` that creates no directories, plain-text help.
TileGym trees are SYNTHETIC (tests/fixtures/tilegym_tree/fake_tilegym.py); the recorded session is
the real one shipped in ``cutile_workbench/profiles/``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from checks_helpers import fake

REPO = Path(__file__).resolve().parents[2]
TEST_RMS_NORM = """\
import pytest


class Test_RMSNorm:
    @pytest.mark.parametrize("m, n", [(4096, 1024)])
    @pytest.mark.parametrize("backend", ["cutile", "cutile-rs", "pytorch"])
    def test_perf(self, m, n, backend):
        pass
"""


def cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("TILEGYM_PATH", "CUTILE_KERNEL_OUT_ROOT")}
    base["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # child collections of synthetic trees need no plugins
    return subprocess.run(
        [sys.executable, "-m", "cutile_workbench", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, **(env or {})},
        cwd=cwd or REPO,
        stdin=subprocess.DEVNULL,
    )


# --------------------------------------------------------------------------- run: one TileGym resolution


def test_run_honours_tilegym_path_and_says_which_suite_runs(tmp_path: Path) -> None:
    tree = fake.make_tree(tmp_path / "tg", tests={"test_rms_norm.py": TEST_RMS_NORM})
    p = cli("run", "rms_norm", "--out-root", str(tmp_path / "out"), env={"TILEGYM_PATH": str(tree)})
    # a built-in profile rms_norm exists too: the run says it runs TileGym's suite, and how to pick the profile
    assert "running TileGym's tests/ops/test_rms_norm.py" in p.stderr and "$TILEGYM_PATH" in p.stderr, (
        p.stderr
    )
    assert "--profile" in p.stderr
    assert "no test matched" not in p.stdout + p.stderr


def test_run_plan_resolves_tilegym_like_every_command(tmp_path: Path) -> None:
    from cutile_workbench.errors import InputError
    from cutile_workbench.services.runs import RunRequest, plan_runs

    tree = fake.make_tree(tmp_path / "tg", tests={"test_rms_norm.py": TEST_RMS_NORM})
    out = tmp_path / "out"
    env = {"TILEGYM_PATH": str(tree)}
    via_env = plan_runs(RunRequest("rms_norm", out_root=out), env)
    assert via_env.suite_kind == "tilegym" and via_env.runs[0].spec.cwd == tree.resolve()
    assert via_env.runs[0].backend == "cutile-rs" and "--profile" in via_env.suite_note
    profile = plan_runs(RunRequest("rms_norm", out_root=out, prefer_profile=True), env)
    assert profile.suite_kind == "profile" and profile.runs[0].backend == "cutile"
    assert "--profile" in profile.suite_note and "not run" in profile.suite_note
    # $TILEGYM_PATH without this kernel's test file: the profile runs, and the note says why
    softmax = plan_runs(RunRequest("softmax", out_root=out), env)
    assert softmax.suite_kind == "profile" and "no tests/ops/test_softmax.py" in softmax.suite_note
    # an explicit --tilegym without the file is an error naming it
    with pytest.raises(InputError, match="no TileGym test file for kernel 'softmax'"):
        plan_runs(RunRequest("softmax", out_root=out, tilegym=tree), {})
    assert (
        plan_runs(RunRequest("rms_norm", out_root=out), {}).suite_note == ""
    )  # only a profile: nothing to say


# --------------------------------------------------------------------------- --yes for every writing command


def test_check_apply_wiring_takes_yes_and_refuses_without_it(tmp_path: Path) -> None:
    root = fake.make_tree(tmp_path / "tg")
    path = root / "tests/ops/test_bmm.py"
    original = path.read_text()
    refused = cli("check", "bmm", "--tilegym", str(root), "--apply-wiring")  # stdin is not a terminal
    assert refused.returncode == 2 and "pass --yes" in refused.stderr, refused.stdout + refused.stderr
    assert path.read_text() == original
    applied = cli("check", "bmm", "--tilegym", str(root), "--apply-wiring", "--yes")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "wired: 16 cutile-rs perf case(s) collected" in applied.stdout and path.read_text() != original


# --------------------------------------------------------------------------- kselect on the embedded default


def test_kselect_with_no_flags_uses_the_recorded_session_and_its_candidate() -> None:
    p = cli("kselect", "rms_norm")
    assert p.returncode == 0, p.stderr
    assert (
        "cutile_rs-" not in p.stdout and "-k 'cutile_rs" not in p.stdout
    )  # the profile has no cutile-rs ids
    assert "candidate (cutile): -k 'cutile and ([cutile-4096-1024-torch.bfloat16]" in p.stdout
    assert "baseline (triton): -k 'triton and ([triton-4096-1024-torch.bfloat16]" in p.stdout
    assert "workbench/session.json" in p.stdout  # says where the candidate came from


# --------------------------------------------------------------------------- usage errors name the real mistake


def test_unknown_command_is_named_not_taken_for_a_kernel() -> None:
    p = cli("bogus-cmd", "rms_norm")
    assert p.returncode == 2 and "unknown command 'bogus-cmd'" in p.stderr
    assert "unrecognized arguments" not in p.stderr
    assert "did you mean table" in cli("tabel", "rms_norm").stderr


@pytest.mark.parametrize("flag", ["--timeout", "--total-timeout"])
@pytest.mark.parametrize("value", ["-5", "0", "nan"])
def test_run_timeouts_must_be_positive(tmp_path: Path, flag: str, value: str) -> None:
    p = cli("run", "rms_norm", "--out-root", str(tmp_path), f"{flag}={value}", "--skip-gpu-check")
    assert p.returncode == 2 and f"argument {flag}: must be a number of seconds > 0" in p.stderr, p.stderr
    assert list(tmp_path.iterdir()) == []


def test_check_timeout_must_be_positive(tmp_path: Path) -> None:
    p = cli("check", "bmm", "--tilegym", str(tmp_path), "--timeout=-1")
    assert p.returncode == 2 and "must be a number of seconds > 0" in p.stderr


def test_perfetto_into_a_missing_directory_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir" / "x.json"
    p = cli("timeline", "rms_norm", "--config", "16384-2048-torch.bfloat16", "--perfetto", str(target))
    assert p.returncode == 2 and "directory does not exist" in p.stderr and str(target.parent) in p.stderr
    assert not (tmp_path / "no").exists()
    ok = cli(
        "timeline",
        "rms_norm",
        "--config",
        "16384-2048-torch.bfloat16",
        "--perfetto",
        str(tmp_path / "t.json"),
    )
    assert ok.returncode == 0 and (tmp_path / "t.json").is_file()


def test_run_help_is_plain_text() -> None:
    p = cli("run", "--help")
    assert p.returncode == 0
    for markup in ("``", ":func:", ":class:", ":mod:", "**"):
        assert markup not in p.stdout, markup
    assert "$TILEGYM_PATH" in p.stdout and "--profile" in p.stdout
