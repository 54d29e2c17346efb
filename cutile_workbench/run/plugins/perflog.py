"""pytest plugin ``cutile_workbench``: the "Performance Test Results" printer, the JSON-lines event
stream and the optional benchmark-harness swap. Inert unless one of its switches is on.

Switches:
- Printing: the host's ``--print-record`` (TileGym's ``tests/conftest.py`` registers it together
  with ``--run-full`` in ONE ``try/except ValueError`` block, so this plugin must NEVER register
  ``--print-record`` itself: if it did, the host's block would stop at the duplicate and
  ``--run-full`` would never exist), or our own ``--workbench-print-record``.
- ``--workbench-events FILE``: JSON-lines events (schema and reader in :mod:`cutile_workbench.artifacts.events`).
- ``--workbench-harness``: ``cutile_workbench.run.capture.tilegym_swap.install(config)`` at configure time (a
  usage error when that module cannot be imported), and the Kineto start tracker
  (``capture.conflicts``) installed again right before the first test, when torch is surely
  imported, so every torch.profiler session of the run is seen by the capture.
- ``WORKBENCH_IR_MARKERS=1`` (set by ``run --dump-ir``): a ``cutile_workbench.ir.dumps`` marker line on fd 2
  before each test, and after it one naming the cuTile Tile IR files (``CUDA_TILE_DUMP_TILEIR``)
  that appeared during it, so the dumps in the raw log can be tied to their config.

Printing contract: for each passed ``call`` report whose ``user_properties`` hold ``benchmark``,
one block (:func:`cutile_workbench.artifacts.perflog.printer.format_block`) written through the terminal reporter
after pytest's ``PASSED`` (``trylast``), with or without ``-s``. Nothing for skipped or failed
tests, or tests without the property. A ``benchmark`` value that is not ``{framework: {phase:
{...}}}`` gets one ``workbench:`` note line instead of a block (the validator then reports
perf_sections != passed, which is the truth). Under pytest-xdist only the controller prints and
writes events (it receives every worker's reports); workers keep a stream open only for
:func:`cutile_workbench.artifacts.events.emit` from in-process harness code.

Event outcome rules: ``test_failed`` is written at the phase that failed (setup/call/teardown);
``test_finish`` once per test after teardown, ``outcome`` = ``failed`` if any phase failed, else
``skipped`` if any phase skipped, else ``passed``; ``duration_s`` sums the phases.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cutile_workbench.artifacts import events
from cutile_workbench.artifacts.perflog import printer

_RECORDER_NAME = "cutile_workbench_recorder"


@dataclass
class _TestState:
    outcome: str = "passed"
    duration_s: float = 0.0


#: the names this module can be registered under: the pytest11 entry point, and ``-p <module>``
#: (or ``pytest_plugins``), which the runner uses where the package is only on PYTHONPATH.
_PLUGIN_NAMES: tuple[str, ...] = ("cutile_workbench", __name__)


def pytest_plugin_registered(plugin: Any, manager: pytest.PytestPluginManager) -> None:
    # pluggy refuses one module under two names ("Plugin already registered under a different
    # name"), which is what `-p cutile_workbench.run.plugins.perflog` plus the entry point would do: once this
    # module is in, block its other name so the second registration is skipped, not a crash.
    if plugin is sys.modules.get(__name__):
        own = manager.get_name(plugin)
        for name in _PLUGIN_NAMES:
            if name != own and not manager.is_blocked(name):
                manager.set_blocked(name)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cutile-workbench", "cutile-workbench perf-log printer and events")
    group.addoption(
        "--workbench-print-record",
        action="store_true",
        default=False,
        help="print a 'Performance Test Results' block for every passed test that recorded "
        "'benchmark' (same as a host conftest's --print-record)",
    )
    group.addoption(
        "--workbench-events",
        metavar="FILE",
        default=None,
        help="append JSON-lines session events (schema: cutile_workbench.artifacts.events) to FILE",
    )
    group.addoption(
        "--workbench-harness",
        action="store_true",
        default=False,
        help="swap TileGym's benchmark_fn_cupti for the workbench CUPTI harness (per-launch data)",
    )


def _host_print_record(config: pytest.Config) -> bool:
    """The host conftest's ``--print-record``, if it registered one (never registered here)."""
    try:
        return bool(config.getoption("--print-record"))
    except (ValueError, AttributeError):
        return False


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    events_path = config.getoption("--workbench-events")
    writer: events.EventWriter | None = None
    if events_path:
        path = Path(events_path)
        if not path.is_absolute():
            path = Path(config.invocation_params.dir) / path
        try:
            writer = events.EventWriter(path)
        except OSError as exc:
            raise pytest.UsageError(
                f"--workbench-events: cannot open {path}: {exc.strerror or exc}"
            ) from None
        events.set_active(writer, config)
    print_enabled = bool(config.getoption("--workbench-print-record")) or _host_print_record(config)
    if writer is not None or print_enabled:
        _register(config, print_enabled, writer)

    if config.getoption("--workbench-harness"):
        try:
            # The GPU engineer's module; imported by name so this plugin loads without it.
            tilegym_swap = importlib.import_module("cutile_workbench.run.capture.tilegym_swap")
        except ImportError as exc:
            raise pytest.UsageError(
                "--workbench-harness needs cutile_workbench.run.capture.tilegym_swap, which cannot be "
                f"imported: {exc}"
            ) from None
        tilegym_swap.install(config)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    if session.config.getoption("--workbench-harness"):
        from cutile_workbench.run.capture import conflicts

        conflicts.install_tracker()


