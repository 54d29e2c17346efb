"""Every command line the tool prints as advice works when pasted (issue 36 item 5).

Each test provokes the refusal on real data (the recorded sessions), takes the command it prints
and runs it. Lines that open the TUI are run through the TUI's own loader (``run_app`` with the app
itself left out: no terminal here). Placeholders the user fills in (``OUT``, ``DIR``, ``PARAMS``,
``<dir>``) get a temp dir, the TileGym snapshot or a real config. A line that needs a GPU is run up
to the GPU check, which this box answers "no GPU" (skipped where a GPU is visible, so a test never
starts GPU work). Not run: the doctor's ``pip install`` / ``cargo build`` fixes (they need the
network or a toolchain; the doctor's tests check their exact text instead).
"""

from __future__ import annotations

import ast
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cutile_workbench.cli import main

ROOT = Path(__file__).resolve().parents[2]
TILEGYM = ROOT / ".fetched" / "TileGym"
RMS = ROOT / "cutile_workbench" / "profiles" / "rms_norm" / "session" / "rms_norm"


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUTILE_KERNEL_OUT_ROOT", raising=False)
    monkeypatch.delenv("TILEGYM_PATH", raising=False)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Path | None]]:
    """``run_app`` loads the workspace exactly as the TUI does, then returns instead of drawing."""
    import cutile_workbench.tui.app as app_module
    from cutile_workbench.tui.loaders import load_app_data

    seen: list[tuple[str, Path | None]] = []

    def load_only(kernel: str, *, out_root: Path | None, tilegym: Path | None, **_kw: object) -> int:
        data = load_app_data(kernel, out_root=out_root, tilegym=tilegym)
        seen.append((data.kernel, out_root))
        return 0

    monkeypatch.setattr(app_module, "run_app", load_only)
    return seen


def _no_gpu() -> None:
    from cutile_workbench.services.runs import gpu_probe

    if gpu_probe(sys.executable)[0]:
        pytest.skip("a GPU is visible here: the pasted line would start GPU work")


def _cli(line: str) -> list[str]:
    words = shlex.split(line)
    assert words[0] == "cutile-workbench", line
    return words[1:]


def _first_params(kernel_dir: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["table", kernel_dir.name, "--out-root", str(kernel_dir.parent), "--csv"]) == 0
    return capsys.readouterr().out.splitlines()[1].split(",")[1]


def test_runs_no_gpu_advice_opens_the_recorded_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], opened: list[tuple[str, Path | None]]
) -> None:
    _no_gpu()
    assert main(["run", "rms_norm", "--out-root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    open_line = re.search(r"open it with: (cutile-workbench [^ ]+ [^ ]+ rms_norm)", err)
    timeline_line = re.search(r"\(or: (cutile-workbench timeline rms_norm --config PARAMS)\)", err)
    assert open_line and timeline_line, err
    assert main(_cli(open_line.group(1))) == 0 and opened[-1][0] == "rms_norm"
    params = _first_params(RMS, capsys)
    assert main(_cli(timeline_line.group(1).replace("PARAMS", params))) == 0


def test_the_read_only_advice_copies_and_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "e", "rms_norm", "--yes", "--no-real-scripts"]) == 2
    err = capsys.readouterr().err
    m = re.search(r"copy it \(cp -r (\S+) <dir>/\) and pass --out-root <dir>, or use (--dry-run)", err)
    assert m, err
    subprocess.run(["cp", "-r", m.group(1), f"{tmp_path}/"], check=True)
    assert main(["report", "e", "rms_norm", "--out-root", str(tmp_path), "--yes", "--no-real-scripts"]) in (
        0,
        1,
    )
    assert (tmp_path / "rms_norm" / "reports" / "performance.md").is_file()
    assert main(["report", "e", "rms_norm", m.group(2), "--no-real-scripts"]) in (0, 1)


def test_the_unknown_kernel_advice_lists_the_kernels(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["table", "rms_nrom"]) == 2
    err = capsys.readouterr().err
    assert "did you mean rms_norm" in err
    hint = re.search(r"all: (cutile-workbench kernels)\)", err)
    assert hint and main(_cli(hint.group(1))) == 0
    assert "rms_norm" in capsys.readouterr().out


