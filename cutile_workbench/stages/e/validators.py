"""In-process twins of the skill's shell validators, byte-identical in stdout and exit code.

Contract (tilegym-contract.md §1.5.1–1.5.3, checked against the real scripts of TileGym 75a1430):

- :func:`validate_perf_log` ≡ ``validate_perf_log.sh <log> [label]``
- :func:`validate_agent_e` ≡ ``CUTILE_KERNEL_OUT_ROOT=<parent> validate_agent_e.sh <kernel>``
- :func:`validate_agent_f` ≡ ``CUTILE_KERNEL_OUT_ROOT=<parent> validate_agent_f.sh <kernel>``

``overlay`` maps kernel-dir-relative paths to planned file contents; they are read *as if written*
(existing files on disk are shadowed), so reports are validated before anything touches the disk.
``ValidatorResult.output`` is the script's **stdout** (stderr is discarded by the scripts for the
perf-log sub-checks, and is empty for the others except in pathological file names).

Emulated shell/grep details (GNU grep 3.x and bash 5 in a UTF-8 locale, e.g. C.UTF-8):
- ``grep -c`` counts ``\\n``-separated lines; a file containing a NUL byte is "binary" and then
  NUL also terminates lines (GNU grep's binary mode).
- ``[[:space:]]`` is glibc's UTF-8 ``iswspace`` set (ASCII whitespace plus U+1680, U+2000–2006,
  U+2008–200A, U+2028, U+2029, U+205F, U+3000; *not* the no-break spaces); a line with invalid
  UTF-8 never matches the anchored geomean regex.
- ``GM_LINE=$(grep -E '^geomean_ratio=' … | head -1)``: grep skips matching lines with invalid
  UTF-8 and prints nothing once the file is binary (NUL byte), see :func:`_first_geomean_line`.
- ``FIRST_LINE=$(head -1 …)``: bash drops NUL bytes from command substitutions.
- ``for f in …/perf_investigation_*.md`` sorts bytewise (C collation) and skips non-files;
  ``basename $f`` is unquoted in the script, so word splitting is emulated too.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

SKILL = "tilegym-converting-cutile-triton-to-cutile-rs"
#: where the skill's scripts live under a TileGym checkout (runtime install first, then the repo copy)
SCRIPT_DIRS: tuple[str, ...] = (f".agents/skills/{SKILL}/scripts", f"skills/{SKILL}/scripts")

#: the two perf logs validate_agent_e.sh checks, in its order
AGENT_E_PERF_LOGS: tuple[str, ...] = ("perf_cutile_rs.txt", "baseline_perf_cutile.txt")

_GLIBC_UTF8_SPACE = "\t\n\x0b\x0c\r \u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a\u2028\u2029\u205f\u3000"
_GEOMEAN_RE = re.compile(r"geomean_ratio=[0-9]+(\.[0-9]+)?[" + re.escape(_GLIBC_UTF8_SPACE) + r"]*")
_E_VERDICT_RE = re.compile(r"VERDICT: (DONE|INVESTIGATE)")
_F_VERDICT_RE = re.compile(r"VERDICT: (FIXABLE|ALIGNED|BLOCKED)")


@dataclass(frozen=True)
class ValidatorResult:
    """One validator run: the command as shown in transcripts, its stdout, its exit code."""

    command: str
    output: str
    exit_code: int

    def transcript(self) -> str:
        """``$ <command>`` / verbatim output / ``exit=<n>`` (the return protocol of §1.5.9)."""
        out = self.output
        if out and not out.endswith("\n"):
            out += "\n"
        return f"$ {self.command}\n{out}exit={self.exit_code}\n"

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def transcript(results: list[ValidatorResult]) -> str:
    """Concatenate transcripts of several validator runs."""
    return "".join(r.transcript() for r in results)


def output_block(transcript_text: str) -> str:
    """The return protocol's ``<VALIDATOR_OUTPUT>`` block around a transcript (§1.5.9)."""
    body = transcript_text if transcript_text.endswith("\n") else transcript_text + "\n"
    return f"<VALIDATOR_OUTPUT>\n{body}</VALIDATOR_OUTPUT>\n"


# --------------------------------------------------------------------------- byte helpers