def _tileir_dir_listing() -> set[str]:
    d = os.environ.get("CUDA_TILE_DUMP_TILEIR")
    if not d or not os.path.isdir(d):
        return set()
    return set(os.listdir(d))


_IR_BEFORE: dict[str, set[str]] = {}


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    from cutile_workbench.ir import dumps

    if dumps.markers_on():
        _IR_BEFORE[nodeid] = _tileir_dir_listing()
        dumps.emit(dumps.TEST_MARKER.format(nodeid=nodeid))


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    from cutile_workbench.ir import dumps

    if dumps.markers_on():
        new = sorted(_tileir_dir_listing() - _IR_BEFORE.pop(nodeid, set()))
        dumps.emit(dumps.FILES_MARKER.format(nodeid=nodeid, names=",".join(new)))


def _register(config: pytest.Config, print_enabled: bool, writer: events.EventWriter | None) -> None:
    recorder = _Recorder(
        config=config,
        print_enabled=print_enabled,
        is_worker=hasattr(config, "workerinput"),
        writer=writer,
    )
    config.pluginmanager.register(recorder, _RECORDER_NAME)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    # A conftest below the rootdir may register --print-record after our configure ran.
    config = session.config
    if config.pluginmanager.get_plugin(_RECORDER_NAME) is None and _host_print_record(config):
        _register(config, True, None)


