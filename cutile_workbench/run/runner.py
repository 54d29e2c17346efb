"""Run a TileGym-convention perf suite as pytest in a child process, isolated from GPU faults.

Contract:
- :func:`run` collects the node ids (``pytest --collect-only -q``), then runs
  ``python -m pytest <target> -k <expr> -sv -p cutile_workbench.run.plugins.perflog --workbench-print-record
  --workbench-events <file>`` in its **own process group**, with our package root on
  ``PYTHONPATH`` so any Python (TileGym's) finds the plugin. It never imports torch or Textual.
- While the child runs, its stdout+stderr (merged, as ``2>&1 | tee`` would) are teed to a live log
  under ``<kernel>/workbench/runs/`` and the events file is tailed; every event is handed to
  ``on_event`` **in order, from one dispatcher thread**, so a slow callback never blocks the child
  or delays the hang watchdog. ``run`` returns only after the last callback returned.
- Fault isolation: a test that makes no progress (no event, no test start/outcome line) for
  ``per_test_timeout_s`` is killed (SIGTERM to the group, SIGKILL after ``kill_grace_s``); a child
  that dies on its own (SIGSEGV, SIGABRT, ``os._exit``, an illegal-address abort) is noticed. The
  running test is marked failed with the reason, and the run **resumes** with the remaining node
  ids passed explicitly (never ``--deselect``: it matches by prefix, so ``[a-1]`` would also drop
  ``[a-10]``). An attempt that neither starts nor finishes a test ends the run (no resume loop).
  ``cancel`` kills the child the same way and stops: the running and remaining ids are ``not_run``.
- Sticky CUDA errors (:data:`STICKY_CUDA_ERROR`: illegal address, launch failure, device assert):
  with torch an illegal access does not kill the process, it raises, and every later CUDA call in
  that process fails too. The test that hit it stays failed with its own reason; the child is
  restarted after it, and later tests that failed with the same error in the poisoned process are
  run again in the fresh one.
- Synthetic events: for a killed/crashed test the runner adds ``test_failed`` + ``test_finish``
  (``outcome: failed``) with ``"source": "runner"``, plus ``runner_attempt_end`` /
  ``runner_resume`` / ``runner_finish``; consumers see faults through the same stream.
- Raw log of a resumed run (``RunResult.raw_log_text``), still a coherent pytest log: attempt 1's
  output verbatim (its header is the log header), then per fault::

      FAILED <nodeid> - workbench: <reason>
      ===== workbench resume: attempt N, K of M node ids left (<how attempt N-1 ended>) =====

  then the next attempt's own pytest output (a fresh ``test session starts`` header and summary),
  and finally one ``===== workbench summary: P passed, F failed, S skipped, R not run in A
  attempt(s) (T s) =====`` line. The ``FAILED`` line has pytest's short-summary form, so a
  sanitizer that drops ``FAILED`` lines and failure sections drops it too; the banners contain no
  ``PASSED``/``FAILED``/``SKIPPED`` word, so validator counts are not skewed by them.
- The live log is capped at ``max_log_bytes``: beyond it the middle is dropped and replaced by one
  ``[workbench: N bytes of child output omitted ...]`` line; the head and the last quarter are kept,
  and the pipe is always drained, so a chatty child is never blocked.
- This module is the child process alone: collection, the run, its attempts and watchdog. The spec,
  the result and the child's command lines are :mod:`cutile_workbench.run.spec`'s; the results are
  laid into the artifact layout by :mod:`cutile_workbench.run.results` (``write_results``); the GPU
  a child sees is :mod:`cutile_workbench.gpu.visible`'s.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cutile_workbench.artifacts.events import Event, read_events
from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.artifacts.testids import split_nodeid
from cutile_workbench.errors import InputError
from cutile_workbench.infra.atomicio import ensure_inside as _ensure_inside
from cutile_workbench.model import LaunchSet
from cutile_workbench.proc.collect import parse_collect_output
from cutile_workbench.proc.group import kill_group, reap_group
from cutile_workbench.run.spec import (
    Attempt,
    RunResult,
    RunSpec,
    check_kernel_dir,
    child_env,
    collect_argv,
    count_outcomes,
    run_argv,
)

#: CUDA errors that leave the process's context unusable ("sticky"): every later CUDA call in that
#: process fails with the same error, so the child is restarted after the test that hit one.
STICKY_CUDA_ERROR = re.compile(
    r"illegal memory access|illegal address|unspecified launch failure|device-side assert|"
    r"misaligned address|illegal instruction|CUDA_ERROR_(?:ILLEGAL_ADDRESS|LAUNCH_FAILED|ASSERT|"
    r"MISALIGNED_ADDRESS|ILLEGAL_INSTRUCTION|HARDWARE_STACK_ERROR)|cudaErrorIllegalAddress|"
    r"cudaErrorLaunchFailure|cudaErrorAssert"
)

#: pytest's verbose outcome words, as they end a test's line in ``-v`` output
_OUTCOME_WORDS = ("PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL", "XPASS")
_POLL_S = 0.05
#: the watchdog's clock: progress stamps, the hang, startup and total deadlines, attempt durations. Read
#: at each call (a module attribute, not a bound default), so a test can replace it and make a hang its
#: child signalled overdue at once: the outcome then follows from the events, never from the box's speed.
_clock: Callable[[], float] = time.monotonic


# --------------------------------------------------------------------------- collection


def collect(
    spec: RunSpec, *, timeout_s: float | None = None, cancel: threading.Event | None = None
) -> tuple[int, list[str], str]:
    """Run the collection child; returns ``(pytest rc, node ids, output)``. Never raises on rc.

    rc is 124 when it was killed at ``timeout_s`` (default ``startup_timeout_s``), 130 when
    ``cancel`` was set. Output goes to an anonymous temp file (no pipe to fill up while we poll).
    """
    limit = timeout_s if timeout_s is not None else spec.startup_timeout_s
    with tempfile.TemporaryFile() as buf:
        try:
            proc = subprocess.Popen(
                collect_argv(spec),
                cwd=spec.cwd,
                env=child_env(spec),
                stdin=subprocess.DEVNULL,
                stdout=buf,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise InputError(
                f"cannot start {spec.python!r} in {spec.cwd}: {exc.strerror or exc}", key="python"
            ) from None
        deadline = _clock() + limit
        rc: int | None = None
        extra = ""
        try:
            while rc is None:
                try:
                    rc = proc.wait(timeout=_POLL_S * 2)
                except subprocess.TimeoutExpired:
                    if cancel is not None and cancel.is_set():
                        kill_group(proc, 1.0)
                        rc, extra = 130, "\n[workbench: collection cancelled]\n"
                    elif _clock() > deadline:
                        kill_group(proc, 1.0)
                        rc, extra = 124, f"\n[workbench: collection killed after {limit:.1f}s]\n"
        except BaseException:  # Ctrl-C: the child's own session would outlive us
            kill_group(proc, 1.0)
            raise
        reap_group(proc.pid)  # stray group members
        buf.seek(0)
        text = buf.read().decode("utf-8", errors="replace") + extra
    return rc, ([] if extra else parse_collect_output(text)), text


# --------------------------------------------------------------------------- live log


class _LogSink:
    """Tees child output to a file, capped: head, one omission line, then the tail (see module doc)."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max(1024, max_bytes)
        self.tail_keep = self.max_bytes // 4
        self.head_limit = self.max_bytes - self.tail_keep
        self._fh = open(path, "wb")  # closed in close()
        self._written = 0
        self._omitted = 0
        self._tail = bytearray()
        self._lock = threading.Lock()
        self.last_byte = b"\n"

    def write(self, data: bytes) -> None:
        if not data:
            return
        with self._lock:
            self.last_byte = data[-1:]
            room = self.head_limit - self._written
            if room > 0:
                head, data = data[:room], data[room:]
                self._fh.write(head)
                self._fh.flush()
                self._written += len(head)
            if data:
                self._tail += data
                if len(self._tail) > 2 * self.tail_keep:
                    cut = len(self._tail) - self.tail_keep
                    self._omitted += cut
                    del self._tail[:cut]

    def write_line(self, text: str) -> None:
        prefix = b"" if self.last_byte == b"\n" else b"\n"
        self.write(prefix + text.encode("utf-8") + b"\n")

    def close(self) -> None:
        with self._lock:
            if len(self._tail) > self.tail_keep and self._omitted + self._written >= self.head_limit:
                cut = len(self._tail) - self.tail_keep
                self._omitted += cut
                del self._tail[:cut]
            if self._tail:
                if self._omitted:
                    self._fh.write(
                        f"\n[workbench: {self._omitted} bytes of child output omitted here "
                        f"(log cap {self.max_bytes} bytes)]\n".encode()
                    )
                self._fh.write(bytes(self._tail))
                self._tail.clear()
            self._fh.close()


