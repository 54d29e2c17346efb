"""Golden transcripts: our in-process twins vs outputs recorded from TileGym's real scripts.

``tests/golden/*.json`` hold, per case, the *inputs* (file contents, or a repo path + sha256 for
large recorded H200 files) and the exact stdout + exit code the real script printed when
``tests/golden/make_golden.py`` ran it against the TileGym snapshot (commit 75a1430). Here the
inputs are rebuilt under ``tmp_path`` and the twin must reproduce those bytes and that exit code:
this runs on CI, which has no TileGym snapshot, so a twin that drifts from the real scripts fails
here. The only normalisation is the case directory, written as ``{TMP}`` in args and stdout.

Twins: ``validate_perf_log.sh`` → :func:`cutile_workbench.stages.e.validators.validate_perf_log`,
``validate_agent_e.sh`` → :func:`~cutile_workbench.stages.e.validators.validate_agent_e`,
``validate_agent_f.sh`` → :func:`~cutile_workbench.stages.e.validators.validate_agent_f`,
``diff_ir.sh`` → :func:`cutile_workbench.ir.audit.audit_files` + ``render_diff_ir_text``.
Which cases are REAL (H200 recordings, planner output) and which SYNTHETIC: each case's ``origin``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest

from cutile_workbench.ir.audit import audit_files, render_diff_ir_text
from cutile_workbench.stages.e.validators import validate_agent_e, validate_agent_f, validate_perf_log

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent.parent / "golden"
PLACEHOLDER = "{TMP}"
SCRIPT_NAMES = ("validate_perf_log.sh", "validate_agent_e.sh", "validate_agent_f.sh", "diff_ir.sh")
SCRIPTS = (
    REPO / ".fetched" / "TileGym" / "skills" / "tilegym-converting-cutile-triton-to-cutile-rs" / "scripts"
)
#: the locale each script ran under (the same as the real-script comparisons in test_validators.py
#: and test_ir_audit.py): grep's [[:space:]] and sort order depend on it
LOCALES = {
    "validate_perf_log.sh": "C.UTF-8",
    "validate_agent_e.sh": "C.UTF-8",
    "validate_agent_f.sh": "C.UTF-8",
    "diff_ir.sh": "C",
}
#: floor on the number of recorded cases per script, so an emptied golden file cannot pass silently
MIN_CASES = {
    "validate_perf_log.sh": 30,
    "validate_agent_e.sh": 30,
    "validate_agent_f.sh": 12,
    "diff_ir.sh": 40,
}


# --------------------------------------------------------------------------- shared with make_golden.py


def golden_path(script: str) -> Path:
    return GOLDEN / (script.removesuffix(".sh") + ".json")


def load_golden(script: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(golden_path(script).read_text(encoding="utf-8"))
    return data


def _unz(b64: str, zdict: bytes) -> bytes:
    d = zlib.decompressobj(zdict=zdict) if zdict else zlib.decompressobj()
    return d.decompress(base64.b64decode(b64)) + d.flush()


def zdict_of(doc: dict[str, Any]) -> bytes:
    """The preset zlib dictionary every ``zb64`` field of ``doc`` was compressed with (size budget)."""
    return _unz(doc["zdict_zb64"], b"") if doc.get("zdict_zb64") else b""


def content(spec: dict[str, Any], doc: dict[str, Any]) -> bytes:
    """Bytes of one recorded blob: inline ``text``, ``zb64`` (zlib+base64), shared ``blob`` or ``repo`` path."""
    if "blob" in spec:
        spec = doc["blobs"][spec["blob"]]
    if "text" in spec:
        return str(spec["text"]).encode("utf-8")
    if "zb64" in spec:
        return _unz(spec["zb64"], zdict_of(doc))
    data = (REPO / spec["repo"]).read_bytes()
    if hashlib.sha256(data).hexdigest()[: len(spec["sha256"])] != spec["sha256"]:
        raise AssertionError(
            f"{spec['repo']} changed since the golden was recorded: "
            "re-run tests/golden/make_golden.py (needs the TileGym snapshot)"
        )
    return data


def materialize(case: dict[str, Any], root: Path, doc: dict[str, Any]) -> None:
    """Create the case's directories and files under ``root`` (the ``{TMP}`` directory)."""
    root.mkdir(parents=True, exist_ok=True)
    for rel in case.get("dirs", []):
        (root / rel).mkdir(parents=True, exist_ok=True)
    for rel, spec in case["files"].items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content(spec, doc))


def expand(arg: str, root: Path) -> str:
    return arg.replace(PLACEHOLDER, str(root))


def normalise(out: bytes, root: Path) -> bytes:
    return out.replace(str(root).encode(), PLACEHOLDER.encode())