class _Recorder:
    """Per-session hook object (registered only when printing or events are on)."""

    def __init__(
        self,
        *,
        config: pytest.Config,
        print_enabled: bool,
        is_worker: bool,
        writer: events.EventWriter | None,
    ) -> None:
        self.config = config
        self.print_enabled = print_enabled and not is_worker
        self.is_worker = is_worker
        self.writer = writer
        # Workers leave the plugin's own events to the controller (see module doc).
        self.stream = None if is_worker else writer
        self.tests: dict[str, _TestState] = {}
        self._xdist_collected = False

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if not self.print_enabled and not self.is_worker:
            self.print_enabled = _host_print_record(session.config)
        if self.stream is not None:
            self.stream.emit(
                "session_start",
                pid=os.getpid(),
                argv=list(sys.argv),
                args=[str(a) for a in session.config.invocation_params.args],
                rootdir=str(session.config.rootpath),
            )
            # issue #15: run provenance (GPU, clocks, harness, commits); never raises
            from cutile_workbench.history.provenance import emit_provenance

            emit_provenance(session.config, "start")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # An xdist controller collects nothing here; its workers' list arrives via the xdist hook.
        xdist_controller = self.config.pluginmanager.has_plugin("dsession")
        if self.stream is not None and not xdist_controller:
            self.stream.emit("collected", nodeids=[item.nodeid for item in session.items])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # Under xdist the controller collects nothing itself; report the first worker's list.
        if self.stream is not None and not self._xdist_collected:
            self._xdist_collected = True
            self.stream.emit("collected", nodeids=list(ids))

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        if self.stream is not None:
            self.tests[nodeid] = _TestState()
            self.stream.emit("test_start", nodeid=nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.is_worker:
            return
        test = self.tests.setdefault(report.nodeid, _TestState())
        test.duration_s += float(getattr(report, "duration", 0.0) or 0.0)
        if report.failed:
            test.outcome = "failed"
            if self.stream is not None:
                self.stream.emit(
                    "test_failed", nodeid=report.nodeid, when=report.when, longrepr=str(report.longrepr)
                )
            return
        if report.skipped:
            if test.outcome != "failed":
                test.outcome = "skipped"
            return
        if report.when != "call" or not report.passed:
            return
        benchmark = _benchmark_property(report)
        if benchmark is None:
            return
        if not printer.is_benchmark_record(benchmark):
            if self.print_enabled:
                self._write_lines(
                    [
                        "workbench: the 'benchmark' property of "
                        f"{printer.escape_py(report.nodeid)} is not {{framework: {{phase: stats}}}}; "
                        "no record printed"
                    ]
                )
            return
        framework = printer.select_framework(report.nodeid, benchmark)
        params = printer.record_params(report.nodeid, framework)
        if self.print_enabled:
            self._write_lines(printer.format_block(report.nodeid, benchmark, framework=framework))
        if self.stream is not None:
            self.stream.emit(
                "record", nodeid=report.nodeid, framework=framework, params=params, benchmark=benchmark
            )

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        if self.stream is None:
            return
        test = self.tests.pop(nodeid, _TestState())
        self.stream.emit(
            "test_finish", nodeid=nodeid, outcome=test.outcome, duration_s=round(test.duration_s, 6)
        )

    def pytest_sessionfinish(self, exitstatus: int | pytest.ExitCode) -> None:
        if self.stream is not None:
            from cutile_workbench.history.provenance import emit_provenance  # issue #15: clocks after the run

            emit_provenance(self.config, "finish")
            self.stream.emit("session_finish", exitstatus=int(exitstatus))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.writer is not None:
            events.set_active(None, config)
            self.writer.close()

    def _write_lines(self, lines: list[str]) -> None:
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is None:  # -p no:terminal: nowhere visible to print
            return
        tr.ensure_newline()
        # ensure_newline only knows about file-path prefixes; in -q mode the progress letters
        # ("ss.") are still open on the current line, so close it ourselves.
        tw = getattr(tr, "_tw", None)
        if tw is not None and int(getattr(tw, "width_of_current_line", None) or 0) > 0:
            tr.line("")
        # Every line is closed, the terminator too: with -s, teardown output goes straight to the
        # fd and would otherwise be glued to the terminator (an unterminated block). The price is
        # an empty line before pytest's next result line in -v mode.
        for line in lines:
            tr.write_line(line)


def _benchmark_property(report: pytest.TestReport) -> Any:
    value = None
    for item in getattr(report, "user_properties", ()) or ():
        if isinstance(item, (tuple, list)) and len(item) == 2 and item[0] == "benchmark":
            value = item[1]  # the last one wins, as in dict(report.user_properties)
    return value
