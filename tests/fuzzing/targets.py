"""The fuzz targets (every parser/loader of user files) and the one rule every case must obey.

Contract:
- :data:`TARGETS` maps a target name to a :class:`Target`: its real seed files (recorded H200
  sessions under ``cutile_workbench/profiles/*/session/*`` and real fixtures under ``tests/``), how mutated bytes are
  put on disk (``encode``, e.g. re-gzip) and ``call(path)``, which runs the parser on that file.
- :func:`check_case` runs one call and enforces the rule: the call returns normally, or raises the
  error kind the target's input class calls for (``Target.expected``: ``InputError`` for every
  parser of a user file — a damaged file is bad input, exit 2 — never another
  :class:`cutile_workbench.errors.WorkbenchError` kind) whose message names the file and a line or key
  (whole-file rejections, such as an empty file or corrupt gzip stream, need only name the file;
  they are listed in :data:`WHOLE_FILE_REJECTIONS`). Any other exception, or a WorkbenchError that
  does not say where, raises :class:`RuleViolation` carrying the traceback and the reproducer.
- :func:`run_mutation_case` = seeded mutation of one seed file + :func:`check_case`; used by the
  hypothesis tests, the slow ≥ 10,000-case tests and ``bench/fuzz_report.py`` alike.
"""

from __future__ import annotations

import gzip
import random
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cutile_workbench.errors import InputError, WorkbenchError

from .mutator import mutate
from .structured import mutate_history_cells, mutate_json, mutate_keymap, mutate_record_json

REPO = Path(__file__).resolve().parents[2]
SESSIONS = sorted(p for p in (REPO / "cutile_workbench" / "profiles").glob("*/session/*") if p.is_dir())
SEEDS_DIR = Path(__file__).resolve().parent / "seeds"

# Rejections that concern the whole file, so naming the file is the most precise location there is.
WHOLE_FILE_REJECTIONS = re.compile(
    r"empty|corrupt gzip|nested too deeply|binary|NUL byte|not UTF-8|invalid UTF-8 at byte|"
    r"no 'entry @|MiB|not a pytest perf log|could not be parsed|not a regular file|unsafe XML|"
    r"no 'Performance Test Results'|truncated IR|unsupported version|top level must be|"
    r"can't decode byte|bytes, over the|not a SQLite file|not a cutile-workbench history store|"
    r"newer than this cutile-workbench",
)


@dataclass(frozen=True)
class KnownBug:
    """A crash found by this fuzzer in a module owned by someone else, tracked by a strict xfail test.

    While the bug is open, matching cases count as ``KNOWN_BUG:<ident>`` (reported by
    ``bench/fuzz_report.py``) instead of failing every fuzz run; the strict xfail reproducer in
    ``tests/fuzz/test_fuzz_known_bugs.py`` turns into a failure the moment the bug is fixed, which is
    the signal to delete the entry here.
    """

    ident: str
    targets: frozenset[str]
    exc_type: str
    message: re.Pattern[str]


KNOWN_BUGS: tuple[KnownBug, ...] = ()  # all found bugs fixed; see tests/fuzz/test_fuzz_known_bugs.py


def known_bug(target: str, exc: BaseException) -> KnownBug | None:
    for bug in KNOWN_BUGS:
        if target in bug.targets and type(exc).__name__ == bug.exc_type and bug.message.search(str(exc)):
            return bug
    return None


class RuleViolation(AssertionError):
    """A case broke the rule: an untyped exception, or a typed one that does not say where."""


@dataclass(frozen=True)
class Target:
    name: str
    seeds: tuple[Path, ...]
    call: Callable[[Path], Any]
    suffix: str = ".txt"
    encode: Callable[[bytes], bytes] = field(default=lambda b: b)
    #: the error kind(s) a rejection of this target's input must have (a damaged user file: InputError)
    expected: tuple[type[WorkbenchError], ...] = (InputError,)
    decode_seed: Callable[[bytes], bytes] = field(default=lambda b: b)
    #: ``(bytes, seed) -> (bytes, op names)``: the byte mutator, or a structure-aware one (``structured.py``)
    mutator: Callable[[bytes, int], tuple[bytes, tuple[str, ...]]] = field(default=mutate)


