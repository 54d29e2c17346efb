"""Terminal-noise removal shared by the perf-log parser and sanitizer.

Contract: :func:`clean_text` turns raw captured terminal output (``tee`` of ``pytest --color=yes``,
a log copied from Windows, a child killed mid-line) into plain ``\\n``-separated text: ANSI CSI/OSC
escape sequences removed, ``\\r\\n`` and lone ``\\r`` turned into ``\\n``, NUL bytes dropped.
Nothing else is changed, so line numbers of the cleaned text equal those of the raw file for
every line that did not contain a lone ``\\r`` (progress-bar redraws).
"""

from __future__ import annotations

import re

# CSI (ESC [ params intermediates final), OSC (ESC ] ... BEL or ESC \), and 2-byte ESC sequences.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b[@-Z\\-_]"
)


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def clean_text(text: str) -> str:
    """ANSI stripped, newlines normalized, NULs dropped."""
    return normalize_newlines(strip_ansi(text)).replace("\x00", "")


def decode_bytes(raw: bytes) -> str:
    """UTF-8 with replacement characters for anything undecodable (never raises)."""
    return raw.decode("utf-8", errors="replace")
