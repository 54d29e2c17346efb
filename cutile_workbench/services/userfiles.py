"""Files the user names for a face (a keymap, a config file): read whole, refused when not regular.

Contract: :func:`read_regular_text` is :func:`cutile_workbench.artifacts.confine.read_regular_text`
(one implementation: a FIFO, device or directory is refused unread, a file over ``cap`` bytes too,
each as an ``InputError`` naming the file), re-exported so the faces reach it through a service.
"""

from __future__ import annotations

from cutile_workbench.artifacts.confine import read_regular_text as read_regular_text

__all__ = ["read_regular_text"]
