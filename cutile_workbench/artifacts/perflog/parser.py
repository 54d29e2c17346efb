"""Parse a perf log (raw ``pytest -sv --print-record`` output) into a :class:`~cutile_workbench.model.PerfLog`.

Contract:
- Records come from "Performance Test Results" blocks (§3.6; :mod:`cutile_workbench.artifacts.perflog.printer`).
  The ``record_json:`` line is preferred; without it the ``Framework: {repr} ms`` line is read
  with ``ast.literal_eval`` (never ``eval``). A repr line *outside* any block (the internal
  printer's "latency sample" format) is attached to the most recent test line's nodeid.
- Rows are keyed by ``(func_key, params)``; ``params`` is the test id minus the backend token
  (:func:`cutile_workbench.artifacts.perflog.printer.record_params`, plus ``extra_tokens``).
- Tolerated: ANSI colours, CRLF, interleaved log lines (selector INFO lines, stderr CUPTI dumps),
  ``PASSED`` on its own later line (§3.1), a truncated last block (``PerfLog.truncated``).
- Test outcomes without a record (failed / skipped / error / passed without a record) are
  collected from ``nodeid WORD`` lines, lone ``WORD`` lines, xdist lines and the
  ``short test summary info`` lines into ``PerfLog.outcomes``.
- ``strict=True`` (report writers) raises :class:`~cutile_workbench.errors.InputError` naming
  ``path:line`` and a key for: empty file, no blocks and no test lines, a truncated block,
  duplicate configs, NaN/inf/negative/zero medians, non-numeric fields and wrong types. Otherwise
  problems become ``PerfLog.notes`` (``path:line: message``) and the bad record is dropped (its
  test is listed as ``passed_no_record`` with the reason); a bad non-forward phase (``backward``)
  drops only that phase, since E compares forward medians. Duplicates are the same
  ``(framework, func_key, params)`` twice (the later one is kept when lenient); one log holding
  several frameworks is legal, so consumers select records by ``PerfRecord.framework``.
- Whatever the bytes, nothing but :class:`~cutile_workbench.errors.WorkbenchError` subclasses escapes;
  lines longer than :data:`MAX_LINE_CHARS` are skipped with a note.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cutile_workbench.artifacts.perflog.ansi import clean_text, decode_bytes
from cutile_workbench.artifacts.perflog.printer import MARKER, record_params, unescape_counted
from cutile_workbench.artifacts.testids import split_nodeid
from cutile_workbench.clock_exposure import ClockExposure, exposure_from_dict
from cutile_workbench.errors import InputError, WorkbenchError
from cutile_workbench.model import KernelTime, PerfLog, PerfRecord, PhaseStats, SourceRef, TestOutcome

#: lines longer than this are skipped (a record with a few thousand raw samples stays far below)
MAX_LINE_CHARS = 4 * 1024 * 1024
#: repr text handed to ast.literal_eval is bounded too (deeply nested garbage can blow the stack)
_MAX_REPR_CHARS = MAX_LINE_CHARS

_MARKER_RE = re.compile(r"-{3,} " + re.escape(MARKER) + r" -{3,}")


def is_marker_line(line: str) -> bool:
    """The block's first line (substring test first: regex scans of long lines are slow)."""
    return MARKER in line and _MARKER_RE.search(line) is not None