def test_the_doctors_no_gpu_advice_opens_the_embedded_default(
    capsys: pytest.CaptureFixture[str], opened: list[tuple[str, Path | None]]
) -> None:
    _no_gpu()
    main(["doctor"])
    gpu_line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("FAIL GPU and driver"))
    hint = re.search(r"open a recorded session: (cutile-workbench \w+)$", gpu_line)
    assert hint, gpu_line
    assert main(_cli(hint.group(1))) == 0 and opened == [("matmul", None)]


@pytest.mark.parametrize("kernel,backend", [("rms_norm", "triton"), ("matmul", "cutile")])
def test_calibrates_measure_again_advice_runs_up_to_the_gpu(
    kernel: str, backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_gpu()
    if kernel == "matmul" and not (TILEGYM / "tests" / "ops").is_dir():
        pytest.skip("TileGym snapshot absent (.fetched/TileGym)")
    assert main(["calibrate", kernel, "-b", backend]) == 2
    err = capsys.readouterr().err
    hint = re.search(r"measure it again on a GPU node: `([^`]+)`", err)
    assert hint, err
    out = tmp_path / "out"
    out.mkdir()
    line = hint.group(1).replace("OUT", str(out)).replace("DIR", str(TILEGYM))
    line = line.replace("cutile-workbench", f"{shlex.quote(sys.executable)} -m cutile_workbench")
    proc = subprocess.run(
        ["bash", "-c", line], capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ)
    )
    text = proc.stdout + proc.stderr
    # pasted as printed, it copies the session and reaches the GPU check of the baseline's first run
    assert (out / kernel).is_dir() and "calibrate: baseline run 1 of 2" in text, text
    assert "No GPU on this machine" in text and "error: key" not in text, text
    assert proc.returncode == 2
    shutil.rmtree(out)


def test_a_refusals_doctor_line_checks_the_same_child(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SYNTHETIC child: a venv without pytest. The refusal names the doctor with that Python; pasted, it
    shows the same failing line."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    out = tmp_path / "out"
    out.mkdir()
    assert main(["run", "rms_norm", "--out-root", str(out), "--python", py, "--skip-gpu-check"]) == 2
    err = capsys.readouterr().err
    hint = re.search(r"\(`(cutile-workbench doctor [^`]+)` checks everything a run needs\)", err)
    assert hint, err
    assert main(_cli(hint.group(1))) == 1
    assert f"FAIL pytest in the child: pytest is not importable in {py}" in capsys.readouterr().out


def test_timelines_no_capture_advice_names_the_kernel_and_out_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The out root's name has a space (SYNTHETIC name): the line quotes it."""
    _no_gpu()
    tmp_path = tmp_path / "my runs"
    shutil.copytree(RMS, tmp_path / "rms_norm")
    (tmp_path / "rms_norm" / "workbench" / "launches.json.gz").unlink()
    params = _first_params(tmp_path / "rms_norm", capsys)
    assert main(["timeline", "rms_norm", "--out-root", str(tmp_path), "--config", params]) == 2
    err = capsys.readouterr().err
    hint = re.search(r"run `(cutile-workbench run [^`]+)` on a GPU node first", err)
    assert hint, err
    assert main(_cli(hint.group(1))) == 2  # planned and refused at the GPU check, nothing else
    assert "No GPU on this machine" in capsys.readouterr().err


# --------------------------------------------------------------------------- F's reports (issue 36 item 5)

H200_PLAIN = ROOT / "tests" / "fixtures" / "tilegym_h200" / "plain"


def _report_advice(kernel_dir: Path) -> list[str]:
    """Every command line F wrote into the kernel dir's reports: the backticked advice of
    perf_investigation_*.md and agent_f.md, and the ``$ …`` command of agent_logs/agent_f.md."""
    found: list[str] = []
    for md in sorted((kernel_dir / "reports").rglob("*.md")):
        text = md.read_text()
        found += re.findall(r"`(cutile-workbench [^`]+)`", text)
        found += re.findall(r"^\$ (cutile-workbench .+)$", text, re.M)
    return list(dict.fromkeys(found))


def _blocked_root(tmp_path: Path) -> Path:
    """REAL: TileGym's own H200 rms_norm logs laid out as a kernel dir (Triton-TileIR in the candidate's
    slot vs cuTile, as tests/unit/test_f_rules.py does): F is BLOCKED at 262144x1024 (a real per-launch
    gap, no ncu probe, no IR pair), so its reports advise a probe and a re-run of F."""
    k = tmp_path / "out" / "rms_norm"
    k.mkdir(parents=True)
    shutil.copyfile(H200_PLAIN / "baseline_perf_triton_tileir.txt", k / "perf_cutile_rs.txt")
    shutil.copyfile(H200_PLAIN / "baseline_perf_cutile.txt", k / "baseline_perf_cutile.txt")
    return k.parent


class _Terminal(io.StringIO):
    """stdin of a person at a terminal who answers the write prompt with y."""

    def isatty(self) -> bool:
        return True


def test_fs_blocked_reports_advice_runs_on_the_same_kernel_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_gpu()
    if not (TILEGYM / "tests" / "ops").is_dir():
        pytest.skip("TileGym snapshot absent (.fetched/TileGym)")
    root = _blocked_root(tmp_path)
    assert main(["report", "f", "rms_norm", "--out-root", str(root), "--yes"]) == 1  # BLOCKED
    capsys.readouterr()
    advice = _report_advice(root / "rms_norm")
    assert sorted({_cli(a)[0] for a in advice}) == ["probe", "report"], advice
    for line in advice:
        args = _cli(line.replace(" DIR", f" {TILEGYM}"))
        monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))  # pasted into a shell: F asks before writing
        rc = main(args)
        out, err = capsys.readouterr()
        if args[0] == "report":  # F again, on this kernel dir (not the recorded rms_norm session)
            assert rc == 1 and f"under {root / 'rms_norm'}:" in out, (line, out, err)
            assert out.endswith("VERDICT: BLOCKED\n"), (line, out)
        else:  # the probe needs ncu and a GPU: it plans this config, then refuses to run, printing its lines
            assert rc == 2 and "error: cannot run the probe here" in err, (line, err)
            assert "error: key" not in err, (line, err)
            assert "static_persistent-262144-1024-torch.float16" in out and "$ " in out, out


