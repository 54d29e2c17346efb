"""The per-config file keeps each entry as its encoded text (issue 31): decoded only when asked, a bad
entry a miss (recomputed), never trusted and never a crash. Values are SYNTHETIC (plain data and a
real dataclass of the package); the file format is the real one written by ConfigCache.flush."""

from __future__ import annotations

from pathlib import Path

import pytest

from cutile_workbench.artifacts import config_cache, derive_cache
from cutile_workbench.artifacts.config_cache import ConfigCache
from cutile_workbench.evidence.search_space import TuneConfig


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(tmp_path / "cache"))
    config_cache.forget()


def _reopen() -> ConfigCache:
    config_cache.forget()  # what a new process sees
    return ConfigCache.open("test-kind", "/k")


def test_entries_round_trip_and_only_put_entries_are_encoded(monkeypatch: pytest.MonkeyPatch) -> None:
    c = ConfigCache.open("test-kind", "/k")
    c.put("a", "da", {"x": [1, 2.5]})
    c.put("b", "db", TuneConfig.of({"TILE_M": 64}, "src"))
    c.flush()
    c = _reopen()
    assert c.get("a", "da") == {"x": [1, 2.5]}
    assert c.get("b", "db") == TuneConfig.of({"TILE_M": 64}, "src")
    assert c.get("a", "other digest") is None
    encoded: list[object] = []
    real = config_cache._encode_entry
    monkeypatch.setattr(config_cache, "_encode_entry", lambda v: encoded.append(v) or real(v))
    c = _reopen()
    c.put("a", "da2", {"x": [3]})
    c.flush()  # b is written back as the text it was read as
    assert encoded == [{"x": [3]}]
    c = _reopen()
    assert c.get("a", "da2") == {"x": [3]} and c.get("b", "db") == TuneConfig.of({"TILE_M": 64}, "src")


@pytest.mark.parametrize("text", ["{not json", "NaN", '{"$dc": "builtins.object"}', "1e999"])
def test_a_bad_entry_is_a_miss_and_the_others_stand(text: str) -> None:
    c = ConfigCache.open("test-kind", "/k")
    c.put("good", "d", [1, 2])
    c.flush()
    name = c.name
    doc = {
        "version": config_cache.VERSION,
        "entries": {"good": {"digest": "d", "text": "[1,2]"}, "bad": {"digest": "d", "text": text}},
    }
    assert derive_cache.store_value("test-kind", name, doc)
    c = _reopen()
    assert c.get("bad", "d") is None
    assert c.get("good", "d") == [1, 2]
    c.put("bad", "d", [3])  # the caller recomputes and replaces it
    c.flush()
    assert _reopen().get("bad", "d") == [3]