# --------------------------------------------------------------------------- attempt state


@dataclass
class _State:
    """Mutable bookkeeping shared by the monitor loop (single writer) and the run loop."""

    expected: list[str]
    outcomes: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    not_run: dict[str, str] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # per attempt
    current: str | None = None
    saw_event_test_start: bool = False
    session_finished: int | None = None
    poisoned_by: str | None = None  # a test whose failure left a sticky CUDA error in this process
    poison_done: bool = False  # ... and that test has finished (teardown included)
    casualties: set[str] = field(default_factory=set)  # later tests failed by that sticky error: rerun
    progress_at: float = 0.0
    started_tests: int = 0
    finished_tests: int = 0

    def remaining(self) -> list[str]:
        done = set(self.outcomes) | set(self.failed) | set(self.not_run)
        return [n for n in self.expected if n not in done]


_EXC_HEADER = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Failure|Failed|Exit|Interrupt|Timeout)\b")


def _failure_reason(longrepr: str) -> str:
    """One line out of a pytest longrepr: the last exception header among the ``E   ...`` lines.

    torch's CUDA errors span several ``E`` lines (``RuntimeError: CUDA error: an illegal memory
    access was encountered`` then hints ending in ``Compile with TORCH_USE_CUDA_DSA ...``), so the
    header, not the last line, is the reason; without a header, the first ``E`` line (an assert).
    """
    lines = [ln.rstrip() for ln in longrepr.splitlines() if ln.strip()]
    e_lines = [ln.lstrip()[1:].strip() for ln in lines if ln.lstrip().startswith("E ")]
    headers = [ln for ln in e_lines if _EXC_HEADER.match(ln)]
    if headers:
        return headers[-1][:500]
    if e_lines:
        return e_lines[0][:500]
    return (lines[-1].strip() if lines else "failed")[:500]