@pytest.mark.parametrize("kernel", ["matmul", "softmax"])
def test_fs_reports_on_a_copied_recorded_session_name_a_command_that_runs(
    kernel: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """REAL recorded sessions (H200), copied to a writable out root: the command F records in its log
    re-runs F on the copy."""
    src = {"matmul": "tilegym", "softmax": "softmax"}[kernel]
    shutil.copytree(ROOT / "cutile_workbench" / "profiles" / src / "session" / kernel, tmp_path / kernel)
    rc = main(["report", "f", kernel, "--out-root", str(tmp_path), "--yes"])
    assert rc in (0, 1)
    capsys.readouterr()
    advice = _report_advice(tmp_path / kernel)
    assert advice and all(_cli(a)[:2] == ["report", "f"] for a in advice), advice
    for line in advice:
        assert main(_cli(line)) == rc
        assert f"under {tmp_path / kernel}:" in capsys.readouterr().out


# --------------------------------------------------------------------------- kernels, history, the TUI's start


def test_kernels_next_steps_run_when_the_out_root_has_a_space(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], opened: list[tuple[str, Path | None]]
) -> None:
    """REAL recorded rms_norm copied under an out root whose name has a space (SYNTHETIC name): each
    'open / run' line of ``kernels`` is one command when pasted (quoted), and does what it says."""
    _no_gpu()
    if not (TILEGYM / "tests" / "ops").is_dir():
        pytest.skip("TileGym snapshot absent (.fetched/TileGym)")
    out_root = tmp_path / "my runs"
    shutil.copytree(RMS, out_root / "rms_norm")
    assert main(["kernels", "--out-root", str(out_root), "--tilegym", str(TILEGYM)]) == 0
    table = capsys.readouterr().out
    steps = {
        ln.split()[0]: ln[ln.index("cutile-workbench") :]
        for ln in table.splitlines()[1:]
        if "cutile-workbench" in ln
    }
    assert {"rms_norm", "matmul", "bmm"} <= set(steps), table
    # a kernel dir of the out root: opened there
    assert main(_cli(steps["rms_norm"])) == 0 and opened[-1] == ("rms_norm", out_root)
    # a recorded session: opened as shipped
    assert main(_cli(steps["matmul"])) == 0 and opened[-1] == ("matmul", None)
    # a TileGym kernel with a cutile-rs wrapper and no session: planned, then refused at the GPU check
    out = tmp_path / "new out"
    out.mkdir()
    assert main(_cli(steps["bmm"].replace("OUT", shlex.quote(str(out))))) == 2
    assert "No GPU on this machine" in capsys.readouterr().err