def _text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "surrogateescape")


# ---------------------------------------------------------------------------- call adapters
# Imports are local so that collecting the fuzz tests costs nothing when they are deselected.


def _perflog(path: Path) -> Any:
    from cutile_workbench.artifacts.perflog.parser import parse_perf_log

    return parse_perf_log(path)


def _perflog_strict(path: Path) -> Any:
    from cutile_workbench.artifacts.perflog.parser import parse_perf_log

    return parse_perf_log(path, strict=True, extra_tokens=("cutile_rs",))


def _junit(path: Path) -> Any:
    from cutile_workbench.artifacts.perflog.junit import parse_junit_xml

    return parse_junit_xml(path)


def _junit_strict(path: Path) -> Any:
    from cutile_workbench.artifacts.perflog.junit import parse_junit_xml

    return parse_junit_xml(path, strict=True)


def _sanitize(path: Path) -> Any:
    from cutile_workbench.artifacts.perflog.sanitizer import count_validator_lines, sanitize

    text = _text(path)
    # the rc is derived from the bytes so a case is reproducible from its file alone
    rc = (None, 0, 1, 2, 5)[len(text) % 5]
    out = sanitize(text, pytest_rc=rc, source=str(path))
    counts = count_validator_lines(out.validator_log)
    # the sanitizer's own promise (contract §3.7): its validator log never holds a failure word
    if counts.failed:
        raise RuleViolation(f"sanitized validator log still counts {counts.failed} failure line(s)")
    return out


def _analysis(path: Path) -> Any:
    from cutile_workbench.artifacts.analysis import load_analysis

    return load_analysis(path)


def _ir_load(path: Path) -> Any:
    from cutile_workbench.ir.loader import load_ir

    return load_ir(path, role="generated")


def _ir_canon(path: Path) -> Any:
    from cutile_workbench.ir.canon import canonicalize

    canon = canonicalize(_text(path))
    _ = canon.text  # the lazily joined text is part of the API
    for n in (1, 2, 10_000):
        canon.canonical_line_of(n)
    return canon


_IR_REF = REPO / "cutile_workbench/profiles/rms_norm/session/rms_norm/reference/reference.mlir"


def _ir_audit(path: Path) -> Any:
    from cutile_workbench.ir.audit import audit_texts, render_diff_ir_text

    audit = audit_texts(_text(_IR_REF), _text(path))
    render_diff_ir_text(audit)
    return audit


def _ir_diff(path: Path) -> Any:
    from cutile_workbench.ir.diffmodel import diff_lines

    sbs = diff_lines(_text(_IR_REF).split("\n"), _text(path).split("\n"))
    sbs.folded()
    sbs.stats()
    if sbs.rows:
        sbs.spans(len(sbs.rows) - 1)
    return sbs


def _ir_structdiff(path: Path) -> Any:
    from cutile_workbench.ir.structdiff import structural_diff

    text = _text(path)
    d = structural_diff(_text(_IR_REF), text)
    d.stats()
    if d.rows:
        d.spans(len(d.rows) - 1)
    if d.fallback and d.equivalent:
        raise RuleViolation("claims 'equivalent' with unparsed lines")
    same = structural_diff(text, text)  # a text diffed against itself has no changed row
    if same.changed_rows:
        raise RuleViolation(f"self-diff reports {same.changed_rows} changed row(s)")
    return d


def _events(path: Path) -> Any:
    from cutile_workbench.artifacts.events import read_events

    return read_events(path)


def _events_tail(path: Path) -> Any:
    from cutile_workbench.artifacts.events import read_events

    return read_events(path, allow_truncated_tail=True)


def _launches(path: Path) -> Any:
    from cutile_workbench.artifacts.launches_io import load_launch_sets

    return load_launch_sets(path)


def _session_roles(path: Path) -> Any:
    from cutile_workbench.services.timeline import backend_roles

    return backend_roles(path, "matmul")


def _ir_index(path: Path) -> Any:
    """``read_index`` + ``index_file`` on every entry; the case file sits at ``<k>/workbench/ir/index.json``."""
    from cutile_workbench.ir.filing import index_file, read_index

    kernel_dir = path.parents[2]
    configs = read_index(kernel_dir)["configs"]
    for params, sides in configs.items():
        if isinstance(sides, dict):
            for side in ("reference", "candidate"):
                if side in sides:
                    index_file(kernel_dir, sides[side], str(params), side)
    return configs