def _error_lines(longrepr: str) -> str:
    """The exception lines of a longrepr (``E   ...``), else its last lines; never the quoted source,
    which may mention an error the test merely *could* raise."""
    lines = longrepr.splitlines()
    errs = [ln for ln in lines if ln.lstrip().startswith("E ")]
    return "\n".join(errs or lines[-3:])


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def _describe_exit(rc: int) -> str:
    if rc < 0:
        return f"killed by {_signal_name(-rc)} (signal {-rc})"
    if rc > 128 and rc - 128 < 65:
        return f"exited with status {rc} (128+{_signal_name(rc - 128)}: abort/_exit) without a pytest summary"
    return f"exited with status {rc} without a pytest summary"


class _StdoutTracker:
    """Fallback test tracking from ``-v`` output: ``<nodeid> `` starts a test, an outcome word ends it.

    Used only while the events stream has shown no ``test_start`` in this attempt (plugin absent or
    its write lost in a crash), so a fault is still attributed to the right node id.
    """

    def __init__(self, expected: Iterable[str]) -> None:
        self.ids = set(expected)
        self.prefixes = {n.split("::", 1)[0] for n in self.ids}
        self._buf = b""
        self.current: str | None = None
        self.started: set[str] = set()
        self.finished: dict[str, str] = {}
        self.changed_at: float | None = None

    def feed(self, data: bytes) -> None:
        self._buf += data
        *lines, self._buf = self._buf.split(b"\n")
        for raw in lines:
            self._line(raw.decode("utf-8", errors="replace"))
        if self._buf and len(self._buf) < 65536:
            # "<nodeid> " (and "PASSED" after it) stay on an open line until the next test's
            # newline: look at the open line now, not only when it is complete.
            self._line(self._buf.decode("utf-8", errors="replace"))
        elif len(self._buf) >= 65536:
            self._buf = b""

    def _start_from(self, line: str) -> bool:
        if "::" not in line or line.split("::", 1)[0] not in self.prefixes:
            return False
        for i in [i for i, ch in enumerate(line) if ch == " "] + [len(line)]:
            cand = line[:i]
            if cand in self.ids:
                if cand not in self.started:  # a complete line is seen again after its open part
                    self.started.add(cand)
                    self.current = cand
                    self.changed_at = _clock()
                return True
        return False

    def _line(self, line: str) -> None:
        self._start_from(line)
        if self.current is not None:
            word = line.rstrip().rsplit(" ", 1)[-1] if line.strip() else ""
            if word in _OUTCOME_WORDS:
                outcome = {
                    "PASSED": "passed",
                    "XPASS": "passed",
                    "SKIPPED": "skipped",
                    "XFAIL": "skipped",
                }.get(word, "failed")
                self.finished[self.current] = outcome
                self.current = None
                self.changed_at = _clock()


