"""Both sides' autotune tables, read from the run's ``autotune`` events (issue 32).

Contract (pure): :func:`tables_from_events` groups the ``autotune`` events
(:mod:`cutile_workbench.run.capture.autotune_tables`) by config params and side into
:class:`AutotuneTable`: every timed config, the winner (lowest time), the runner-up and its margin.
The winner is **unstable** when the runner-up is within the two measurements' noise (the sum of their
95% half-intervals): the tuner could as well have picked the other one. A table whose errors are not
known says so (``stable`` is None). Malformed rows are skipped, never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TunedConfig:
    config: str
    mean_us: float
    error_us: float | None
    samples: int | None


@dataclass(frozen=True)
class AutotuneTable:
    params: str
    side: str  # "reference" | "candidate"
    kernel: str
    rows: tuple[TunedConfig, ...]
    failures: int = 0

    @property
    def ranked(self) -> list[TunedConfig]:
        return sorted(self.rows, key=lambda r: r.mean_us)

    @property
    def winner(self) -> TunedConfig | None:
        return self.ranked[0] if self.rows else None

    @property
    def runner_up(self) -> TunedConfig | None:
        r = self.ranked
        return r[1] if len(r) > 1 else None

    @property
    def margin_us(self) -> float | None:
        w, r = self.winner, self.runner_up
        return r.mean_us - w.mean_us if w is not None and r is not None else None

    @property
    def noise_us(self) -> float | None:
        w, r = self.winner, self.runner_up
        if w is None or r is None or w.error_us is None or r.error_us is None:
            return None
        return w.error_us + r.error_us

    @property
    def stable(self) -> bool | None:
        """False: "winner unstable" (margin within the noise); None: noise unknown or one config."""
        if self.margin_us is None or self.noise_us is None:
            return None
        return self.margin_us > self.noise_us

    @property
    def text(self) -> str:
        w, r = self.winner, self.runner_up
        if w is None:
            return f"{self.side} autotune ({self.kernel}): no config timed"
        head = f"{self.side} autotune ({self.kernel}, {len(self.rows)} config(s)"
        head += f", {self.failures} failed)" if self.failures else ")"
        text = f"{head}: winner `{w.config}` {w.mean_us:.2f} us"
        if r is None:
            return text + " (the only config)"
        pct = 100.0 * (self.margin_us or 0.0) / w.mean_us if w.mean_us else 0.0
        text += f"; runner-up `{r.config}` {r.mean_us:.2f} us (+{pct:.1f} %"
        if self.noise_us is not None:
            text += f", noise ±{self.noise_us:.2f} us"
        text += ")"
        if self.stable is False:
            text += " — winner unstable (the margin is inside the noise)"
        elif self.stable is None:
            text += " — noise unknown"
        return text


def _row(d: Any) -> TunedConfig | None:
    if not isinstance(d, dict):
        return None
    cfg, mean = d.get("config"), d.get("mean_us")
    if not isinstance(cfg, str) or not isinstance(mean, (int, float)) or isinstance(mean, bool) or mean < 0:
        return None
    err = d.get("error_us")
    n = d.get("samples")
    return TunedConfig(
        cfg,
        float(mean),
        float(err) if isinstance(err, (int, float)) and not isinstance(err, bool) else None,
        int(n) if isinstance(n, int) and not isinstance(n, bool) else None,
    )


def tables_from_events(events: Iterable[Any]) -> dict[tuple[str, str], AutotuneTable]:
    """``{(params, side): AutotuneTable}`` (Event objects or plain dicts); later timings of the same
    config replace earlier ones (a re-tune)."""
    acc: dict[tuple[str, str], dict[str, Any]] = {}
    for ev in events:
        kind = getattr(ev, "event", None) or (ev.get("event") if isinstance(ev, dict) else None)
        if kind != "autotune":
            continue
        fields = getattr(ev, "fields", None) or (ev if isinstance(ev, dict) else {})
        params, side = fields.get("params"), fields.get("side")
        if not isinstance(params, str) or side not in ("reference", "candidate"):
            continue
        slot = acc.setdefault(
            (params, side), {"kernel": str(fields.get("kernel") or "?"), "rows": {}, "failures": 0}
        )
        fails = fields.get("failures")
        if isinstance(fails, int) and not isinstance(fails, bool):
            slot["failures"] += fails
        for raw in fields.get("rows") or ():
            row = _row(raw)
            if row is not None:
                slot["rows"][row.config] = row
    return {
        key: AutotuneTable(key[0], key[1], v["kernel"], tuple(v["rows"].values()), v["failures"])
        for key, v in acc.items()
    }