def _keymap(path: Path) -> Any:
    """``load_keymap`` never raises; each problem must name the file (checked here: it returns normally)."""
    from cutile_workbench.tui.catalog import known_bindings
    from cutile_workbench.tui.keymap import load_keymap

    loaded = load_keymap(path, known=known_bindings)
    for problem in loaded.problems:
        if str(path) not in str(problem):
            raise RuleViolation(f"keymap problem does not name the file: {problem}")
    return loaded


def _history_store(path: Path) -> Any:
    from cutile_workbench.history.query import load_history
    from cutile_workbench.history.store import HistoryStore

    with HistoryStore.open(path, create=False) as store:
        return load_history(store, "matmul", phase=None)


_history_seed: dict[str, bytes] = {}


def _history_store_seed(_unused: bytes) -> bytes:
    """A real history store: the recorded matmul session (H200) imported into a fresh SQLite file."""
    if "b" not in _history_seed:
        import shutil
        import tempfile

        from cutile_workbench.artifacts.layout import KernelPaths
        from cutile_workbench.history.query import open_history

        with tempfile.TemporaryDirectory(prefix="fuzz-history-seed-") as d:
            shutil.copytree(REPO / "cutile_workbench/profiles/tilegym/session/matmul", Path(d) / "matmul")
            store, _report = open_history(
                KernelPaths.under(Path(d), "matmul"), source="out_root", persist=True
            )
            store.close()
            _history_seed["b"] = (Path(d) / "matmul/workbench/history.sqlite").read_bytes()
    return _history_seed["b"]


def _gunzip(b: bytes) -> bytes:
    return gzip.decompress(b)


def _gzip(b: bytes) -> bytes:
    return gzip.compress(b, compresslevel=1, mtime=0)


def _session_files(rel: str) -> tuple[Path, ...]:
    return tuple(p for s in SESSIONS for p in sorted(s.glob(rel)))


_PERF_LOGS = (
    *_session_files("*.txt"),
    *_session_files("reports/agent_logs/*.txt"),
    *sorted((REPO / "tests/fixtures/e/real").glob("**/*.txt")),
    *sorted((REPO / "tests/fixtures/perflog/logs").glob("*.txt")),
)
_IR = (
    *_session_files("reference/*.mlir"),
    *_session_files("generated/*.mlir"),
    *sorted((REPO / "tests/fixtures/ir").glob("*.mlir")),
)
_LAUNCH_JSON = tuple(sorted((REPO / "tests/fixtures/f").glob("*.launches.json")))

TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("perflog", _PERF_LOGS, _perflog),
        Target("perflog_strict", _PERF_LOGS, _perflog_strict),
        Target("junit", tuple(sorted(SEEDS_DIR.glob("*.xml"))), _junit, suffix=".xml"),
        Target("junit_strict", tuple(sorted(SEEDS_DIR.glob("*.xml"))), _junit_strict, suffix=".xml"),
        Target("sanitizer", _PERF_LOGS, _sanitize),
        Target("analysis_json", _session_files("reference/analysis.json"), _analysis, suffix=".json"),
        Target("ir_load", _IR, _ir_load, suffix=".mlir"),
        Target("ir_canon", _IR, _ir_canon, suffix=".mlir"),
        Target("ir_audit", _IR, _ir_audit, suffix=".mlir"),
        Target("ir_diff", _IR, _ir_diff, suffix=".mlir"),
        Target("ir_structdiff", _IR, _ir_structdiff, suffix=".mlir"),
        Target("events", _session_files("workbench/events.jsonl"), _events, suffix=".jsonl"),
        Target("events_tail", _session_files("workbench/events.jsonl"), _events_tail, suffix=".jsonl"),
        Target("launches_json", _LAUNCH_JSON, _launches, suffix=".json"),
        # real recorded gz files are 1-3 MB once inflated: mutate the (small, real) fixture JSON and
        # gzip it, so the gzip path is fuzzed at the same case rate
        Target("launches_gz", _LAUNCH_JSON, _launches, suffix=".json.gz", encode=_gzip),
        # structure-aware (issue 25): JSON type swaps, huge/negative numbers, nesting bombs, cell swaps
        Target("perflog_record_json", _PERF_LOGS, _perflog_strict, mutator=mutate_record_json),
        Target(
            "analysis_json_struct",
            _session_files("reference/analysis.json"),
            _analysis,
            suffix=".json",
            mutator=mutate_json,
        ),
        Target("launches_struct", _LAUNCH_JSON, _launches, suffix=".json", mutator=mutate_json),
        Target(
            "session_json_struct",
            _session_files("workbench/session.json"),
            _session_roles,
            suffix=".json",
            mutator=mutate_json,
        ),
        Target(
            "ir_index_struct",
            _session_files("workbench/ir/index.json"),
            _ir_index,
            suffix="/workbench/ir/index.json",
            mutator=mutate_json,
        ),
        Target(
            "keymap_struct",
            tuple(sorted(SEEDS_DIR.glob("*.toml"))),
            _keymap,
            suffix=".toml",
            mutator=mutate_keymap,
        ),
        Target(
            "history_cells",
            (REPO / "cutile_workbench/profiles/tilegym/session/matmul/baseline_perf_cutile.txt",),
            _history_store,
            suffix=".sqlite",
            decode_seed=_history_store_seed,
            mutator=mutate_history_cells,
        ),
    )
}