_TERMINATOR_RE = re.compile(r"^-{20,}\s*$")
_REPR_RE = re.compile(r"^(?P<fw>[^\s:{}][^:{}]*): (?P<val>\{.*\}) ms\s*$")
_PHASE_RE = re.compile(r"^(?P<phase>[A-Za-z_][\w]*): (?P<kv>median_ms=.*)$")
_WORDS = ("PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL", "XPASS")
_WORD_ALT = "|".join(_WORDS)
# "PASSED", "PASSED [ 50%]", "SKIPPED (reason) [ 10%]" alone on a line (-s output before it)
_LONE_WORD_RE = re.compile(rf"^(?P<word>{_WORD_ALT})(?:\s+\((?P<reason>.*)\))?(?:\s+\[\s*\d+%\])?\s*$")
# "... output PASSED" at the end of an output line that had no newline
_TAIL_WORD_RE = re.compile(rf"\s(?P<word>{_WORD_ALT})(?:\s+\[\s*\d+%\])?\s*$")
# xdist "[gw0] [ 50%] PASSED nodeid" and summary "FAILED nodeid - msg" / "PASSED nodeid"
_WORD_FIRST_RE = re.compile(rf"^(?:\[gw\d+\]\s+(?:\[\s*\d+%\]\s+)?)?(?P<word>{_WORD_ALT})\s+(?P<rest>\S.*)$")
_NODEID_START_RE = re.compile(r"^[^\s\[\]]+\.py(?:::|\s|$)")
#: a status line holds a status word or a node id (``.py``): a line with neither is none (one C-level
#: search instead of the four patterns below; at 1,000 configs the logs' 200,000 output lines)
_MAY_BE_STATUS_RE = re.compile(rf"{_WORD_ALT}|\.py")

_OUTCOME_OF = {
    "PASSED": "passed",
    "XPASS": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
    "XFAIL": "skipped",
}
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}


@dataclass
class _Block:
    start: int  # line of the marker
    nodeid: str | None = None
    framework: str | None = None
    params: str | None = None
    repr_fw: str | None = None
    repr_val: str | None = None
    repr_line: int | None = None
    json_text: str | None = None
    json_line: int | None = None
    end: int | None = None


@dataclass
class _State:
    path: str
    strict: bool
    extra_tokens: tuple[str, ...]
    log: PerfLog
    outcomes: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # nodeid→(outcome, reason, line)
    rows: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (framework, *row key) → line
    saw_test_line: bool = False

    def problem(self, message: str, line: int | None, key: str | None = None) -> None:
        if self.strict:
            raise InputError(message, path=self.path, line=line, key=key)
        loc = f"{self.path}:{line}" if line is not None else self.path
        self.log.notes.append(f"{loc}: {f'{key}: ' if key else ''}{message}")


def parse_perf_log(
    path: Path | str,
    *,
    text: str | None = None,
    strict: bool = False,
    extra_tokens: tuple[str, ...] = (),
    memo: bool = True,
) -> PerfLog:
    """Parse the perf log at ``path`` (or ``text``, with ``path`` used for messages).

    Parsed once per process per content (issue 31): a second request for the same text, path and
    tokens gets a copy of the first result (its lists copied, the frozen records shared); a strict
    parse that succeeded also answers a lenient request (strict success means no problem was seen,
    so the lenient parse would be the same). A strict parse that raised is not kept. ``memo=False``
    (the sanitizer's one-block checks): parsed and not kept."""
    src = str(path)
    tokens = tuple(extra_tokens)
    try:
        if not memo:
            return _parse(src, text, strict, tokens)
        if text is None:
            from cutile_workbench.artifacts.confine import read_regular

            raw = read_regular(src, kind="perf log")  # a FIFO/device refused unread, size capped
            if b"\x00" in raw[:65536]:  # the binary-file note belongs to this read: parsed as before
                return _parse(src, None, strict, tokens)
            text = decode_bytes(raw)
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        for key in ((src, digest, tokens, True), (src, digest, tokens, False))[: 1 if strict else 2]:
            hit = _MEMO.get(key)
            if hit is not None:
                return _copy(hit)
        log = _parse(src, text, strict, tokens)
        if len(_MEMO) >= _MEMO_SIZE:
            _MEMO.pop(next(iter(_MEMO)))
        _MEMO[(src, digest, tokens, strict)] = _copy(log)
        return log
    except WorkbenchError:
        raise
    except (RecursionError, MemoryError) as exc:  # pathological nesting / size
        raise InputError(f"perf log could not be parsed ({type(exc).__name__})", path=src) from None


#: parsed logs of this process by (path, SHA-256 of the text, extra tokens, strict): see parse_perf_log
_MEMO: dict[tuple[str, str, tuple[str, ...], bool], PerfLog] = {}
_MEMO_SIZE = 8  # a process looks at one or two kernels: a candidate log (and variants) and baselines


