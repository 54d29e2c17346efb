"""Split a raw pytest perf log into the validator log and the investigation log (contract §3.7).

Contract: ``sanitize(raw_text, *, pytest_rc, source="") -> SanitizedLog``; pure (no I/O).

- ANSI escapes are stripped and CRLF/CR normalized first (TileGym's validators ``grep`` lines).
- pytest rc 0 and the cleaned text already passes ``validate_perf_log.sh``'s rules
  (perf_sections > 0, no ``FAILED`` line, perf_sections == passed) → the validator log is the
  cleaned text unchanged and the investigation log is empty (``verbatim`` is True when that is
  also byte-identical to the input).
- Otherwise the validator log keeps the first session header and only *complete record
  sections*: a test's nodeid line, its own output lines that contain no counted word, its one
  ``PASSED`` line, and one complete, valid record block (parsed back with a valid median) whose
  nodeid is that test's. A block printed without any status line (``-q`` runs) gets a
  reconstructed ``<nodeid> PASSED`` line, noted in the investigation log. Everything else
  (failed / skipped / errored sections, tracebacks, ``FAILURES``/``ERRORS``/``short test summary
  info``/warnings sections, final stats lines, later session headers of resumed runs, truncated
  blocks) moves, in order and tagged with its source line numbers and the reason, into the
  investigation log. A final ``== sanitized … ==`` line says what was kept.
- Postcondition (checked, see :func:`count_validator_lines`): lines containing
  ``Performance Test Results`` == lines containing ``PASSED`` == ``kept_records``, and no line
  contains ``FAILED``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cutile_workbench.artifacts.perflog.ansi import clean_text
from cutile_workbench.artifacts.perflog.parser import (
    _LONE_WORD_RE,
    _TERMINATOR_RE,
    _WORD_FIRST_RE,
    _split_nodeid_prefix,
    is_marker_line,
    parse_perf_log,
)
from cutile_workbench.artifacts.perflog.printer import MARKER
from cutile_workbench.errors import WorkbenchError

# pytest's (and the runner's) "==== title ====" section lines, by title. A banner a test prints
# itself (e.g. "=== CUPTI events (total=… us) ===", §4) is ordinary output of that test.
_SEPARATOR_RE = re.compile(r"^=+ (?P<title>.*\S) =+\s*$|^={5,}\s*$")
_PYTEST_TITLE_RE = re.compile(
    r"^(?:test session starts|FAILURES|ERRORS|PASSES|XFAILURES|XPASSES|warnings summary"
    r"|short test summary info|rerun test summary info|slowest .*durations.*|Captured .*"
    r"|no tests ran.*|Interrupted.*|workbench (?:resume|summary)\b.*"
    r"|.*\b(?:passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?|rerun)\b.*\bin [\d.]+s\b.*)$"
)


def _is_separator(stripped: str) -> bool:
    m = _SEPARATOR_RE.match(stripped)
    if m is None:
        return False
    title = m.group("title")
    return title is None or bool(_PYTEST_TITLE_RE.match(title))


_SESSION_START_RE = re.compile(r"^=+ test session starts =+\s*$")
_XDIST_RE = re.compile(r"^\[gw\d+\]")
_COUNTED = (MARKER, "PASSED", "FAILED", "SKIPPED")


@dataclass(frozen=True)
class SanitizedLog:
    """The two files E writes from one raw log (``perf_cutile_rs.txt`` + ``perf_investigation.log``)."""

    validator_log: str
    investigation_log: str
    kept_records: int
    dropped_nodeids: tuple[str, ...]
    verbatim: bool


@dataclass(frozen=True)
class ValidatorCounts:
    """What ``validate_perf_log.sh`` counts: lines containing each fixed, case-sensitive string."""

    perf_sections: int
    passed: int
    failed: int
    skipped: int

    @property
    def passes(self) -> bool:
        """PASS (not WARN, not FAIL) under the script's rules."""
        return self.perf_sections > 0 and self.failed == 0 and self.perf_sections == self.passed