# --------------------------------------------------------------------------- the run


def run(
    spec: RunSpec,
    out: KernelPaths,
    *,
    on_event: Callable[[Event], None] | None = None,
    cancel: threading.Event | None = None,
) -> RunResult:
    """Collect, run (resuming after faults), and return the result; see the module contract.

    With ``spec.compile_cache`` the cache is counted before and after: ``RunResult.compile_cache``."""
    if not spec.compile_cache:
        return _run(spec, out, on_event=on_event, cancel=cancel)
    from cutile_workbench.run import compile_cache

    compile_cache.prepare(spec.compile_cache)
    before = compile_cache.census(spec.compile_cache)
    result = _run(spec, out, on_event=on_event, cancel=cancel)
    return replace(
        result,
        compile_cache=compile_cache.split(
            spec.compile_cache, before, compile_cache.census(spec.compile_cache)
        ),
    )


def _run(
    spec: RunSpec,
    out: KernelPaths,
    *,
    on_event: Callable[[Event], None] | None = None,
    cancel: threading.Event | None = None,
) -> RunResult:
    check_kernel_dir(out)
    started_at = time.time()
    t0 = _clock()
    runs_dir = out.workbench_dir / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    _ensure_inside(runs_dir, out.root)
    for stale in runs_dir.glob(f"{spec.role}.*"):
        with contextlib.suppress(OSError):
            stale.unlink()
    sink = _LogSink(runs_dir / f"{spec.role}.raw.log", spec.max_log_bytes)
    dispatcher = _Dispatcher(on_event)
    attempts: list[Attempt] = []
    state = _State(expected=[])
    cancelled = False
    try:
        rc_c, ids, collect_text = collect(spec, cancel=cancel)
        if rc_c == 130:
            sink.write(collect_text.encode("utf-8"))
            state.notes.append("cancelled during collection")
            return _result(spec, 2, sink, state, attempts, (), started_at, t0, collect_text, True, dispatcher)
        if spec.backend_token is not None:
            ids = [n for n in ids if split_nodeid(n)[1] == spec.backend_token]
        if not ids:
            # Nothing selected or collection broke: the collection output *is* the log.
            sink.write(collect_text.encode("utf-8"))
            rc = rc_c if rc_c not in (0,) else 5
            note = "collection failed" if rc_c not in (0, 5) else "no test matched the selection"
            state.notes.append(f"{note} (pytest rc {rc_c})")
            return _result(
                spec, rc, sink, state, attempts, (), started_at, t0, collect_text, False, dispatcher
            )
        state.expected = ids
        total_deadline = t0 + spec.total_timeout_s if spec.total_timeout_s else None
        # The canonical ``<target> -k`` form unless the exact-token filter dropped some -k matches.
        explicit: list[str] | None = None
        if spec.backend_token is not None and parse_collect_output(collect_text) != ids:
            explicit = ids
        index = 0
        while True:
            index += 1
            remaining = state.remaining()
            if not remaining:
                break
            if index > len(ids) + 2:  # cannot happen (each resumed attempt retires a test); never loop
                for n in remaining:
                    state.not_run[n] = "not run: too many child restarts"
                break
            if index > 1:
                explicit = remaining
            ev_path = runs_dir / f"{spec.role}.events.{index}.jsonl"
            att = _run_attempt(
                spec,
                index,
                run_argv(spec, ev_path, explicit),
                ev_path,
                sink,
                state,
                dispatcher,
                cancel,
                total_deadline,
            )
            attempts.append(att)
            if att.ended == "cancelled":
                cancelled = True
                break
            if att.ended in ("total_timeout", "spawn_failed", "finished"):
                if att.ended == "finished" or att.ended == "spawn_failed":
                    for n in state.remaining():
                        state.not_run[n] = (
                            f"not run: {att.detail}"
                            if att.ended == "spawn_failed"
                            else "not run: pytest finished without running it"
                        )
                break
            # killed_hang / crashed: resume only if this attempt moved forward.
            if state.started_tests == 0 and state.finished_tests == 0:
                for n in state.remaining():
                    state.not_run[n] = f"not run: child {att.detail} before any test started"
                break
            left = state.remaining()
            if left:
                sink.write_line(
                    f"===== workbench resume: attempt {index + 1}, {len(left)} of {len(ids)} node ids "
                    f"left (attempt {index} {att.detail}) ====="
                )
                _emit(state, dispatcher, _synthetic("runner_resume", attempt=index + 1, remaining=left))
        if cancelled:
            for n in state.remaining():
                state.not_run[n] = "not run: cancelled"
        rc = (
            2
            if (cancelled or any(a.ended == "total_timeout" for a in attempts))
            else (1 if state.failed or state.not_run else 0)
        )
        return _result(
            spec, rc, sink, state, attempts, tuple(ids), started_at, t0, collect_text, cancelled, dispatcher
        )
    finally:
        dispatcher.close()
        sink.close()