def test_the_tuis_out_of_memory_advice_reads_the_same_kernel_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SYNTHETIC: the TUI's loader raises MemoryError (a memory limit on the shell); the three commands it
    names instead read the REAL recorded rms_norm session copied to an out root, one config each."""
    import cutile_workbench.tui.loaders as loaders

    shutil.copytree(RMS, tmp_path / "rms_norm")
    params = _first_params(tmp_path / "rms_norm", capsys)

    def no_memory(*_a: object, **_k: object) -> None:
        raise MemoryError

    # both loaders: the quick first screen's too (a memory limit hits whichever runs first; with only
    # load_app_data patched the quick one opened the real app, here with no terminal)
    monkeypatch.setattr(loaders, "quick_app_data", no_memory)
    monkeypatch.setattr(loaders, "load_app_data", no_memory)
    assert main(["rms_norm", "--out-root", str(tmp_path)]) == 2
    lines = re.findall(r"`(cutile-workbench [^`]+)`", capsys.readouterr().err)
    assert [_cli(ln)[0] for ln in lines] == ["table", "timeline", "history"], lines
    for line in lines:
        assert main(_cli(line.replace("PARAMS", params))) == 0, line
        assert str(tmp_path / "rms_norm") in capsys.readouterr().out, line


def test_historys_empty_history_advice_runs_the_kernel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SYNTHETIC: a fresh, empty kernel dir: ``history`` says how to fill it; pasted, that runs the kernel
    into this out root, up to the GPU check."""
    _no_gpu()
    (tmp_path / "rms_norm").mkdir()
    assert main(["history", "rms_norm", "--out-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    hint = re.search(r"`(cutile-workbench run [^`]+)`", out)
    assert hint, out
    assert main(_cli(hint.group(1))) == 2
    assert "No GPU on this machine" in capsys.readouterr().err


# --------------------------------------------------------------------------- no advice line without its test

NOT_ADVICE = "not a command line to paste"
USAGE = "usage text: placeholders (<kernel>) or a bare command name, checked against --help by test_docs"
#: every place the package writes a ``cutile-workbench …`` line (module::function) → the test that runs
#: what it writes, or why it is not advice. A new place fails the test below until it is listed here.
ADVICE_SITES = {
    "artifacts/perflog/sanitizer.py::result": NOT_ADVICE,
    "artifacts/workspace.py::command_line": "the one wording: its callers are the sites",
    "artifacts/workspace.py::open_workspace": "test_the_unknown_kernel_advice_lists_the_kernels",
    "cli/__init__.py::<module>": USAGE,
    "cli/__init__.py::_unknown_command": USAGE,
    "cli/__init__.py::build_parser": USAGE,
    "cli/doctor.py::refuse": "test_a_refusals_doctor_line_checks_the_same_child",
    "cli/history.py::render_history_text": "test_historys_empty_history_advice_runs_the_kernel",
    "cli/kernels.py::next_step": "test_kernels_next_steps_run_when_the_out_root_has_a_space",
    "cli/run.py::run": "test_runs_no_gpu_advice_opens_the_recorded_session",
    "cli/stage_f.py::run": "test_fs_reports_on_a_copied_recorded_session_name_a_command_that_runs",
    "cli/tui.py::<module>": USAGE,
    "errors.py::<module>": NOT_ADVICE,
    "evidence/ncu.py::probe_advice": "test_fs_blocked_reports_advice_runs_on_the_same_kernel_dir",
    "history/store.py::_prepare": NOT_ADVICE,
    "run/plugins/perflog.py::pytest_addoption": NOT_ADVICE,
    "run/scaleout/select_plugin.py::pytest_addoption": NOT_ADVICE,
    "run/scaleout/slurm.py::batch_script": NOT_ADVICE,
    "services/calibrate.py::measure_again_hint": "test_calibrates_measure_again_advice_runs_up_to_the_gpu",
    "services/checks.py::_cli": "tests/tui/test_tui_advice.py::test_the_checks_cli_twins_run_on_the_same_kernel_dir",
    "services/doctor.py::_gpu_check": "test_the_doctors_no_gpu_advice_opens_the_embedded_default",
    "services/sharded.py::outcome_of": "tests/tui/test_tui_sharded.py::"
    "test_g_reruns_every_shown_config_over_two_slots_and_merges_into_a_scratch_root",
    "services/timeline.py::find_launches": "test_timelines_no_capture_advice_names_the_kernel_and_out_root",
    "stages/f/diagnosis.py::_probe_hint": "test_fs_blocked_reports_advice_runs_on_the_same_kernel_dir",
    "stages/f/render.py::render_investigation": "test_fs_blocked_reports_advice_runs_on_the_same_kernel_dir",
    "stages/f/report.py::plan_f_reports": "test_fs_reports_on_a_copied_recorded_session_name_a_command_that_runs",
    "tui/app.py::run_app": "test_the_tuis_out_of_memory_advice_reads_the_same_kernel_dir",
    "tui/data.py::command": "the TUI's wording: its callers are the sites",
    "tui/overview_app.py::<module>": NOT_ADVICE,
    "tui/screens/checks.py::<module>": USAGE,
    "tui/screens/checks.py::no_tilegym_text": "tests/tui/test_tui_advice.py::test_the_checks_screens_no_tilegym_advice_runs",
    "tui/screens/timeline.py::<module>": USAGE,
    "tui/screens/timeline.py::show_probe": "tests/tui/test_tui_advice.py::test_the_timelines_probe_hint_probes_this_kernel_dir",
}


_ADVICE = re.compile(r"cutile-workbench [a-z<{-]")


def _writes_a_command(node: ast.AST, docs: set[int]) -> bool:
    """A string that starts a ``cutile-workbench`` command (not a docstring), a list that starts one with
    the word itself, or a call of one of the wordings (``command_line``, ``probe_advice``, ``data.command``)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and id(node) not in docs and bool(_ADVICE.search(node.value))
    if isinstance(node, (ast.List, ast.Tuple)):
        first = node.elts[0] if node.elts else None
        return isinstance(first, ast.Constant) and first.value == "cutile-workbench"
    if isinstance(node, ast.Call):
        fn = node.func
        if isinstance(fn, ast.Name):
            return fn.id in ("command_line", "probe_advice")
        if isinstance(fn, ast.Attribute):
            return fn.attr in ("command_line", "probe_advice") or (
                fn.attr == "command" and ast.unparse(fn.value) in ("data", "self.data")
            )
    return False


def _sites_in(node: ast.AST, owner: str, docs: set[int], found: set[str]) -> None:
    for child in ast.iter_child_nodes(node):
        if _writes_a_command(child, docs):
            found.add(owner)
        name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        _sites_in(child, owner.split("::")[0] + f"::{name}" if name else owner, docs, found)


def _advice_sites() -> set[str]:
    """module::function of every place that writes a ``cutile-workbench`` command (see _writes_a_command)."""
    pkg = ROOT / "cutile_workbench"
    found: set[str] = set()
    for path in sorted(pkg.rglob("*.py")):
        tree = ast.parse(path.read_text())
        docs = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body
            and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)
        }
        _sites_in(tree, f"{path.relative_to(pkg).as_posix()}::<module>", docs, found)
    return found


def test_every_advice_site_names_the_test_that_runs_it() -> None:
    assert _advice_sites() == set(ADVICE_SITES), "list the new place (and its test) in ADVICE_SITES"
    here = {name for name in globals() if name.startswith("test_")}
    for site, why in ADVICE_SITES.items():
        if why.startswith("test_"):
            assert why in here, (site, why)
        elif why.startswith("tests/"):
            file, _, name = why.partition("::")
            assert (
                f"def {name}(" in (ROOT / file).read_text()
                or f"async def {name}(" in (ROOT / file).read_text()
            ), why