def _copy(log: PerfLog) -> PerfLog:
    return PerfLog(
        path=log.path,
        records=list(log.records),
        outcomes=list(log.outcomes),
        truncated=log.truncated,
        notes=list(log.notes),
    )


def _parse(src: str, text: str | None, strict: bool, extra_tokens: tuple[str, ...]) -> PerfLog:
    log = PerfLog(path=src)
    st = _State(path=src, strict=strict, extra_tokens=extra_tokens, log=log)
    if text is None:
        from cutile_workbench.artifacts.confine import read_regular

        raw = read_regular(src, kind="perf log")  # a FIFO/device refused unread, size capped
        if b"\x00" in raw[:65536]:
            st.problem("file looks binary (NUL bytes); decoded with replacement characters", None)
        text = decode_bytes(raw)
    if not text.strip():
        if strict:
            raise InputError("perf log is empty", path=src)
        log.notes.append(f"{src}: perf log is empty")
        return log

    lines = clean_text(text).split("\n")
    block: _Block | None = None
    pending: tuple[str, int] | None = None  # nodeid whose status word has not been seen yet
    last_nodeid: str | None = None
    for lineno, line in enumerate(lines, start=1):
        if len(line) > MAX_LINE_CHARS:
            st.problem(f"line of {len(line)} characters skipped (limit {MAX_LINE_CHARS})", lineno)
            continue
        stripped = line.strip()
        if MARKER in line and _MARKER_RE.search(line) is not None:  # is_marker_line, inlined: every line
            if block is not None:
                _truncated(st, block, f"record block has no terminator (next block at line {lineno})")
            block = _Block(start=lineno)
            continue
        if block is not None:
            if _TERMINATOR_RE.match(stripped):
                block.end = lineno
                _finish_block(st, block)
                block = None
            else:
                _block_line(block, stripped, lineno)
            continue
        # ---- outside blocks: test status lines and orphan repr lines (each looked for only where the
        # line holds what it needs: most lines are the tests' own output)
        found = _status_line_patterns(stripped, pending) if _MAY_BE_STATUS_RE.search(stripped) else None
        if found is not None:
            nodeid, word, reason = found
            if nodeid is not None and word is None:
                pending = (nodeid, lineno)
                last_nodeid = nodeid
                st.saw_test_line = True
                continue
            if nodeid is not None and word is not None:
                _outcome(st, nodeid, word, reason, lineno)
                last_nodeid = nodeid
                if pending is not None and pending[0] == nodeid:
                    pending = None
                continue
        if last_nodeid is None or "'median'" not in stripped:
            continue
        m = _REPR_RE.match(stripped)
        # Only a repr that looks like a benchmark record (has a median) counts as an orphan
        # record; other "Name: {...} ms" log lines are left alone.
        if m and "'median'" in m.group("val"):
            orphan = _Block(
                start=lineno,
                nodeid=last_nodeid,
                repr_fw=m.group("fw"),
                repr_val=m.group("val"),
                repr_line=lineno,
                end=lineno,
            )
            _finish_block(st, orphan)
    if block is not None:
        _truncated(st, block, "record block cut off at end of log (no terminator)")

    _finalize_outcomes(st)
    if not log.records and not st.saw_test_line:
        if strict:
            raise InputError(
                "no 'Performance Test Results' blocks and no pytest test lines (not a pytest perf log?)",
                path=src,
            )
        log.notes.append(f"{src}: no 'Performance Test Results' blocks and no pytest test lines")
    return log


# --------------------------------------------------------------------------- status lines


def _split_nodeid_prefix(text: str) -> tuple[str, str] | None:
    """``nodeid rest`` → (nodeid, rest); brackets in the id may hold spaces (``test[a b]``)."""
    if ".py" not in text or not _NODEID_START_RE.match(text):
        return None
    depth = 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch.isspace() and depth <= 0:
            return text[:i], text[i:].strip()
    return text, ""


