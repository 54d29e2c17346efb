"""Demangle C++ kernel names with ``c++filt`` when present (cxxfilt is not available).

Contract: :func:`demangle` returns the demangled name, or None when the name is not mangled
(Triton/cuTile entries are plain names) or no demangler exists. Never raises.
"""

from __future__ import annotations

import functools
import shutil
import subprocess


@functools.lru_cache(maxsize=1)
def _cxxfilt() -> str | None:
    return shutil.which("c++filt") or shutil.which("llvm-cxxfilt")


@functools.lru_cache(maxsize=4096)
def demangle(name: str) -> str | None:
    """``_ZN2at6native…`` → ``void at::native::…``; None for plain or undemanglable names."""
    if not name.startswith("_Z"):
        return None
    tool = _cxxfilt()
    if tool is None:
        return None
    try:
        out = subprocess.run([tool, name], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    text = out.stdout.strip()
    return text if text and text != name else None
