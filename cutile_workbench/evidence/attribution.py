"""Which source line issued each launch: F's reading of the attributed call (issue 32).

Contract (pure, no I/O): a :class:`~cutile_workbench.model.LaunchSet` may carry ``attribution``
(``run.capture.attribution``: every GPU activity of one un-timed call, with the host stack that
issued it, innermost frame first). From it:

- :func:`issuing_frame` names the line that issued one activity: the innermost frame of the
  kernel's own code that the main kernel's stacks do not share (so a canary launched through the
  same ``_run_ffi`` helper is named at its own call line, not at the helper); the main kernel itself
  is named at its innermost own frame.
- :func:`issued_by_class` groups the activities by launch class (``classify_kernel``: main, fill,
  copy, memset, elementwise <op>, …) with the lines that issued them.
- :func:`extra_launches_at` lists the activities issued through one line on a path of their own (not
  the measured main launch's path): a static wrapper finding is **confirmed** only by those;
- :func:`executed_lines` is the set of ``(file, line)`` that some attributed activity's stack passes
  through.

A set without attribution (older captures, the recorded sessions before issue 32) gives None /
empty results; callers then say that the lines are not evidenced.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from cutile_workbench.artifacts.kernel_names import short_kernel_name
from cutile_workbench.model import AttributedLaunch, SourceFrame


class Attributed(Protocol):
    """What the readers below need: a launch set, or its summary (which keeps the set's attribution)."""

    @property
    def attribution(self) -> tuple[AttributedLaunch, ...]: ...


@dataclass(frozen=True)
class IssuedLine:
    """One launch class of the attributed call and the line(s) that issued it."""

    cls: str  # main | fill | copy | memset | elementwise <op> | kernel | canary
    name: str  # short kernel name
    count: int
    frame: SourceFrame | None  # the issuing line (None: no stack was taken for it)
    library: SourceFrame | None = None  # the top library frame it went through (e.g. torch.zeros' caller)

    @property
    def where(self) -> str:
        if self.frame is None:
            return "no stack recorded"
        text = f"{self.frame.where}"
        if self.frame.code:
            text += f" `{self.frame.code}`"
        if self.library is not None:
            text += f" (via {self.library.file}:{self.library.line} {self.library.function})"
        return text


def _cls(a: AttributedLaunch) -> str:
    from cutile_workbench.evidence.launches import classify_kernel

    return classify_kernel(a.name, a.kind)


def main_launches(att: Sequence[AttributedLaunch], main_kernel: str | None) -> list[AttributedLaunch]:
    """The attributed activities of the main kernel (by name; else the 'main'-class ones)."""
    if main_kernel:
        short = short_kernel_name(main_kernel)
        hit = [a for a in att if a.name == main_kernel or short_kernel_name(a.name) == short]
        if hit:
            return hit
    return [a for a in att if _cls(a) == "main"]


def issuing_frame(a: AttributedLaunch, shared: set[tuple[str, int]]) -> SourceFrame | None:
    """The innermost own frame of ``a`` not in ``shared`` (the main kernel's frames); else its innermost."""
    own = a.own_frames
    for f in own:
        if (f.file, f.line) not in shared:
            return f
    return own[0] if own else None


def _library(a: AttributedLaunch) -> SourceFrame | None:
    return next((f for f in a.frames if f.library), None)


def measured_main(ls: Attributed | None, main_kernel: str | None) -> AttributedLaunch | None:
    """The main kernel launch the call measures (routed through the autotuner, else the last one)."""
    if ls is None or not ls.attribution:
        return None
    mains = main_launches(ls.attribution, main_kernel)
    hit = next(
        (m for m in mains if any("autotune" in f.file or "autotune" in f.function for f in m.frames)), None
    )
    return hit if hit is not None else (mains[-1] if mains else None)


def extra_launches_at(
    ls: Attributed | None, main_kernel: str | None, file: str, line: int
) -> list[AttributedLaunch]:
    """The activities issued through ``file:line`` on a path of their own: not the measured main launch,
    and ``file:line`` is not a frame of the main launch's own path (a line every launch passes through,
    such as the op's entry, confirms no defect)."""
    if ls is None:
        return []
    main = measured_main(ls, main_kernel)
    shared = {(f.file, f.line) for f in (main.own_frames if main else ())}
    return [
        a
        for a in launches_at(ls, file, line)
        if a is not main and not any(_same_file(f, file) and n == line for f, n in shared)
    ]


def issued_by_class(ls: Attributed | None, main_kernel: str | None) -> list[IssuedLine] | None:
    """Per launch class and issuing line, the activities of the attributed call; None without attribution."""
    if ls is None or not ls.attribution:
        return None
    att = ls.attribution
    mains = main_launches(att, main_kernel)
    # the measured main launch: the one routed through the autotuner, else the last (a canary runs first)
    first_main = next(
        (m for m in mains if any("autotune" in f.file or "autotune" in f.function for f in m.frames)), None
    )
    if first_main is None and mains:
        first_main = mains[-1]
    shared = {(f.file, f.line) for f in (first_main.own_frames if first_main else ())}
    out: dict[tuple[str, str, str], IssuedLine] = {}
    for a in att:
        is_main = any(a is m for m in mains)
        if a is first_main:
            cls, frame = "main", (a.own_frames[0] if a.own_frames else None)
        else:
            cls = "canary" if is_main else _cls(a)
            frame = issuing_frame(a, shared)
        key = (cls, a.name, frame.where if frame else "")
        prev = out.get(key)
        out[key] = IssuedLine(
            cls, short_kernel_name(a.name), (prev.count if prev else 0) + 1, frame, _library(a)
        )
    return list(out.values())


def executed_lines(ls: Attributed | None) -> set[tuple[str, int]]:
    """Every (file, line) an attributed activity's own frames pass through."""
    if ls is None:
        return set()
    return {(f.file, f.line) for a in ls.attribution for f in a.own_frames}


def launches_at(ls: Attributed | None, file: str, line: int) -> list[AttributedLaunch]:
    """The attributed activities whose stack passes through ``file:line`` (paths compared by suffix)."""
    if ls is None:
        return []
    return [
        a for a in ls.attribution if any(_same_file(f.file, file) and f.line == line for f in a.own_frames)
    ]


def _same_file(a: str, b: str) -> bool:
    a, b = a.replace("\\", "/"), b.replace("\\", "/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def describe(lines: Iterable[IssuedLine]) -> str:
    """``fill `vectorized_elementwise_kernel` x1 issued at src/…:93 `torch.zeros(...)`; …``."""
    return "; ".join(f"{x.cls} `{x.name}` x{x.count} issued at {x.where}" for x in lines)