def _status_line(stripped: str, pending: tuple[str, int] | None) -> tuple[str | None, str | None, str] | None:
    """Recognize one pytest status line; returns (nodeid, word, reason) or None."""
    if not stripped or _MAY_BE_STATUS_RE.search(stripped) is None:
        return None
    return _status_line_patterns(stripped, pending)


def _status_line_patterns(
    stripped: str, pending: tuple[str, int] | None
) -> tuple[str | None, str | None, str] | None:
    """:func:`_status_line` without its prefilter: every pattern tried (the tests check that a line
    the prefilter passes over is one this returns None for)."""
    if not stripped:
        return None
    m = _LONE_WORD_RE.match(stripped)
    if m:
        if pending is None:
            return None
        return pending[0], m.group("word"), m.group("reason") or ""
    m = _WORD_FIRST_RE.match(stripped)
    if m:
        split = _split_nodeid_prefix(m.group("rest"))
        if split is not None:
            nodeid, rest = split
            reason = rest[2:].strip() if rest.startswith("- ") else rest
            return nodeid, m.group("word"), reason
    split = _split_nodeid_prefix(stripped)
    if split is not None and "::" in split[0]:
        nodeid, rest = split
        if not rest:
            return nodeid, None, ""
        m = _LONE_WORD_RE.match(rest)
        if m:
            return nodeid, m.group("word"), m.group("reason") or ""
        m = _TAIL_WORD_RE.search(rest)
        if m:
            return nodeid, m.group("word"), ""
        return nodeid, None, ""  # -s: test output follows the nodeid, the word comes later
    if pending is not None:
        m = _TAIL_WORD_RE.search(" " + stripped)
        if m:
            return pending[0], m.group("word"), ""
    return None


def _outcome(st: _State, nodeid: str, word: str, reason: str, lineno: int) -> None:
    st.saw_test_line = True
    outcome = _OUTCOME_OF[word]
    prev = st.outcomes.get(nodeid)
    if prev is None or _RANK[outcome] > _RANK[prev[0]] or (outcome == prev[0] and reason and not prev[1]):
        st.outcomes[nodeid] = (outcome, reason or (prev[1] if prev else ""), lineno)


def _finalize_outcomes(st: _State) -> None:
    with_record = {r.nodeid for r in st.log.records}
    for nodeid, (outcome, reason, lineno) in st.outcomes.items():
        if outcome == "passed":
            if nodeid in with_record:
                continue
            outcome, reason = (
                "passed_no_record",
                reason or "passed without a 'Performance Test Results' block",
            )
        elif nodeid in with_record and outcome == "failed":
            # pytest's FAILED word means the call itself failed (a teardown failure reads ERROR), so a
            # record beside it cannot be trusted: drop it and let the config become an NA row. Keeping
            # it would let E report DONE over a failed config.
            st.log.records = [r for r in st.log.records if r.nodeid != nodeid]
            reason = reason or "pytest reported FAILED for a test that printed a record"
            st.log.notes.append(
                f"{st.path}:{lineno}: {nodeid} has a record but pytest reported FAILED; record dropped"
            )
        elif nodeid in with_record:
            # e.g. PASSED at call, ERROR at teardown: the record stands (its numbers were
            # measured); the later failure is worth a note, not an NA row.
            st.log.notes.append(
                f"{st.path}:{lineno}: {nodeid} has a record but pytest reported {outcome.upper()} afterwards"
            )
            continue
        st.log.outcomes.append(_test_outcome(nodeid, outcome, reason, st, lineno))


def _test_outcome(nodeid: str, outcome: str, reason: str, st: _State, lineno: int) -> TestOutcome:
    func, token, params = split_nodeid(nodeid, st.extra_tokens)
    return TestOutcome(
        nodeid=nodeid,
        func_key=func,
        backend_token=token,
        params=params,
        outcome=outcome,  # type: ignore[arg-type]
        reason=reason,
        source=SourceRef(st.path, lineno),
    )


# --------------------------------------------------------------------------- blocks