def _result(
    spec: RunSpec,
    rc: int,
    sink: _LogSink,
    state: _State,
    attempts: list[Attempt],
    ids: tuple[str, ...],
    started_at: float,
    t0: float,
    collect_text: str,
    cancelled: bool,
    dispatcher: _Dispatcher,
) -> RunResult:
    duration = _clock() - t0
    counts = count_outcomes(state.outcomes)
    if attempts:
        sink.write_line(
            f"===== workbench summary: {counts['passed']} passed, {len(state.failed)} failed, "
            f"{counts['skipped']} skipped, {len(state.not_run)} not run in {len(attempts)} "
            f"attempt(s) ({duration:.2f}s) ====="
        )
    _emit(
        state,
        dispatcher,
        _synthetic(
            "runner_finish",
            rc=rc,
            failed=dict(state.failed),
            not_run=dict(state.not_run),
            cancelled=cancelled,
        ),
    )
    dispatcher.close()  # all callbacks done before run() returns
    launch_sets = _launch_sets(state.events, state.notes)
    return RunResult(
        spec=spec,
        rc=rc,
        raw_log_path=sink.path,
        events=tuple(state.events),
        collected=ids,
        outcomes=dict(state.outcomes),
        failed=dict(state.failed),
        not_run=dict(state.not_run),
        attempts=tuple(attempts),
        launch_sets=tuple(launch_sets),
        cancelled=cancelled,
        started_at=started_at,
        duration_s=duration,
        collect_output=collect_text,
        notes=tuple(state.notes),
    )


