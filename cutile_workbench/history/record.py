"""The runner's entry point: append one history entry per run when ``write_results`` lays it out.

Contract of :func:`record_run`: parses the raw log the runner just wrote (lenient), takes the
provenance from the run's ``provenance`` events (the child's plugin emits them at session start and
finish), completes it from the log header, and appends the entry to
``<kernel>/workbench/history.sqlite`` in one transaction. It **never raises**: a broken store or an
unreadable log becomes ``RecordOutcome.error`` (the results themselves are already written, and
the history must not block them); a log without a storable median is ``added=False`` with the
reason.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cutile_workbench.artifacts.events import Event
from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.errors import WorkbenchError
from cutile_workbench.history.entries import entry_from_log
from cutile_workbench.history.importer import provenance_for_log
from cutile_workbench.history.store import HISTORY_FILE, HistoryStore


@dataclass(frozen=True)
class RecordOutcome:
    store_path: str
    added: bool
    run_key: str | None = None
    reason: str = ""
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "store": self.store_path,
            "added": self.added,
            "run_key": self.run_key,
            "reason": self.reason,
            "error": self.error,
        }


def record_run(out: KernelPaths, role: str, raw_log: Path, events: Sequence[Event]) -> RecordOutcome:
    """Append the run behind ``raw_log`` to the kernel's history (see module doc)."""
    from cutile_workbench.artifacts.perflog.parser import parse_perf_log

    store_path = out.workbench_dir / HISTORY_FILE
    try:
        data = raw_log.read_bytes()
        text = data.decode("utf-8", errors="replace")
        log = parse_perf_log(raw_log, text=text, strict=False)
        tagged = [Event(e.event, e.ts, {**e.fields, "role": role}, e.line) for e in events]
        prov, at, origin = provenance_for_log(
            role, text, log, session=None, events=tagged, source=str(raw_log)
        )
        digest = hashlib.sha256(data).hexdigest()
        entry = entry_from_log(
            out.kernel,
            role,
            log,
            prov,
            source="live",
            log_sha256=digest,
            recorded_at=at,
            recorded_at_origin=origin,
        )
        if entry is None:
            return RecordOutcome(str(store_path), False, reason="no record with a finite positive median")
        rel = str(raw_log.relative_to(out.root)) if raw_log.is_relative_to(out.root) else str(raw_log)
        with HistoryStore.open(store_path) as store:
            added = store.add(entry, source_path=rel)
        return RecordOutcome(
            str(store_path),
            added,
            entry.run_key,
            "appended" if added else "already in the history (same measurements)",
        )
    except (WorkbenchError, OSError) as exc:
        return RecordOutcome(str(store_path), False, error=str(exc))