def _block_line(block: _Block, stripped: str, lineno: int) -> None:
    if stripped.startswith("record_json: "):
        block.json_text, block.json_line = stripped[len("record_json: ") :], lineno
    elif stripped.startswith("nodeid: "):
        block.nodeid = unescape_counted(stripped[len("nodeid: ") :])
    elif stripped.startswith("framework: "):
        block.framework = unescape_counted(stripped[len("framework: ") :])
    elif stripped.startswith("params: "):
        block.params = unescape_counted(stripped[len("params: ") :])
    elif _PHASE_RE.match(stripped):
        pass  # derived from the record; informational only
    else:
        m = _REPR_RE.match(stripped)
        if m and block.repr_val is None:
            block.repr_fw, block.repr_val, block.repr_line = m.group("fw"), m.group("val"), lineno
        # anything else is interleaved output (stderr, logging): ignored


def _truncated(st: _State, block: _Block, message: str) -> None:
    st.log.truncated = True
    st.problem(message, block.start, key=block.nodeid)
    # Non-strict: a block whose record_json line arrived whole is still trustworthy (JSON is
    # self-delimiting); a block cut before it yields nothing.
    if block.json_text is not None:
        _finish_block(st, block)


def _finish_block(st: _State, block: _Block) -> None:
    payload = _payload(st, block)
    if payload is None:
        return
    nodeid, framework, value = payload
    _add_record(st, nodeid, framework, value, block.json_line or block.repr_line or block.start, block.start)


def _add_record(
    st: _State, nodeid: str, framework: str, value: Mapping[str, Any], line: int | None, start: int | None
) -> None:
    """Validate one ``benchmark[framework]`` dict and append it as a :class:`PerfRecord`."""
    params = record_params(nodeid, framework, st.extra_tokens)
    func_key = nodeid.split("[", 1)[0]
    phases: dict[str, PhaseStats] = {}
    for phase, stats in value.items():
        if not isinstance(stats, Mapping):
            continue
        ps = _phase_stats(st, str(phase), stats, line, nodeid)
        if ps is None:
            if phase != "forward":
                continue  # E compares forward medians; a bad backward phase is only noted
            st.outcomes[nodeid] = ("passed", f"invalid '{phase}' record (see notes)", line or 0)
            return
        phases[str(phase)] = ps
    if not phases:
        st.problem("record has no phase with stats", line, key=nodeid)
        st.outcomes[nodeid] = ("passed", "record has no phase with stats", line or 0)
        return
    record = PerfRecord(
        nodeid=nodeid,
        func_key=func_key,
        framework=framework,
        params=params,
        phases=phases,
        source=SourceRef(st.path, start or 0),
        raw=dict(value),
    )
    # A duplicate is the same config of the same framework; one log holding several frameworks
    # (candidate and baseline run together) is legal: consumers select records by framework.
    key = (framework, *record.row_key)
    if key in st.rows:
        st.problem(
            f"duplicate config {params!r} for {framework!r} (first at line {st.rows[key]})",
            start,
            key=f"{func_key}[{params}]",
        )
        st.log.records = [r for r in st.log.records if (r.framework, *r.row_key) != key]  # the later run wins
    st.rows[key] = start or 0
    st.log.records.append(record)


def _payload(st: _State, block: _Block) -> tuple[str, str, Mapping[str, Any]] | None:
    """(nodeid, framework, benchmark[framework]) from record_json, else from the repr line; a record
    nested deeper than :data:`MAX_RECORD_DEPTH` or holding a lone surrogate is a problem at its line
    (the history, E's report and the caches walk and encode every value: they would crash on it)."""
    got = _payload_any(st, block)
    if got is None:
        return None
    from cutile_workbench.infra.jsonutil import unsafe_value

    why = unsafe_value(list(got), MAX_RECORD_DEPTH)
    if why is not None:
        from_json = block.json_text is not None
        st.problem(
            f"{'record_json' if from_json else 'record'} {why}",
            block.json_line if from_json else block.start,
            key="record_json" if from_json else "repr",
        )
        return None
    return got


