"""Seeded byte/line mutator of real recorded files (the fuzzing half that needs no hypothesis).

Contract: ``mutate(data, seed)`` is a pure function of its arguments — the same seed gives the same
bytes on every machine, so a failing case is reproduced from ``(seed file, seed)`` alone. Each call
applies 1-3 operations picked from :data:`OPERATIONS` (bit flips, line drops / duplication /
truncation / shuffles, CRLF and ANSI injection, NUL bytes, huge lines, invalid UTF-8, numbers
replaced by NaN / -1 / 1e308 / "x" …) and returns the mutated bytes plus the names of the
operations applied (for the failure message and the per-operation counts of the fuzz report).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

_NUMBER_RE = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
# Replacement tokens for a number: the values that break naive float()/int() handling or ratios.
BAD_NUMBERS: tuple[bytes, ...] = (
    b"NaN",
    b"nan",
    b"-nan",
    b"Infinity",
    b"-Infinity",
    b"inf",
    b"-1",
    b"0",
    b"-0.0",
    b"1e308",
    b"-1e308",
    b"1e-320",
    b"99999999999999999999999",
    b"x",
    b'"x"',
    b"null",
    b"true",
    b"[]",
    b"{}",
    b"0x1f",
    b"1_000",
    b"",
)
_ANSI = (b"\x1b[31m", b"\x1b[0m", b"\x1b[1;32m", b"\x1b[2K", b"\x1b]0;title\x07", b"\x1b[", b"\r")
_INVALID_UTF8 = (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf0\x28\x8c\x28", b"\x80\x80", b"\xfe\xff")
HUGE_LINE_CHARS = 300_000  # above every parser's per-line limit (events/IR/perf logs cap at 100k-1M)

Op = Callable[[bytes, random.Random], bytes]


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _join(lines: list[bytes]) -> bytes:
    return b"\n".join(lines)


def bit_flip(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return b"\x01"
    buf = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(buf))
        buf[i] ^= 1 << rng.randrange(8)
    return bytes(buf)


def line_drop(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    for _ in range(rng.randint(1, max(1, len(lines) // 10))):
        if len(lines) > 1:
            del lines[rng.randrange(len(lines))]
    return _join(lines)


def line_dup(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    for _ in range(rng.randint(1, 5)):
        i = rng.randrange(len(lines))
        lines[i:i] = [lines[i]] * rng.randint(1, 3)
    return _join(lines)


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)] if data else data


def truncate_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    return _join(lines[: rng.randrange(len(lines) + 1)])


def shuffle_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    if len(lines) < 2:
        return data
    if rng.random() < 0.5:  # a local swap keeps most structure, which reaches deeper code paths
        i = rng.randrange(len(lines) - 1)
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    else:
        i = rng.randrange(len(lines))
        j = min(len(lines), i + rng.randint(2, 40))
        window = lines[i:j]
        rng.shuffle(window)
        lines[i:j] = window
    return _join(lines)


def crlf(data: bytes, rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return data.replace(b"\n", b"\r\n")
    lines = _lines(data)
    for _ in range(rng.randint(1, 10)):
        i = rng.randrange(len(lines))
        lines[i] = lines[i] + b"\r"
    return _join(lines)


def _insert(data: bytes, rng: random.Random, blob: bytes) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + blob + data[i:]


def ansi_inject(data: bytes, rng: random.Random) -> bytes:
    for _ in range(rng.randint(1, 10)):
        data = _insert(data, rng, rng.choice(_ANSI))
    return data


def nul_inject(data: bytes, rng: random.Random) -> bytes:
    for _ in range(rng.randint(1, 4)):
        data = _insert(data, rng, b"\x00" * rng.randint(1, 16))
    return data


def huge_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    filler = rng.choice((b"A", b"{", b"[", b"(", b"9", b" ", b"'"))
    lines[i] = lines[i] + filler * rng.choice((HUGE_LINE_CHARS, 20_000, 1_500))
    return _join(lines)


def invalid_utf8(data: bytes, rng: random.Random) -> bytes:
    for _ in range(rng.randint(1, 5)):
        data = _insert(data, rng, rng.choice(_INVALID_UTF8))
    return data


def number_swap(data: bytes, rng: random.Random) -> bytes:
    spans = [m.span() for m in _NUMBER_RE.finditer(data)]
    if not spans:
        return _insert(data, rng, rng.choice(BAD_NUMBERS))
    picked = sorted(rng.sample(spans, min(len(spans), rng.randint(1, 6))), reverse=True)
    for start, end in picked:  # right to left so earlier spans stay valid
        data = data[:start] + rng.choice(BAD_NUMBERS) + data[end:]
    return data


def delete_span(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    i = rng.randrange(len(data))
    return data[:i] + data[i + rng.randint(1, 64) :]


def splice_self(data: bytes, rng: random.Random) -> bytes:
    """Copy a random chunk of the file elsewhere (nested/duplicated structure)."""
    if not data:
        return data
    i = rng.randrange(len(data))
    chunk = data[i : i + rng.randint(1, 400)]
    return _insert(data, rng, chunk)


OPERATIONS: dict[str, Op] = {
    "bit_flip": bit_flip,
    "line_drop": line_drop,
    "line_dup": line_dup,
    "truncate": truncate,
    "truncate_lines": truncate_lines,
    "shuffle_lines": shuffle_lines,
    "crlf": crlf,
    "ansi": ansi_inject,
    "nul": nul_inject,
    "huge_line": huge_line,
    "invalid_utf8": invalid_utf8,
    "number_swap": number_swap,
    "delete_span": delete_span,
    "splice_self": splice_self,
}
_NAMES = tuple(OPERATIONS)


def mutate(data: bytes, seed: int, *, max_ops: int = 3) -> tuple[bytes, tuple[str, ...]]:
    """Apply 1..``max_ops`` seeded operations to ``data``; returns (bytes, operation names)."""
    rng = random.Random(seed)
    names = tuple(rng.choice(_NAMES) for _ in range(rng.randint(1, max_ops)))
    for name in names:
        data = OPERATIONS[name](data, rng)
    return data, names