@dataclass(frozen=True)
class CaseResult:
    """``outcome`` is "ok" or the WorkbenchError subclass name; ``whole_file`` marks file-level rejections."""

    outcome: str
    message: str = ""
    whole_file: bool = False


def check_case(target: Target, path: Path, reproducer: str, *, tolerate_known: bool = True) -> CaseResult:
    """Run ``target.call(path)`` and enforce the rule (see module docstring).

    ``tolerate_known``: a crash matching :data:`KNOWN_BUGS` returns ``KNOWN_BUG:<ident>``.
    """
    try:
        target.call(path)
    except RuleViolation:
        raise
    except WorkbenchError as err:
        text = str(err)
        if not isinstance(err, target.expected):
            raise RuleViolation(
                f"{reproducer}: {type(err).__name__}, expected "
                f"{' or '.join(t.__name__ for t in target.expected)}: {text!r}"
            ) from err
        if err.path is None or str(path) not in text:
            raise RuleViolation(
                f"{reproducer}: {type(err).__name__} does not name the file: {text!r}"
            ) from err
        has_where = err.line is not None or err.key is not None
        whole = not has_where and bool(WHOLE_FILE_REJECTIONS.search(err.message))
        if not has_where and not whole:
            raise RuleViolation(f"{reproducer}: {type(err).__name__} names no line or key: {text!r}") from err
        return CaseResult(type(err).__name__, err.message[:200], whole)
    except Exception as exc:
        bug = known_bug(target.name, exc) if tolerate_known else None
        if bug is not None:
            return CaseResult(f"KNOWN_BUG:{bug.ident}", str(exc)[:200])
        tb = "".join(traceback.format_exception(exc))
        raise RuleViolation(f"{reproducer}: untyped {type(exc).__name__}: {exc}\n{tb}") from exc
    return CaseResult("ok")


_seed_cache: dict[tuple[str, Path], bytes] = {}


def seed_bytes(target: Target, seed_file: Path) -> bytes:
    key = (target.name, seed_file)
    if key not in _seed_cache:
        _seed_cache[key] = target.decode_seed(seed_file.read_bytes())
    return _seed_cache[key]


def run_mutation_case(target: Target, seed: int, workdir: Path, *, tolerate_known: bool = True) -> CaseResult:
    """Mutate one of ``target``'s seed files with ``seed``, write it under ``workdir``, check it."""
    rng = random.Random(seed)
    seed_file = rng.choice(target.seeds)
    data, ops = target.mutator(seed_bytes(target, seed_file), seed)
    path = workdir / f"case{target.suffix}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(target.encode(data))
    reproducer = (
        f"target={target.name} seed={seed} file={seed_file.relative_to(REPO)} ops={','.join(ops)} "
        f"(tests/fuzzing/mutator.py)"
    )
    return check_case(target, path, reproducer, tolerate_known=tolerate_known)