#: the deepest record accepted (TileGym's are 5-6 levels: benchmark, framework, phase, capture, …)
MAX_RECORD_DEPTH = 32


def _payload_any(st: _State, block: _Block) -> tuple[str, str, Mapping[str, Any]] | None:
    if block.json_text is not None:
        try:
            obj = json.loads(block.json_text)
        except (
            ValueError,
            RecursionError,
        ) as exc:  # ValueError: JSONDecodeError and the 4300-digit int guard
            why = getattr(exc, "msg", None) or ("too deep" if isinstance(exc, RecursionError) else str(exc))
            st.problem(f"record_json is not valid JSON ({why})", block.json_line, key="record_json")
            obj = None
        if obj is not None:
            got = _from_json(st, obj, block)
            if got is not None:
                return got
    if block.repr_val is not None:
        return _from_repr(st, block)
    if block.json_text is None:
        st.problem(
            "record block has neither a record_json line nor a 'Framework: {...} ms' line",
            block.start,
            key=block.nodeid,
        )
    return None


def _from_json(st: _State, obj: Any, block: _Block) -> tuple[str, str, Mapping[str, Any]] | None:
    line = block.json_line
    if not isinstance(obj, dict):
        st.problem("record_json is not a JSON object", line, key="record_json")
        return None
    nodeid, framework, bench = obj.get("nodeid"), obj.get("framework"), obj.get("benchmark")
    for key, val, typ in (("nodeid", nodeid, str), ("framework", framework, str), ("benchmark", bench, dict)):
        if not isinstance(val, typ):
            st.problem(
                f"record_json field '{key}' must be {typ.__name__}, got {type(val).__name__}", line, key=key
            )
            return None
    assert isinstance(bench, dict) and isinstance(framework, str) and isinstance(nodeid, str)
    value = bench.get(framework)
    if not isinstance(value, dict):
        st.problem(
            f"record_json benchmark has no dict for framework {framework!r}",
            line,
            key=f"benchmark.{framework}",
        )
        return None
    return nodeid, framework, value


class _NanInf(ast.NodeTransformer):
    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in ("nan", "inf"):
            return ast.copy_location(ast.Constant(float(node.id)), node)
        return node


def literal_eval_repr(text: str) -> Any:
    """``ast.literal_eval`` that also reads the bare ``nan``/``inf`` that ``repr(float)`` writes.

    Raises ValueError/SyntaxError/TypeError/MemoryError/RecursionError like literal_eval.
    """
    tree = ast.parse(text.strip(), mode="eval")
    return ast.literal_eval(_NanInf().visit(tree))