def _launch_sets(events: Sequence[Event], notes: list[str]) -> list[LaunchSet]:
    if not any(e.event == "launches" for e in events):
        return []
    try:
        from cutile_workbench.artifacts.launches_io import launch_sets_from_events
    except ImportError:
        notes.append("launch records present but cutile_workbench.artifacts.launches_io is unavailable")
        return []
    try:
        return list(launch_sets_from_events(list(events)))
    except InputError as exc:
        notes.append(f"launch records refused: {exc}")
        return []


def _synthetic(kind: str, **fields: Any) -> Event:
    return Event(event=kind, ts=time.time(), fields={"source": "runner", **fields})


def _emit(state: _State, dispatcher: _Dispatcher, ev: Event) -> None:
    """Keep a runner-made event in the result and hand it to ``on_event``, in stream order."""
    state.events.append(ev)
    dispatcher.put(ev)


class _Dispatcher:
    """Calls ``on_event`` from one thread, in order; collects callback errors instead of raising."""

    def __init__(self, on_event: Callable[[Event], None] | None) -> None:
        self.on_event = on_event
        self.errors: list[str] = []
        self._q: queue.Queue[Event | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.extra: list[Event] = []  # synthetic events, also kept in the result
        if on_event is not None:
            self._thread = threading.Thread(target=self._loop, name="runner-events", daemon=True)
            self._thread.start()

    def put(self, ev: Event) -> None:
        if self._closed:
            return
        if self.on_event is not None:
            self._q.put(ev)

    def _loop(self) -> None:
        assert self.on_event is not None
        while True:
            ev = self._q.get()
            if ev is None:
                return
            try:
                self.on_event(ev)
            except Exception as exc:  # a broken view must not kill the run
                if len(self.errors) < 20:
                    self.errors.append(f"on_event raised {type(exc).__name__}: {exc}")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self._q.put(None)
            self._thread.join()


def _run_attempt(
    spec: RunSpec,
    index: int,
    argv: list[str],
    ev_path: Path,
    sink: _LogSink,
    state: _State,
    dispatcher: _Dispatcher,
    cancel: threading.Event | None,
    total_deadline: float | None,
) -> Attempt:
    """One child process: spawn, tee, tail events, watch for hangs/crashes/cancel, classify the end."""
    t0 = _clock()
    state.current = None
    state.saw_event_test_start = False
    state.session_finished = None
    state.poisoned_by, state.poison_done = None, False
    state.casualties = set()
    state.started_tests = state.finished_tests = 0
    state.progress_at = t0
    first_event_seen = False
    tracker = _StdoutTracker(state.expected)
    ev_path.write_bytes(b"")
    try:
        proc = subprocess.Popen(
            argv,
            cwd=spec.cwd,
            env=child_env(spec),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        return Attempt(index, tuple(argv), None, "spawn_failed", f"could not start: {exc}", 0.0, str(ev_path))
    assert proc.stdout is not None
    stdout_fd = proc.stdout.fileno()
    tracker_lock = threading.Lock()
    out_tail = bytearray()

    def pump() -> None:
        while True:
            try:
                chunk = os.read(stdout_fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            sink.write(chunk)
            with tracker_lock:
                tracker.feed(chunk)
                out_tail.extend(chunk)
                if len(out_tail) > 8192:
                    del out_tail[:-4096]

    reader = threading.Thread(target=pump, name="runner-stdout", daemon=True)
    reader.start()
    offset = 0
    pending = b""
    lineno = 0

    def drain_events(final: bool) -> None:
        nonlocal offset, pending, lineno, first_event_seen
        try:
            with open(ev_path, "rb") as fh:
                fh.seek(offset)
                data = fh.read()
        except OSError:
            return
        offset += len(data)
        pending += data
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            lineno += 1
            if not raw.strip():
                continue
            try:
                parsed = read_events([raw.decode("utf-8", errors="replace") + "\n"], source=str(ev_path))
            except InputError as exc:
                state.notes.append(f"{ev_path.name}:{lineno}: skipped malformed event ({exc.message})")
                continue
            for ev in parsed:
                first_event_seen = True
                _apply_event(ev, index, state, dispatcher)
        if final and pending.strip():
            state.notes.append(f"{ev_path.name}: dropped a half-written final event line")
            pending = b""

    try:
        ended, detail = _watch(
            proc,
            spec,
            state,
            tracker,
            tracker_lock,
            drain_events,
            cancel,
            total_deadline,
            lambda: first_event_seen,
        )
    except BaseException:
        # KeyboardInterrupt or a bug of ours: the child runs in its own session and would keep
        # the GPU busy after we are gone.
        kill_group(proc, spec.kill_grace_s)
        raise
    # Leftover group members may hold the pipe open; after the leader is gone they go too.
    reap_group(proc.pid)
    rc = proc.wait()
    reader.join(timeout=10)
    drain_events(final=True)
    with tracker_lock:
        running = _running_test(state, tracker)
        last_line = next(
            (ln.strip() for ln in reversed(out_tail.decode("utf-8", "replace").splitlines()) if ln.strip()),
            "",
        )
    if ended == "finished" and state.session_finished is None:
        if not first_event_seen and running is None and rc in (0, 1):
            # No event stream at all (plugin without --workbench-events support): pytest's own
            # exit status and the -v lines are all we have; a clean 0/1 exit is a finished session.
            state.notes.append(f"attempt {index}: no events from the plugin; outcomes taken from -v output")
        else:
            ended, detail = "crashed", _describe_exit(rc)
            if running is None and state.started_tests == 0 and last_line:
                detail += f"; last output: {last_line[:300]}"
    if ended in ("killed_hang", "crashed", "total_timeout", "cancelled") and running is not None:
        if ended == "cancelled":
            state.not_run[running] = "not run: cancelled while running"
        else:
            reason = f"workbench: child {detail} while running this test"
            state.failed[running] = reason
            state.outcomes.pop(running, None)
            sink.write_line(f"FAILED {running} - {reason}")
            _emit(state, dispatcher, _synthetic("test_failed", nodeid=running, when="call", longrepr=reason))
            _emit(
                state,
                dispatcher,
                _synthetic("test_finish", nodeid=running, outcome="failed", duration_s=0.0, killed=True),
            )
    if not state.saw_event_test_start:
        # No plugin events: take outcomes from the -v lines instead.
        for nodeid, outcome in tracker.finished.items():
            if nodeid not in state.failed and nodeid not in state.outcomes:
                state.outcomes[nodeid] = outcome
                state.finished_tests += 1
                if outcome == "failed":
                    state.failed[nodeid] = "failed (see raw log)"
    if state.poisoned_by is not None and state.casualties:
        # They failed only because an earlier test broke the CUDA context: run them again in a
        # fresh process (each attempt still retires the poisoning test, so this terminates).
        for nodeid in state.casualties:
            state.failed.pop(nodeid, None)
            state.outcomes.pop(nodeid, None)
        state.notes.append(
            f"attempt {index}: {len(state.casualties)} test(s) after the sticky CUDA error "
            f"in {state.poisoned_by} are run again"
        )
        if ended == "finished" and state.remaining():
            ended, detail = "poisoned", f"hit a sticky CUDA error in {state.poisoned_by}"
    if ended == "total_timeout":
        for n in state.remaining():
            state.not_run[n] = "not run: total timeout reached"
    _emit(
        state,
        dispatcher,
        _synthetic("runner_attempt_end", attempt=index, rc=rc, ended=ended, detail=detail, running=running),
    )
    return Attempt(
        index,
        tuple(argv),
        rc,
        ended,
        detail or f"exited with status {rc}",
        _clock() - t0,
        str(ev_path),
    )


def _watch(
    proc: subprocess.Popen[bytes],
    spec: RunSpec,
    state: _State,
    tracker: _StdoutTracker,
    tracker_lock: threading.Lock,
    drain_events: Callable[[bool], None],
    cancel: threading.Event | None,
    total_deadline: float | None,
    first_event_seen: Callable[[], bool],
) -> tuple[str, str]:
    """Poll the child until it exits or must be killed; returns ``(ended, detail)``."""
    while True:
        rc = proc.poll()
        drain_events(False)
        now = _clock()
        with tracker_lock:
            if tracker.changed_at is not None and tracker.changed_at > state.progress_at:
                state.progress_at = tracker.changed_at
            in_test = tracker.current is not None
        if rc is not None:
            return "finished", ""
        if state.poison_done and state.remaining():
            how = kill_group(proc, spec.kill_grace_s)
            return "poisoned", (
                f"was restarted after a sticky CUDA error in {state.poisoned_by} "
                f"(later CUDA calls in that process would all fail; {how})"
            )
        if cancel is not None and cancel.is_set():
            return "cancelled", f"was cancelled ({kill_group(proc, spec.kill_grace_s)})"
        if total_deadline is not None and now >= total_deadline:
            how = kill_group(proc, spec.kill_grace_s)
            return "total_timeout", f"was killed at the total timeout of {spec.total_timeout_s}s ({how})"
        limit = (
            spec.per_test_timeout_s
            if first_event_seen() or in_test
            else max(spec.per_test_timeout_s, spec.startup_timeout_s)
        )
        if now - state.progress_at > limit:
            how = kill_group(proc, spec.kill_grace_s)
            return "killed_hang", f"was killed after {limit:.1f}s without progress ({how})"
        time.sleep(_POLL_S)


def _running_test(state: _State, tracker: _StdoutTracker) -> str | None:
    if state.saw_event_test_start:
        return state.current
    if tracker.current is not None and tracker.current not in tracker.finished:
        return tracker.current
    return None


def _apply_event(ev: Event, attempt: int, state: _State, dispatcher: _Dispatcher) -> None:
    ev = Event(event=ev.event, ts=ev.ts, fields={**ev.fields, "attempt": attempt}, line=ev.line)
    state.events.append(ev)
    state.progress_at = _clock()
    kind = ev.event
    nodeid = ev.get("nodeid")
    if kind == "test_start" and isinstance(nodeid, str):
        state.saw_event_test_start = True
        state.current = nodeid
        state.started_tests += 1
    elif kind == "test_failed" and isinstance(nodeid, str):
        longrepr = str(ev.get("longrepr", ""))
        state.failed.setdefault(nodeid, _failure_reason(longrepr))
        if STICKY_CUDA_ERROR.search(_error_lines(longrepr)):
            if state.poisoned_by is None:
                state.poisoned_by = nodeid
            elif nodeid != state.poisoned_by:
                state.casualties.add(nodeid)
    elif kind == "test_finish" and isinstance(nodeid, str):
        outcome = str(ev.get("outcome", "failed"))
        state.outcomes[nodeid] = outcome if outcome in ("passed", "skipped", "failed") else "failed"
        if outcome == "failed":
            state.failed.setdefault(nodeid, "failed (see raw log)")
        else:
            state.failed.pop(nodeid, None)
        state.finished_tests += 1
        if state.current == nodeid:
            state.current = None
        if state.poisoned_by == nodeid:
            state.poison_done = True
    elif kind == "session_finish":
        status = ev.get("exitstatus")
        state.session_finished = status if isinstance(status, int) else -1
    dispatcher.put(ev)
