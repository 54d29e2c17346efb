"""The footer's key widgets, built from public Textual data only (issue #34).

Textual's own key widget (``FooterKey``, with ``KeyGroup`` and ``FooterLabel``) lives in the private
``textual.widgets._footer``, and Textual's :class:`~textual.widgets.Footer` composes nothing until
its private ``_bindings_ready`` is set by the first ``bindings_updated`` signal, one pass AFTER the
first frame: the first frame showed an empty footer. These widgets carry the same type names, so
Footer's CSS (margins, the grouped and compact styles, the palette key docked right) styles them as
it styles its own, and :func:`footer_widgets` builds them from ``screen.active_bindings`` (public)
at compose time, so the first frame already shows the keys.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from itertools import groupby
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.binding import ActiveBinding, Binding
from textual.containers import HorizontalGroup
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Footer, Label


class KeyGroup(HorizontalGroup):
    """Keys of one binding group (``1-6``), followed by the group's :class:`FooterLabel`."""

    DEFAULT_CSS = """
    KeyGroup {
        width: auto;
    }
    """


class FooterLabel(Label):
    """The description of a binding group, after its keys."""


class FooterKey(Widget):
    """One key of the footer: the key in bold, its description after; a click runs the key.

    The look is Textual's footer key's (same CSS, same render); the state is public attributes
    (``key``, ``key_display``, ``description``, ``action``, ``enabled``)."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "footer-key--key",
        "footer-key--description",
    }

    DEFAULT_CSS = """
    FooterKey {
        width: auto;
        height: 1;
        text-wrap: nowrap;
        background: $footer-item-background;
        .footer-key--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
            padding: 0 1;
        }

        .footer-key--description {
            padding: 0 1 0 0;
            color: $footer-description-foreground;
            background: $footer-description-background;
        }

        &:hover {
            pointer: pointer;
            color: $footer-key-foreground;
            background: $block-hover-background;
        }

        &.-disabled {
            text-style: dim;
        }

        &.-compact {
            .footer-key--key {
                padding: 0;
            }
            .footer-key--description {
                padding: 0 0 0 1;
            }
        }
    }
    """

    compact = reactive(False)
    """Display compact style (the footer's own ``compact``, set by :func:`footer_widgets` and by the
    footer when it changes: ``data_bind`` binds to the active message pump, and the footer's
    first keys may be built while another node's handler runs)."""

    def __init__(
        self,
        key: str,
        key_display: str,
        description: str,
        action: str,
        *,
        enabled: bool = True,
        tooltip: str = "",
        classes: str = "",
        compact: bool = False,
    ) -> None:
        self.key = key
        self.key_display = key_display
        self.description = description
        self.action = action
        self.enabled = enabled
        if not enabled:
            classes += " -disabled"
        if compact:
            classes += " -compact"
        super().__init__(classes=classes)
        self.set_reactive(Widget.shrink, False)
        self.set_reactive(FooterKey.compact, compact)
        if tooltip:
            self.tooltip = tooltip

    def render(self) -> Text:
        key_style = self.get_component_rich_style("footer-key--key")
        description_style = self.get_component_rich_style("footer-key--description")
        key_padding = self.get_component_styles("footer-key--key").padding
        description_padding = self.get_component_styles("footer-key--description").padding
        if self.description:
            text = Text.assemble(
                (" " * key_padding.left + self.key_display + " " * key_padding.right, key_style),
                (
                    " " * description_padding.left + self.description + " " * description_padding.right,
                    description_style,
                ),
            )
        else:
            text = Text.assemble((self.key_display, key_style))
        text.stylize_before(self.rich_style)
        return text

    def on_mouse_down(self, event: events.MouseDown) -> None:
        """A click runs the key as if typed (a disabled key rings the bell), as Textual's footer."""
        if self.enabled:
            self.app.simulate_key(self.key)
        else:
            self.app.bell()

    def watch_compact(self, compact: bool) -> None:
        self.set_class(compact, "-compact")


def footer_widgets(footer: Footer, active: Mapping[str, ActiveBinding]) -> list[Widget]:
    """What Textual's Footer composes once its bindings are ready, from the screen's
    ``active_bindings``: the shown keys, one per action (an action's first binding), a group of two
    or more keys as a :class:`KeyGroup` and its label, then the command palette's key when the
    footer shows it."""
    app = footer.app
    by_action: defaultdict[str, list[tuple[Binding, bool, str]]] = defaultdict(list)
    for _node, binding, enabled, tooltip in active.values():
        if binding.show:
            by_action[binding.action].append((binding, enabled, tooltip))
    footer.styles.grid_size_columns = len(by_action)
    out: list[Widget] = []
    for group, members in groupby(by_action.values(), lambda bindings: bindings[0][0].group):
        entries = [bindings[0] for bindings in members]
        if group is not None and len(entries) > 1:
            keys = [
                FooterKey(
                    binding.key,
                    app.get_key_display(binding),
                    "",
                    binding.action,
                    enabled=enabled,
                    tooltip=tooltip or binding.description,
                    classes="-grouped",
                    compact=footer.compact,
                )
                for binding, enabled, tooltip in entries
            ]
            out.append(KeyGroup(*keys, classes="-compact" if group.compact else ""))
            out.append(FooterLabel(group.description))
            continue
        out.extend(
            FooterKey(
                binding.key,
                app.get_key_display(binding),
                binding.description,
                binding.action,
                enabled=enabled,
                tooltip=tooltip,
                compact=footer.compact,
            )
            for binding, enabled, tooltip in entries
        )
    if footer.show_command_palette and app.ENABLE_COMMAND_PALETTE:
        palette = active.get(app.COMMAND_PALETTE_BINDING)
        if palette is not None:
            _node, binding, enabled, _tooltip = palette
            out.append(
                FooterKey(
                    binding.key,
                    app.get_key_display(binding),
                    binding.description,
                    binding.action,
                    enabled=enabled,
                    tooltip=binding.tooltip or binding.description,
                    classes="-command-palette",
                    compact=True,  # as Textual's: its palette key is not bound to the footer's compact
                )
            )
    return out