def _from_repr(st: _State, block: _Block) -> tuple[str, str, Mapping[str, Any]] | None:
    line = block.repr_line
    text = block.repr_val or ""
    if len(text) > _MAX_REPR_CHARS:
        st.problem("repr record too long", line)
        return None
    try:
        value = literal_eval_repr(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        st.problem("'Framework: {...} ms' line is not a Python literal", line, key="repr")
        return None
    if not isinstance(value, dict):
        st.problem("'Framework: {...} ms' value is not a dict", line, key="repr")
        return None
    nodeid = block.nodeid
    if not nodeid:
        st.problem("record block has no nodeid line", block.start, key="nodeid")
        return None
    framework = block.framework or (block.repr_fw or "").strip().lower()
    return nodeid, framework, value


def _number(
    st: _State, stats: Mapping[str, Any], key: str, where: str, line: int | None, *, integer: bool = False
) -> float | int | None:
    if key not in stats or stats[key] is None:
        return None
    val = stats[key]
    ok = isinstance(val, int) if integer else isinstance(val, (int, float))
    if isinstance(val, bool) or not ok:
        kind = "an integer" if integer else "a number"
        st.problem(
            f"'{key}' must be {kind}, got {type(val).__name__} {_short_repr(val)}", line, key=f"{where}.{key}"
        )
        return None
    if not in_physical_range(val, integer=integer):
        hi = MAX_COUNT if integer else MAX_VALUE
        st.problem(
            f"'{key}' must be a finite, non-negative {'integer' if integer else 'number'} up to {hi:g}, "
            f"got {_short_repr(val)}",
            line,
            key=f"{where}.{key}",
        )
        return None
    number: float | int = val
    return number


#: every number in a record is a physical quantity (a time in ms or µs, a count, a percentage, MB):
#: finite, non-negative and bounded, so that float conversion, SQLite's INTEGER and reports all hold it
MAX_COUNT = 2**53
MAX_VALUE = 1e15


def in_physical_range(val: int | float, *, integer: bool = False) -> bool:
    """``val`` is finite, >= 0 and <= the bound of its kind (compared exactly: a 400-digit int is just too big)."""
    if integer:
        return isinstance(val, int) and 0 <= val <= MAX_COUNT
    return (isinstance(val, int) or math.isfinite(val)) and 0 <= val <= MAX_VALUE


def _short_repr(val: object) -> str:
    if isinstance(val, int) and not isinstance(val, bool) and abs(val) > 10**30:
        return f"an integer of {len(str(abs(val))) if abs(val) < 10**4000 else 'over 4000'} digits"
    return f"{val!r:.40}"


def _phase_stats(
    st: _State, phase: str, stats: Mapping[str, Any], line: int | None, nodeid: str
) -> PhaseStats | None:
    where = f"{nodeid} {phase}"
    if "median" not in stats:
        st.problem("record has no 'median'", line, key=f"{where}.median")
        return None
    median = _number(st, stats, "median", where, line)
    if median is None:
        if stats.get("median") is None:
            st.problem("'median' is null", line, key=f"{where}.median")
        return None
    if median <= 0:
        st.problem(f"median must be a finite positive time, got {median!r}", line, key=f"{where}.median")
        return None

    def num(key: str) -> float | None:
        v = _number(st, stats, key, where, line)
        return float(v) if v is not None else None

    def integer(key: str) -> int | None:
        v = _number(st, stats, key, where, line, integer=True)
        return int(v) if v is not None else None

    kernel_name = stats.get("kernel_name")
    if kernel_name is not None and not isinstance(kernel_name, str):
        st.problem(
            f"'kernel_name' must be a string, got {type(kernel_name).__name__}",
            line,
            key=f"{where}.kernel_name",
        )
        kernel_name = None
    verdict, reason = _capture_check(st, stats, where, line)
    return PhaseStats(
        median_ms=float(median),
        mean_ms=num("mean"),
        std_ms=num("std"),
        rel_std_pct=num("rel_std"),
        min_ms=num("min"),
        max_ms=num("max"),
        nrep=integer("nrep"),
        peak_mem_mb=num("peak_mem_mb"),
        kernel_name=kernel_name,
        kernel_times=_kernel_times(st, stats, where, line),
        samples_ms=_samples(st, stats, where, line),
        launches_per_call=integer("launches_per_call"),
        harness=_harness(st, stats, where, line),
        capture_verdict=verdict,
        capture_reason=reason,
        capture_window=_capture_window(stats),
        clocks=_clocks(st, stats, where, line),
        capture_source=stats["capture_source"] if isinstance(stats.get("capture_source"), str) else None,
    )


def _capture_window(stats: Mapping[str, Any]) -> str | None:
    capture = stats.get("capture")
    window = capture.get("window") if isinstance(capture, Mapping) else None
    return window if isinstance(window, str) and window else None


def _clocks(st: _State, stats: Mapping[str, Any], where: str, line: int | None) -> ClockExposure | None:
    """The record's NVML clock readings (``clock_exposure``); a malformed dict is a problem, not a guess."""
    if stats.get("clocks") is None:
        return None
    try:
        return exposure_from_dict(stats["clocks"])
    except ValueError as exc:
        st.problem(str(exc), line, key=f"{where}.clocks")
        return ClockExposure(unavailable=f"the record's clocks are malformed ({exc})")


def _harness(st: _State, stats: Mapping[str, Any], where: str, line: int | None) -> str:
    """Who measured: our harness marks its records (``harness``; older ones only ``capture_source``)."""
    h = stats.get("harness")
    if h is not None and not isinstance(h, str):
        st.problem(
            f"'harness' must be a string, got {type(h).__name__} {_short_repr(h)}",
            line,
            key=f"{where}.harness",
        )
        h = None
    if isinstance(h, str) and h:
        return h
    return "workbench" if "capture_source" in stats else "tilegym"


def _capture_check(
    st: _State, stats: Mapping[str, Any], where: str, line: int | None
) -> tuple[str | None, str]:
    check = stats.get("capture_check")
    if check is None:
        return None, ""
    verdict = check.get("verdict") if isinstance(check, Mapping) else None
    if verdict not in ("ok", "suspect"):
        st.problem(
            "'capture_check' must be a dict with verdict 'ok' or 'suspect'",
            line,
            key=f"{where}.capture_check",
        )
        return "suspect", "capture_check is malformed: the self-check cannot vouch for this median"
    reason = check.get("reason") if isinstance(check.get("reason"), str) else ""
    return str(verdict), reason


def _kernel_times(
    st: _State, stats: Mapping[str, Any], where: str, line: int | None
) -> tuple[KernelTime, ...]:
    kts = stats.get("kernel_times")
    if kts is None:
        return ()
    if not isinstance(kts, list):
        st.problem(
            f"'kernel_times' must be a list, got {type(kts).__name__}", line, key=f"{where}.kernel_times"
        )
        return ()
    out: list[KernelTime] = []
    for i, row in enumerate(kts):
        key = f"{where}.kernel_times[{i}]"
        if not isinstance(row, Mapping):
            st.problem("kernel_times entry must be a dict", line, key=key)
            return ()
        name, count = row.get("name"), row.get("count")
        self_us, total_us = row.get("self_time_us"), row.get("total_time_us")
        if (
            not isinstance(name, str)
            or isinstance(count, bool)
            or not isinstance(count, int)
            or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in (self_us, total_us))
            or not in_physical_range(count, integer=True)
            or not all(in_physical_range(v) for v in (self_us, total_us))  # type: ignore[arg-type]
        ):
            st.problem(
                "kernel_times entry needs name (str), self_time_us/total_time_us (finite non-negative "
                "numbers), count (non-negative int)",
                line,
                key=key,
            )
            return ()
        assert isinstance(self_us, (int, float)) and isinstance(total_us, (int, float))
        out.append(
            KernelTime(name=name, self_time_us=float(self_us), total_time_us=float(total_us), count=count)
        )
    return tuple(out)


