"""ShardPanel: per-shard progress of a sharded run — state, GPU, host, configs done, failures, what runs now.

Contract: fed :class:`~cutile_workbench.run.scaleout.progress.ShardProgress` copies
(``ProgressBoard.snapshot()``) through :meth:`ShardPanel.show`; renders one row per shard (index
order) and a totals line (configs finished / planned over every shard, failed, shards complete).
A shard's GPU reads ``<slot entry> <model>`` (``model unknown`` where neither the pytest child
nor nvidia-smi could name it, ``no GPU pinned`` for an unpinned slot); the running config is its
id token and params. Nothing here reads files or talks to a GPU: the screen feeds it data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from cutile_workbench.model import ShardProgress, split_nodeid

#: shard state → component class (the colour of its state cell)
STATE_CLASS = {
    "running": "shardpanel--running",
    "complete": "shardpanel--complete",
    "failed": "shardpanel--bad",
    "incomplete": "shardpanel--bad",
    "cancelled": "shardpanel--bad",
}


class ShardPanel(Static):
    """One row per shard of a sharded run (see the module contract)."""

    DEFAULT_CSS = """
    ShardPanel { height: auto; width: 1fr; }
    ShardPanel > .shardpanel--running { color: $accent; text-style: bold; }
    ShardPanel > .shardpanel--complete { color: $success; }
    ShardPanel > .shardpanel--bad { color: $error; text-style: bold; }
    ShardPanel > .shardpanel--muted { color: $text-muted; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "shardpanel--running",
        "shardpanel--complete",
        "shardpanel--bad",
        "shardpanel--muted",
    }

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.shards: tuple[ShardProgress, ...] = ()

    def on_mount(self) -> None:
        self.show(self.shards)

    def show(self, shards: Sequence[ShardProgress]) -> None:
        self.shards = tuple(shards)
        if self.is_mounted:
            self.update(self.render_shards())

    def _style(self, cls: str) -> str:
        return str(self.get_component_rich_style(cls, partial=True))

    def render_shards(self) -> Table | Text:
        muted = self._style("shardpanel--muted")
        if not self.shards:
            return Text("planning: collecting the configs (pytest --collect-only)…", style=muted)
        table = Table(
            box=None,
            expand=True,
            pad_edge=False,
            show_edge=False,
            header_style="bold",
            caption=self.totals(),
            caption_justify="left",
            caption_style=muted,
        )
        for name, kw in (
            ("shard", {"justify": "right"}),
            ("state", {}),
            ("GPU", {"ratio": 2}),
            ("host", {}),
            ("done", {"justify": "right"}),
            ("failed", {"justify": "right"}),
            ("now", {"ratio": 3}),
        ):
            table.add_column(name, no_wrap=True, overflow="ellipsis", **kw)
        for s in self.shards:
            state = Text(
                s.state, style=self._style(STATE_CLASS[s.state]) if s.state in STATE_CLASS else muted
            )
            if s.detail and s.state not in ("running", "complete"):
                state.append(f" ({s.detail.splitlines()[0]})", style=muted)
            table.add_row(
                str(s.index),
                state,
                self._gpu(s),
                s.host or "—",
                f"{s.finished}/{s.planned}",
                Text(str(s.failed), style=self._style("shardpanel--bad") if s.failed else muted),
                self._now(s.running),
            )
        return table

    @staticmethod
    def _gpu(s: ShardProgress) -> str:
        if not s.device:
            return "—" if s.state == "pending" else "no GPU pinned"
        model = s.gpu if s.gpu and s.gpu != "unknown" else "model unknown"
        return f"{s.device} {model}"

    @staticmethod
    def _now(nodeid: str | None) -> str:
        if not nodeid:
            return ""
        _func, token, params = split_nodeid(nodeid)
        return f"{token} {params}" if token else nodeid

    def totals(self) -> str:
        done = sum(s.finished for s in self.shards)
        planned = sum(s.planned for s in self.shards)
        failed = sum(s.failed for s in self.shards)
        complete = sum(1 for s in self.shards if s.state == "complete")
        return (
            f"{done}/{planned} configs finished, {failed} failed · {complete}/{len(self.shards)} shard(s) "
            "complete"
        )