def count_validator_lines(text: str) -> ValidatorCounts:
    """Count like ``grep -c`` does in validate_perf_log.sh (lines, fixed strings, case-sensitive)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # grep does not see a line after the final newline
    return ValidatorCounts(
        perf_sections=sum(MARKER in ln for ln in lines),
        passed=sum("PASSED" in ln for ln in lines),
        failed=sum("FAILED" in ln for ln in lines),
        skipped=sum("SKIPPED" in ln for ln in lines),
    )


def _count_counted(line: str) -> int:
    return sum(line.count(w) for w in _COUNTED)


def _has_counted(line: str) -> bool:
    return any(w in line for w in _COUNTED)


@dataclass
class _Section:
    nodeid: str | None
    start: int  # 0-based index of its first line
    lines: list[tuple[int, str]] = field(default_factory=list)


def sanitize(raw_text: str, *, pytest_rc: int | None, source: str = "") -> SanitizedLog:
    """Split ``raw_text`` (see module doc).

    Raises :class:`~cutile_workbench.errors.WorkbenchError` only if its own postcondition fails (a bug:
    it refuses to hand back a log the validator would reject or miscount).
    """
    text = clean_text(raw_text)
    if pytest_rc == 0 and count_validator_lines(text).passes:
        return SanitizedLog(
            validator_log=text,
            investigation_log="",
            kept_records=count_validator_lines(text).perf_sections,
            dropped_nodeids=(),
            verbatim=text == raw_text,
        )
    return _Splitter(text, pytest_rc, source or "<raw log>").run()


class _Splitter:
    def __init__(self, text: str, rc: int | None, source: str) -> None:
        self.lines = text.split("\n")
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.rc = rc
        self.source = source
        self.kept: list[str] = []
        self.moved: list[tuple[int, int, str, list[str]]] = []  # (first, last, reason, lines)
        self.dropped: list[str] = []
        self.kept_records = 0
        self.reconstructed = 0

    # ---- helpers
    def move(self, numbered: list[tuple[int, str]], reason: str) -> None:
        if not numbered or all(not ln.strip() for _, ln in numbered):
            return
        first, last = numbered[0][0] + 1, numbered[-1][0] + 1
        if self.moved and self.moved[-1][2] == reason and self.moved[-1][1] + 1 == first:
            # adjacent chunks with the same reason (e.g. a run of skipped tests) read as one
            prev = self.moved[-1]
            prev[3].extend(ln for _, ln in numbered)
            self.moved[-1] = (prev[0], last, reason, prev[3])
            return
        self.moved.append((first, last, reason, [ln for _, ln in numbered]))

    def section_start(self, line: str) -> str | None:
        """The nodeid a test line starts (``nodeid …`` or xdist ``[gwN] [ x%] WORD nodeid``)."""
        stripped = line.strip()
        if _XDIST_RE.match(stripped):
            m = _WORD_FIRST_RE.match(stripped)
            if m:
                split = _split_nodeid_prefix(m.group("rest"))
                if split is not None and "::" in split[0]:
                    return split[0]
            return None
        split = _split_nodeid_prefix(stripped)
        if split is not None and "::" in split[0]:
            return split[0]
        return None

    # ---- main
    def run(self) -> SanitizedLog:
        n = len(self.lines)
        i = 0
        header: list[tuple[int, str]] = []
        while i < n:
            ln = self.lines[i]
            if (
                self.section_start(ln)
                or is_marker_line(ln)
                or (_is_separator(ln.strip()) and not _SESSION_START_RE.match(ln.strip()) and header)
            ):
                break
            header.append((i, ln))
            i += 1
        for idx, ln in header:
            if any(w in ln for w in ("PASSED", "FAILED", MARKER)):
                self.move([(idx, ln)], "header line containing a counted word")
            else:
                self.kept.append(ln)

        in_footer = False
        footer: list[tuple[int, str]] = []
        section: _Section | None = None
        loose: list[tuple[int, str]] = []
        while i < n:
            ln = self.lines[i]
            stripped = ln.strip()
            if _SESSION_START_RE.match(stripped):
                self.close(section)
                section = None
                self.flush_loose(loose)
                self.move(footer, "failure/summary sections")
                footer = []
                in_footer = False
                # a resumed run's later session header: not part of the validator log
                j = i
                block: list[tuple[int, str]] = []
                while (
                    j < n
                    and not self.section_start(self.lines[j])
                    and not is_marker_line(self.lines[j])
                    and not (j > i and _is_separator(self.lines[j].strip()))
                ):
                    block.append((j, self.lines[j]))
                    j += 1
                self.move(block, "later session header (resumed run)")
                i = j
                continue
            if in_footer:
                if self.section_start(ln) and not _WORD_FIRST_RE.match(stripped):
                    self.move(footer, "failure/summary sections")
                    footer = []
                    in_footer = False
                else:
                    footer.append((i, ln))
                    i += 1
                    continue
            if _is_separator(stripped):
                self.close(section)
                section = None
                self.flush_loose(loose)
                in_footer = True
                footer.append((i, ln))
                i += 1
                continue
            nodeid = self.section_start(ln)
            if nodeid is not None:
                self.close(section)
                self.flush_loose(loose)
                section = _Section(nodeid=nodeid, start=i)
                section.lines.append((i, ln))
                i += 1
                continue
            if is_marker_line(ln) and section is None:
                # a block with no test line before it (-q run): its own section
                section = _Section(nodeid=None, start=i)
                self.flush_loose(loose)
            if section is not None:
                section.lines.append((i, ln))
                # an orphan (-q) block ends at its terminator
                if (
                    section.nodeid is None
                    and _TERMINATOR_RE.match(stripped)
                    and any(is_marker_line(x) for _, x in section.lines)
                ):
                    self.close(section)
                    section = None
            else:
                loose.append((i, ln))
            i += 1
        self.close(section)
        self.flush_loose(loose)
        self.move(footer, "failure/summary sections")
        return self.result()

    def flush_loose(self, loose: list[tuple[int, str]]) -> None:
        self.move(list(loose), "output outside any test section")
        loose.clear()

    def close(self, section: _Section | None) -> None:
        if section is None:
            return
        verdict = self.judge(section)
        if isinstance(verdict, str):
            if section.nodeid:
                self.dropped.append(section.nodeid)
            self.move(section.lines, verdict)
            return
        keep, moved = verdict
        self.kept.extend(keep)
        self.kept_records += 1
        if moved:
            self.move(moved, f"output lines of {section.nodeid or 'a -q test'} containing a counted word")

    def judge(self, section: _Section) -> str | tuple[list[str], list[tuple[int, str]]]:
        """A reason to drop the section, or (lines to keep, lines to move)."""
        lines = section.lines
        markers = [k for k, (_, ln) in enumerate(lines) if is_marker_line(ln)]
        m0 = markers[0] if markers else len(lines)
        # pytest writes the call phase's word last before our block (trylast), so the last
        # status-looking line before the block is the test's own; earlier ones are test output.
        status_idx, status = None, None
        for k in range(m0):
            word = self.word_of(lines[k][1], k == 0)
            if word is not None:
                status_idx, status = k, word
        if status is not None and status not in ("PASSED", "XPASS"):
            return f"test {status.lower()}"
        if not markers:
            return "passed without a record block" if status else "no status and no record block"
        if len(markers) > 1:
            return "more than one record block in one test section"
        end = next((k for k in range(m0 + 1, len(lines)) if _TERMINATOR_RE.match(lines[k][1].strip())), None)
        if end is None:
            return "truncated record block (no terminator)"
        if section.nodeid is not None and status is None:
            return "record block without its PASSED line"
        block_text = "\n".join(ln for _, ln in lines[m0 : end + 1])
        try:
            parsed = parse_perf_log(self.source, text=block_text, strict=True, memo=False)
        except WorkbenchError as exc:
            return f"invalid record block: {exc.message}"
        if len(parsed.records) != 1:
            return "record block without a usable record"
        rec_nodeid = parsed.records[0].nodeid
        if section.nodeid is not None and rec_nodeid != section.nodeid:
            return f"record block belongs to {rec_nodeid}, not to this test"
        if _has_counted(rec_nodeid):
            return "nodeid contains a word validate_perf_log.sh counts"
        nodeid = section.nodeid or rec_nodeid
        keep: list[str] = []
        moved: list[tuple[int, str]] = []
        if section.nodeid is None:
            self.reconstructed += 1
            keep.append(f"{rec_nodeid} PASSED")
        for k, (idx, ln) in enumerate(lines):
            if k > end:
                if ln.strip():
                    moved.append((idx, ln))  # output after the block belongs to nothing we keep
            elif k == m0:
                keep.append(ln)  # the marker line: the block's one counted line
            elif k > m0:
                if _has_counted(ln):
                    moved.append((idx, ln))  # interleaved output inside the block
                else:
                    keep.append(ln)
            elif k == status_idx:
                if _count_counted(ln) == 1:
                    keep.append(ln)
                else:  # output glued to the status line: keep a clean status line only
                    keep.append(f"{nodeid} PASSED" if k == 0 else "PASSED")
                    moved.append((idx, ln))
            elif _has_counted(ln):
                if k == 0:
                    keep.append(nodeid)  # keep the test's line, move its output
                moved.append((idx, ln))
            else:
                keep.append(ln)
        return keep, moved

    def word_of(self, line: str, is_first: bool) -> str | None:
        stripped = line.strip()
        m = _LONE_WORD_RE.match(stripped)
        if m:
            return m.group("word")
        if _XDIST_RE.match(stripped):
            m = _WORD_FIRST_RE.match(stripped)
            return m.group("word") if m else None
        if is_first:
            split = _split_nodeid_prefix(stripped)
            rest = split[1] if split else ""
            m = _LONE_WORD_RE.match(rest) or re.search(
                r"\s(PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)(?:\s+\[\s*\d+%\])?\s*$", " " + rest
            )
            if m:
                return m.group(1)
            return None
        m = re.search(r"\s(PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)(?:\s+\[\s*\d+%\])?\s*$", " " + stripped)
        return m.group(1) if m else None

    def result(self) -> SanitizedLog:
        closing = (
            f"== sanitized by cutile-workbench: {self.kept_records} record section(s) kept, "
            f"{len(self.dropped)} test section(s) moved to the investigation log =="
        )
        validator_log = "\n".join([*self.kept, closing]) + "\n"
        counts = count_validator_lines(validator_log)
        if (
            counts.failed
            or counts.perf_sections != counts.passed
            or counts.perf_sections != self.kept_records
        ):
            # Should be impossible by construction; refuse loudly rather than write a log that
            # the validator would reject or miscount.
            raise WorkbenchError(
                f"sanitizer postcondition failed: {counts} for {self.kept_records} kept records",
                path=self.source,
            )
        inv = [
            f"# perf_investigation.log: lines removed from {self.source} by the cutile-workbench sanitizer",
            f"# pytest rc={self.rc}; kept {self.kept_records} complete record section(s) in the "
            f"validator log; moved {len(self.dropped)} test section(s) and {len(self.moved)} chunk(s) here.",
            "# Why: validate_perf_log.sh fails on any line containing the failure word and compares "
            "record blocks with pass lines (contract section 3.7); failures, skips, tracebacks and "
            "summaries are kept here for diagnosis.",
        ]
        if self.reconstructed:
            inv.append(
                f"# {self.reconstructed} status line(s) were reconstructed from record blocks "
                "(the run printed records without per-test status lines, e.g. -q)."
            )
        if self.rc not in (0, None) and not self.moved:
            inv.append("# pytest exited non-zero but no failure sections were found in the log.")
        for first, last, reason, chunk in self.moved:
            inv.append(f"--- lines {first}-{last}: {reason} ---")
            inv.extend(chunk)
        return SanitizedLog(
            validator_log=validator_log,
            investigation_log="\n".join(inv) + "\n",
            kept_records=self.kept_records,
            dropped_nodeids=tuple(self.dropped),
            verbatim=False,
        )