def run_twin(script: str, case: dict[str, Any], root: Path) -> tuple[bytes, int]:
    """Run our in-process twin on the materialized case: (stdout bytes, exit code), normalised."""
    args = [expand(a, root) for a in case["args"]]
    if script == "validate_perf_log.sh":
        r = validate_perf_log(Path(args[0]), args[1] if len(args) > 1 else None)
    elif script in ("validate_agent_e.sh", "validate_agent_f.sh"):
        kdir = Path(expand(case["env_root"], root)) / args[0]
        r = (validate_agent_e if script == "validate_agent_e.sh" else validate_agent_f)(kdir)
    elif script == "diff_ir.sh":
        audit = audit_files(args[0], args[1])
        return normalise(render_diff_ir_text(audit).encode("utf-8"), root), audit.exit_code
    else:
        raise ValueError(f"unknown script {script}")
    return normalise(r.output.encode("utf-8", "surrogateescape"), root), r.exit_code


def run_real(script: str, case: dict[str, Any], root: Path, scripts_dir: Path = SCRIPTS) -> tuple[bytes, int]:
    """Run the real TileGym script exactly like the existing comparisons: ``bash <script> args``."""
    env = {"PATH": os.environ["PATH"], "LC_ALL": LOCALES[script]}
    if case.get("env_root"):
        env["CUTILE_KERNEL_OUT_ROOT"] = expand(case["env_root"], root)
    proc = subprocess.run(
        ["bash", str(scripts_dir / script), *(expand(a, root) for a in case["args"])],
        capture_output=True,
        env=env,
        check=False,
        timeout=120,
    )
    return normalise(proc.stdout, root), proc.returncode


def mismatch(case: dict[str, Any], got: tuple[bytes, int], doc: dict[str, Any]) -> str | None:
    """None when ``got`` equals the recording byte for byte, else a short description."""
    want = (content(case["stdout"], doc), int(case["exit_code"]))
    if got == want:
        return None
    if got[1] != want[1]:
        return f"exit code {got[1]} != recorded {want[1]}"
    a, b = got[0].splitlines(keepends=True), want[0].splitlines(keepends=True)
    for i, (x, y) in enumerate(zip(a, b, strict=False), 1):
        if x != y:
            return f"stdout line {i}: twin {x!r} != real {y!r}"
    return f"stdout length: twin {len(a)} lines != real {len(b)} lines"


# --------------------------------------------------------------------------- tests

_DOCS = {s: load_golden(s) for s in SCRIPT_NAMES if golden_path(s).is_file()}
_CASES = {s: {c["name"]: c for c in doc["cases"]} for s, doc in _DOCS.items()}


@pytest.mark.parametrize("script", SCRIPT_NAMES)
def test_golden_file_is_present_and_broad(script: str) -> None:
    doc = load_golden(script)
    assert doc["script"] == script and doc["tilegym_commit"] == "75a1430"
    assert len(doc["cases"]) >= MIN_CASES[script]
    names = [c["name"] for c in doc["cases"]]
    assert len(names) == len(set(names))
    assert {c["exit_code"] for c in doc["cases"]} >= ({0, 1, 2} if script == "diff_ir.sh" else {0, 1})


@pytest.mark.parametrize(("script", "name"), [(s, n) for s, cases in _CASES.items() for n in cases])
def test_twin_reproduces_real_script(tmp_path: Path, script: str, name: str) -> None:
    case, doc = _CASES[script][name], _DOCS[script]
    root = tmp_path / "c"
    materialize(case, root, doc)
    problem = mismatch(case, run_twin(script, case, root), doc)
    assert problem is None, f"{script} {name} ({case['origin']}): {problem}"


def test_comparison_detects_drift(tmp_path: Path) -> None:
    """The comparison is not vacuous: a one-byte or exit-code drift of the twin is reported."""
    doc = _DOCS["validate_agent_e.sh"]
    case = _CASES["validate_agent_e.sh"]["pass"]
    materialize(case, tmp_path / "c", doc)
    out, rc = run_twin("validate_agent_e.sh", case, tmp_path / "c")
    assert mismatch(case, (out, rc), doc) is None
    assert mismatch(case, (out.replace(b"OK: ", b"OK:  ", 1), rc), doc) is not None
    assert mismatch(case, (out + b"\n", rc), doc) is not None
    assert mismatch(case, (out, 1 - rc), doc) is not None


@pytest.mark.skipif(not all((SCRIPTS / s).is_file() for s in SCRIPT_NAMES), reason="TileGym snapshot absent")
@pytest.mark.parametrize("script", SCRIPT_NAMES)
def test_recordings_are_current_with_snapshot(tmp_path: Path, script: str) -> None:
    """With the snapshot present: the real scripts still print what was recorded (else regenerate).
    diff_ir.sh is slow in bash (~0.3 s a pair), so only every 8th of its cases is re-run here."""
    doc = load_golden(script)
    assert hashlib.sha256((SCRIPTS / script).read_bytes()).hexdigest() == doc["script_sha256"], (
        f"the snapshot's {script} is not the one recorded: regenerate with tests/golden/make_golden.py"
    )
    cases = doc["cases"][::8] if script == "diff_ir.sh" else doc["cases"]
    for i, case in enumerate(cases):
        root = tmp_path / str(i)
        materialize(case, root, doc)
        problem = mismatch(case, run_real(script, case, root), doc)
        assert problem is None, f"{script} {case['name']}: real script now differs: {problem}"