def _enc(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _dec(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


class _View:
    """A kernel dir with an overlay of planned files on top of the disk."""

    def __init__(self, kernel_dir: Path, overlay: Mapping[str, str] | None) -> None:
        self.kernel_dir = Path(kernel_dir)
        self.overlay = {_norm_rel(k): v for k, v in (overlay or {}).items()}

    def rel(self, relpath: str) -> Path:
        return self.kernel_dir / relpath

    def is_file(self, relpath: str) -> bool:  # bash `[ -f ]` (follows symlinks)
        if _norm_rel(relpath) in self.overlay:
            return True
        return os.path.isfile(self.rel(relpath))

    def read(self, relpath: str) -> bytes | None:
        key = _norm_rel(relpath)
        if key in self.overlay:
            return _enc(self.overlay[key])
        try:
            return self.rel(relpath).read_bytes()
        except OSError:
            return None

    def nonempty(self, relpath: str) -> bool:  # `[ -s ]`
        if _norm_rel(relpath) in self.overlay:
            return len(_enc(self.overlay[_norm_rel(relpath)])) > 0
        try:
            return os.path.getsize(self.rel(relpath)) > 0 and os.path.isfile(self.rel(relpath))
        except OSError:
            return False


def _norm_rel(relpath: str) -> str:
    return os.path.normpath(relpath).replace(os.sep, "/")


def _grep_lines(data: bytes) -> list[bytes]:
    """Lines as GNU grep sees them (NUL also ends a line in binary files)."""
    if b"\0" in data:
        data = data.replace(b"\0", b"\n")
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _grep_count_fixed(data: bytes, needle: bytes) -> int:
    return sum(1 for line in _grep_lines(data) if needle in line)


def _count_geomean_lines(data: bytes) -> int:
    n = 0
    for line in _grep_lines(data):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if _GEOMEAN_RE.fullmatch(text):
            n += 1
    return n


_GREP_BUFFER = 98304  # GNU grep 3.x reads 96 KiB at a time; binary detection is per buffer


def _first_geomean_line(data: bytes) -> bytes:
    """``grep -E '^geomean_ratio=' | head -1`` captured by ``$(...)``.

    GNU grep suppresses each matching line that has invalid UTF-8 (and keeps searching), and
    prints nothing from the buffer holding the first NUL byte onwards (binary file: "binary file
    matches" on stderr). Exact for files up to 96 KiB (measured: a NUL at offset 98303 hides a
    match at offset 0, one at 98304 does not); beyond, buffers are modelled as aligned 96 KiB chunks.
    """
    nul = data.find(b"\0")
    cutoff = len(data) + 1 if nul < 0 else (nul // _GREP_BUFFER) * _GREP_BUFFER
    offset = 0
    for line in data.split(b"\n"):
        if offset >= cutoff or (nul >= 0 and offset + len(line) >= cutoff):
            return b""
        start, offset = offset, offset + len(line) + 1
        if line.startswith(b"geomean_ratio=") and start < cutoff:
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                continue
            return line
    return b""


def _head1(data: bytes) -> bytes:
    """``$(head -1 file)``: first line, NULs dropped, trailing newlines stripped."""
    first = data.split(b"\n", 1)[0]
    return first.replace(b"\0", b"").rstrip(b"\n")


def _basename(path: str) -> str:
    if path == "":
        return ""
    stripped = path.rstrip("/")
    if stripped == "":
        return "/"
    return stripped.rsplit("/", 1)[-1]


def _basename_unquoted(path: str) -> str:
    """``$(basename $f)`` with word splitting on IFS whitespace (and re-globbing of words)."""
    words: list[str] = []
    for word in path.split():
        if any(c in word for c in "*?["):
            import glob

            matches = sorted(glob.glob(word), key=_enc)
            words.extend(matches or [word])
        else:
            words.append(word)
    if not words:
        return ""  # `basename` with no operand: usage error on stderr, empty stdout
    if len(words) == 1:
        return _basename(words[0])
    if len(words) == 2:
        name = _basename(words[0])
        suffix = words[1]
        if name.endswith(suffix) and name != suffix:
            name = name[: -len(suffix)]
        return name
    return ""  # "extra operand": stderr only


# --------------------------------------------------------------------------- perf log


def _perf_log_lines(
    label: str, shown_path: str, data: bytes | None, exists: bool, nonempty: bool | None = None
) -> tuple[list[str], int]:
    """Lines + rc of validate_perf_log.sh; ``data`` None with ``nonempty`` = unreadable file."""
    if not exists:
        return [f"FAIL: {label}: file not found → {shown_path}"], 1
    if not (nonempty if nonempty is not None else bool(data)):
        return [f"FAIL: {label}: file is empty → {shown_path}"], 1
    data = data or b""  # unreadable: grep prints nothing, counts fall back to 0
    perf = _grep_count_fixed(data, b"Performance Test Results")
    passed = _grep_count_fixed(data, b"PASSED")
    failed = _grep_count_fixed(data, b"FAILED")
    skipped = _grep_count_fixed(data, b"SKIPPED")
    out = [f"{label}: perf_sections={perf} passed={passed} failed={failed} skipped={skipped}"]
    if perf == 0:
        out.append(f"FAIL: {label}: no 'Performance Test Results' found — --print-record was not effective")
        return out, 1
    if failed > 0:
        out.append(f"FAIL: {label}: {failed} test(s) FAILED")
        return out, 1
    if perf != passed:
        out.append(f"WARN: {label}: perf_sections({perf}) != passed({passed})")
        return out, 0
    out.append(f"PASS: {label}: {perf} perf records for {passed} passed tests")
    return out, 0


def _join(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def validate_perf_log(path: Path, label: str | None = None, *, text: str | None = None) -> ValidatorResult:
    """Twin of ``validate_perf_log.sh <path> [label]``; ``text`` = content as if ``path`` held it."""
    shown = str(path)
    lab = label if label else _basename(shown)
    data: bytes | None
    if text is not None:
        data, exists, nonempty = _enc(text), True, bool(text)
    else:
        exists = os.path.isfile(path)
        nonempty = exists and os.path.getsize(path) > 0
        try:
            data = Path(path).read_bytes() if exists else None
        except OSError:
            data = None
    cmd = f"bash scripts/validate_perf_log.sh {shown}" + (f" {label}" if label else "")
    lines, rc = _perf_log_lines(lab, shown, data, exists, nonempty)
    return ValidatorResult(command=cmd + "  # in-process twin", output=_join(lines), exit_code=rc)


# --------------------------------------------------------------------------- agent E / F


def _base_str(kernel_dir: Path) -> str:
    # validators print "${CUTILE_KERNEL_OUT_ROOT}/${KERNEL}"; with OUT_ROOT = parent this is the dir
    kernel_dir = Path(kernel_dir)
    return f"{kernel_dir.parent}/{kernel_dir.name}"


def validate_agent_e(kernel_dir: Path, overlay: Mapping[str, str] | None = None) -> ValidatorResult:
    """Twin of ``validate_agent_e.sh <kernel>`` with ``CUTILE_KERNEL_OUT_ROOT=<kernel_dir parent>``."""
    view = _View(kernel_dir, overlay)
    base = _base_str(kernel_dir)
    out: list[str] = []
    fail = 0
    report = "reports/performance.md"
    data = view.read(report) if view.is_file(report) else None
    if data is None or not view.nonempty(report):
        out.append("FAIL: performance.md missing or empty")
        fail += 1
    else:
        first = _dec(_head1(data))
        if _E_VERDICT_RE.fullmatch(first) and "\n" not in first:
            out.append(f"OK: verdict line: {first}")
        else:
            out.append(f"FAIL: first line must be 'VERDICT: DONE' or 'VERDICT: INVESTIGATE', got: {first}")
            fail += 1
        count = _count_geomean_lines(data)
        if count == 1:
            out.append(f"OK: machine-readable geomean: {_dec(_first_geomean_line(data))}")
        elif count == 0:
            out.append(
                "FAIL: performance.md missing required 'geomean_ratio=X.XXXX' line (scorer perf source)"
            )
            fail += 1
        else:
            out.append(f"FAIL: performance.md has {count} 'geomean_ratio=' lines, expected exactly 1")
            fail += 1
    for log in AGENT_E_PERF_LOGS:
        exists = view.is_file(log)
        lines, rc = _perf_log_lines(
            log, f"{base}/{log}", view.read(log) if exists else None, exists, view.nonempty(log)
        )
        out.extend(lines)
        if rc == 0:
            out.append(f"OK: {log}")
        else:
            out.append(f"FAIL: {log}")
            fail += 1
    return _finish_agent_check(view, out, fail, "agent_e", "validate_agent_e.sh", kernel_dir)


def _finish_agent_check(
    view: _View, out: list[str], fail: int, agent: str, script: str, kernel_dir: Path
) -> ValidatorResult:
    """The shared tail of validate_agent_{e,f}.sh: the agent-log check, ``---``, PASS/FAIL."""
    agent_log = f"reports/agent_logs/{agent}.md"
    if view.is_file(agent_log) and view.nonempty(agent_log):
        out.append(f"OK: {agent}.md log")
    else:
        out.append(f"FAIL: {agent}.md log missing")
        fail += 1
    out.append("---")
    out.append("PASS" if fail == 0 else f"FAIL: {fail} issue(s)")
    cmd = f"bash scripts/{script} {Path(kernel_dir).name}  # in-process twin"
    return ValidatorResult(command=cmd, output=_join(out), exit_code=0 if fail == 0 else 1)


def _f_reports(view: _View) -> list[str]:
    """Relpaths the glob ``reports/perf_investigation_*.md`` yields, in C-collation order."""
    names: set[str] = set()
    reports = view.rel("reports")
    try:
        for entry in os.listdir(reports):
            names.add(entry)
    except OSError:
        pass
    for rel in view.overlay:
        head, _, name = rel.rpartition("/")
        if head == "reports":
            names.add(name)
    found = [
        n
        for n in names
        if n.startswith("perf_investigation_")
        and n.endswith(".md")
        and len(n) >= len("perf_investigation_.md")
    ]
    return [f"reports/{n}" for n in sorted(found, key=_enc)]


def validate_agent_f(kernel_dir: Path, overlay: Mapping[str, str] | None = None) -> ValidatorResult:
    """Twin of ``validate_agent_f.sh <kernel>`` with ``CUTILE_KERNEL_OUT_ROOT=<kernel_dir parent>``."""
    view = _View(kernel_dir, overlay)
    base = _base_str(kernel_dir)
    out: list[str] = []
    fail = 0
    count = 0
    for rel in _f_reports(view):
        if not view.is_file(rel):
            continue
        count += 1
        data = view.read(rel) or b""
        first = _dec(_head1(data))
        name = _basename_unquoted(f"{base}/{rel}")
        if _F_VERDICT_RE.fullmatch(first):
            out.append(f"OK: {name}: {first}")
        else:
            out.append(f"FAIL: {name}: first line must be VERDICT: FIXABLE|ALIGNED|BLOCKED, got: {first}")
            fail += 1
    if count == 0:
        out.append("FAIL: no perf_investigation_*.md files found")
        fail += 1
    return _finish_agent_check(view, out, fail, "agent_f", "validate_agent_f.sh", kernel_dir)


# --------------------------------------------------------------------------- the real scripts


def find_scripts_dir(tilegym: Path | None) -> Path | None:
    """The skill's ``scripts/`` dir in a TileGym checkout (``.agents/skills`` first), or None."""
    if tilegym is None:
        return None
    for rel in SCRIPT_DIRS:
        cand = Path(tilegym) / rel
        if (cand / "validate_agent_e.sh").is_file():
            return cand
    return None


def _stage_copy(kernel_dir: Path, dest: Path) -> None:
    """Copy what the validators read (top-level files + reports/) following symlinks."""
    dest.mkdir(parents=True)
    if not kernel_dir.is_dir():
        return
    for entry in kernel_dir.iterdir():
        if entry.name == "reports" and entry.is_dir():
            shutil.copytree(
                entry,
                dest / "reports",
                ignore=shutil.ignore_patterns(".workbench-*"),
                ignore_dangling_symlinks=True,
            )
        elif entry.is_file():
            shutil.copyfile(entry, dest / entry.name)


def run_real_validator(
    tilegym: Path | None,
    script: str,
    args: list[str],
    kernel_dir: Path,
    overlay: Mapping[str, str] | None,
    *,
    timeout_s: float = 60.0,
) -> ValidatorResult | None:
    """Run the skill's real ``script`` on a staged copy of ``kernel_dir`` with ``overlay`` applied.

    ``{BASE}`` in ``args`` becomes the staged kernel dir (for ``validate_perf_log.sh <path>``).
    Returns None when no TileGym checkout with the skill's scripts is available. The copy lives in
    a temp out root (``CUTILE_KERNEL_OUT_ROOT``) so the real kernel dir is never touched; output is
    stdout+stderr verbatim (paths in it name the staged copy, which the command line shows).
    """
    if tilegym is None:
        return None
    tilegym = Path(tilegym).resolve()  # cwd becomes the checkout: relative paths would break
    scripts = find_scripts_dir(tilegym)
    if scripts is None or not (scripts / script).is_file():
        return None
    kernel_dir = Path(kernel_dir)
    with tempfile.TemporaryDirectory(prefix="cutile-wb-validate-") as tmp:
        staged = Path(tmp) / kernel_dir.name
        _stage_copy(kernel_dir, staged)
        for rel, content in (overlay or {}).items():
            target = staged / _norm_rel(rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(_enc(content))
        args = [a.replace("{BASE}", str(staged)) for a in args]
        env = dict(os.environ)
        env["CUTILE_KERNEL_OUT_ROOT"] = tmp
        env.setdefault("LC_ALL", "C.UTF-8")
        try:
            proc = subprocess.run(
                ["bash", str(scripts / script), *args],
                cwd=str(tilegym),
                env=env,
                capture_output=True,
                timeout=timeout_s,
                check=False,
            )
            output = _dec(proc.stdout + proc.stderr)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            output, rc = f"timeout after {timeout_s:.0f}s\n", 124
        rel_script = os.path.relpath(scripts / script, tilegym)
        cmd = f"CUTILE_KERNEL_OUT_ROOT={tmp} bash {rel_script} {' '.join(args)}".rstrip()
        return ValidatorResult(command=cmd, output=output, exit_code=rc)