_JUST_FLOAT = {float}


def _samples(st: _State, stats: Mapping[str, Any], where: str, line: int | None) -> tuple[float, ...] | None:
    samples = stats.get("samples")
    if samples is None:
        return None
    # The common case at C speed: only floats (exact types: bool is refused), whose sum is finite (so
    # none is inf or NaN, and min/max compare them all), within [0, MAX_VALUE]. Anything else takes
    # the exact check below (an overflowing sum of finite values included), so both give one answer.
    if (
        type(samples) is list
        and samples
        and set(map(type, samples)) == _JUST_FLOAT
        and math.isfinite(sum(samples))
        and min(samples) >= 0
        and max(samples) <= MAX_VALUE
    ):
        return tuple(samples)
    return _samples_exact(st, samples, where, line)


def _samples_exact(st: _State, samples: Any, where: str, line: int | None) -> tuple[float, ...] | None:
    """:func:`_samples`' rule item by item (its fast path must give the same answer: tested)."""
    # exact type checks (bool is an int subclass and is refused); map() keeps long lists cheap
    # in_physical_range compares exactly, so a 400-digit integer is refused before float() could overflow
    if isinstance(samples, list) and all(
        (type(v) is float or type(v) is int) and in_physical_range(v) for v in samples
    ):
        return tuple(map(float, samples))
    st.problem(
        f"'samples' must be a list of finite non-negative numbers up to {MAX_VALUE:g} (ms)",
        line,
        key=f"{where}.samples",
    )
    return None
