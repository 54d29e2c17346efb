"""Work-arounds for Textual 8.2.8 (pinned exactly in pyproject.toml): re-check each on an upgrade.

Contract: :func:`apply` is called once when the app module loads; it is idempotent.

- ``Tabs._on_resize`` (also ``ContentTabs``, inside every ``TabbedContent``) queries its
  ``Underline`` child; a resize that arrives while the app tears down during the start-up
  pre-warm finds it already removed and raises ``NoMatches`` — seen as an error on Ctrl+Q (or a
  test's exit) in the first second, on the Ratios variant tabs and the Report preview's tabs. The
  patched method does nothing when the child is gone: there is nothing left to highlight.
"""

from __future__ import annotations

from typing import Any

_APPLIED = "_workbench_resize_fix"


def apply() -> None:
    from textual.css.query import NoMatches
    from textual.widgets._tabs import Tabs

    if getattr(Tabs, _APPLIED, False):
        return
    original = Tabs._on_resize

    def _on_resize(self: Any) -> None:
        try:
            original(self)
        except NoMatches:
            pass  # torn down mid-resize: the underline is gone, nothing to move

    Tabs._on_resize = _on_resize  # type: ignore[method-assign]
    setattr(Tabs, _APPLIED, True)
