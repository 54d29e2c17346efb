"""Typed error hierarchy. Every rejection of bad input names its file, line or key.

Contract: code that reads user files raises a subclass of :class:`WorkbenchError`, never a bare
``ValueError``/``KeyError``/``JSONDecodeError``. The CLI maps ``exit_code`` to the process exit
status (2 = bad input/usage, 3 = validation refused, 1 = BLOCKED); the TUI shows ``str(err)`` in a
notification or modal.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class WorkbenchError(Exception):
    """Base class. ``location`` renders as ``file:line: key:`` so users can jump to it."""

    message: str
    path: Path | str | None = None
    line: int | None = None
    key: str | None = None
    title: str = "cutile-workbench error"
    exit_code: int = 2

    def __post_init__(self) -> None:
        super().__init__(self.message)

    @property
    def location(self) -> str:
        parts: list[str] = []
        if self.path is not None:
            parts.append(str(self.path) + (f":{self.line}" if self.line is not None else ""))
        if self.key is not None:
            parts.append(f"key '{self.key}'")
        return ": ".join(parts)

    def __str__(self) -> str:
        loc = self.location
        return f"{loc}: {self.message}" if loc else self.message


@dataclass
class InputError(WorkbenchError):
    """A user-supplied file or argument is malformed or missing (exit 2)."""

    title: str = "Bad input"
    exit_code: int = 2


@dataclass
class ValidationRefused(WorkbenchError):
    """Rendered files failed the in-process validators; nothing was written (exit 3)."""

    title: str = "Validation refused"
    exit_code: int = 3


@dataclass
class Blocked(WorkbenchError):
    """No usable data: the stage verdict is BLOCKED (exit 1)."""

    title: str = "Blocked"
    exit_code: int = 1


@dataclass
class UnsafePath(WorkbenchError):
    """A write target resolves outside the kernel's out dir / reports dir (exit 2)."""

    title: str = "Unsafe path"
    exit_code: int = 2


@dataclass
class CaptureError(WorkbenchError):
    """A CUPTI/profiler sample set failed its self-checks and was refused."""

    title: str = "Capture refused"
    exit_code: int = 2
