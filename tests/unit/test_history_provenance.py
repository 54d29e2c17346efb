"""Provenance: NVML decoding and collection, git commits read without git, JSON round trip, events.

Real: the plugin's provenance events from a real pytest child, this repository's own commit, the
NVML "unavailable" path on this machine, and (``@pytest.mark.gpu``) NVML on the H200. SYNTHETIC
(labelled per test): a fake ``.git`` layout, a fake TileGym tree with a stand-in library file, and
hand-made clock snapshots for the throttle logic.
"""

from __future__ import annotations

import hashlib
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from perflog_helpers import load_suite_runner

import cutile_workbench
from cutile_workbench.artifacts.events import Event, read_events
from cutile_workbench.errors import InputError
from cutile_workbench.history.provenance import (
    CUTILE_RS_LIB,
    HarnessInfo,
    Provenance,
    collect_provenance,
    provenance_from_dict,
    provenance_from_events,
    read_git_commit,
)
from cutile_workbench.history.provenance.gpu import (
    THROTTLE_REASONS,
    ClockSnapshot,
    GpuIdentity,
    decode_clock_event_reasons,
    read_gpu,
)

ROOT = Path(__file__).resolve().parents[2]


def snap(
    reasons: tuple[str, ...] | None = (),
    sm: int | None = 1980,
    power_v: int | None = 0,
    thermal_v: int | None = 0,
) -> ClockSnapshot:
    return ClockSnapshot(
        taken_at=1.0,
        sm_clock_mhz=sm,
        mem_clock_mhz=3201,
        graphics_clock_mhz=sm,
        max_sm_clock_mhz=1980,
        clock_event_reasons=reasons,
        temperature_c=40,
        power_w=120.0,
        power_limit_w=700.0,
        pstate=0,
        power_violation_ns=power_v,
        thermal_violation_ns=thermal_v,
    )


H200 = GpuIdentity(
    name="NVIDIA H200",
    uuid="GPU-1111",
    pci_bus_id="00000000:19:00.0",
    driver_version="580.159.04",
    cuda_driver_version="13.0",
    mig_mode="disabled",
    mig_pending="disabled",
    selected_by="test",
)


# --------------------------------------------------------------------------- NVML


def test_clock_event_reasons_decode_to_names():
    assert decode_clock_event_reasons(0) == ()
    assert decode_clock_event_reasons(0x1 | 0x4 | 0x40) == ("gpu_idle", "sw_power_cap", "hw_thermal_slowdown")
    assert decode_clock_event_reasons(0x400 | 0x2) == ("applications_clocks_setting", "unknown_0x400")
    assert "gpu_idle" not in THROTTLE_REASONS and "sw_thermal_slowdown" in THROTTLE_REASONS


def test_without_nvml_the_reading_says_why():
    """REAL: no GPU here (CI: no pynvml either); the reason is reported, no value is invented."""
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        pytest.skip("NVML works on this machine (the gpu test covers it)")
    except ImportError:
        pass
    except Exception:  # pynvml installed but no driver: the case this test is about
        pass
    reading = read_gpu()
    assert reading.identity is None and reading.snapshot is None
    assert reading.unavailable is not None and reading.unavailable.startswith("unavailable: ")


@pytest.mark.gpu
def test_nvml_reads_the_gpu():
    """REAL (H200): identity, clocks and decoded reasons come from NVML."""
    pytest.importorskip("pynvml")
    reading = read_gpu()
    assert reading.unavailable is None, reading.unavailable
    assert reading.identity is not None and reading.identity.name and reading.identity.uuid
    assert reading.identity.driver_version and reading.identity.cuda_driver_version
    assert reading.identity.mig_mode in ("enabled", "disabled", None)
    s = reading.snapshot
    assert s is not None and s.sm_clock_mhz and s.sm_clock_mhz > 0 and s.mem_clock_mhz and s.mem_clock_mhz > 0
    assert isinstance(s.clock_event_reasons, tuple) and s.power_violation_ns is not None
    prov = collect_provenance("start", rootdir=ROOT, workbench_harness=True)
    assert prov.gpu is not None and prov.before is not None and "gpu" not in prov.unknown


# --------------------------------------------------------------------------- git, library, static facts


def test_this_checkouts_commit_is_read_without_git():
    """REAL: the commit of this repository, compared with ``git rev-parse HEAD``."""
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    proc = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip("not a git checkout")
    sha, how = read_git_commit(ROOT)
    assert sha == proc.stdout.strip(), how


def test_git_layouts(tmp_path):
    """SYNTHETIC .git trees: loose ref, packed ref, detached HEAD, worktree pointer, no checkout."""
    a, b = "a" * 40, "b" * 40
    repo = tmp_path / "repo"
    (repo / ".git" / "refs" / "heads").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / ".git" / "refs" / "heads" / "main").write_text(a + "\n")
    assert read_git_commit(repo) == (a, "refs/heads/main")
    (repo / ".git" / "refs" / "heads" / "main").unlink()
    (repo / ".git" / "packed-refs").write_text(f"# pack-refs with: peeled\n{b} refs/heads/main\n")
    assert read_git_commit(repo) == (b, "refs/heads/main")
    (repo / ".git" / "HEAD").write_text(a + "\n")
    assert read_git_commit(repo) == (a, "detached HEAD")
    wt = tmp_path / "wt"
    gitdir = repo / ".git" / "worktrees" / "wt"
    gitdir.mkdir(parents=True)
    (gitdir / "HEAD").write_text("ref: refs/heads/main\n")
    (gitdir / "commondir").write_text("../..\n")
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {gitdir}\n")
    assert read_git_commit(wt) == (b, "refs/heads/main")  # packed in the common dir
    sha, why = read_git_commit(tmp_path / "plain")
    assert sha is None and "not a git checkout" in why


def test_static_facts_of_a_tilegym_tree(tmp_path):
    """SYNTHETIC TileGym tree (src/tilegym, a .git, a stand-in library file of known bytes)."""
    tg = tmp_path / "TileGym"
    (tg / "src" / "tilegym").mkdir(parents=True)
    (tg / ".git").mkdir()
    (tg / ".git" / "HEAD").write_text("c" * 40 + "\n")
    lib = tg / CUTILE_RS_LIB
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"\x7fELF stand-in")
    env = {"CUPTI": "1", "WARMUP": "100", "WORKBENCH_CUPTI_WINDOW": "session", "HOME": "/root"}
    prov = collect_provenance("start", rootdir=tg / "tests", workbench_harness=True, env=env)
    assert prov.tilegym_dir == str(tg) and prov.tilegym_commit == "c" * 40
    assert prov.cutile_rs_lib_sha256 == hashlib.sha256(b"\x7fELF stand-in").hexdigest()
    assert prov.harness == HarnessInfo(
        "workbench",
        {"CUPTI": "1", "WARMUP": "100", "WORKBENCH_CUPTI_WINDOW": "session"},
        prov.harness.detail if prov.harness else "",
    )
    assert prov.workbench_version == cutile_workbench.__version__ and prov.host == socket.gethostname()
    assert prov.started_at is not None and "torch" in prov.unknown
    lib.unlink()
    other = collect_provenance("start", rootdir=tg, workbench_harness=False, env=env)
    assert other.cutile_rs_lib_sha256 is None and "not built" in other.unknown["cutile_rs_lib_sha256"]
    outside = collect_provenance("start", rootdir=tmp_path / "elsewhere", workbench_harness=False, env={})
    assert outside.tilegym_commit is None and "not a TileGym run" in outside.unknown["tilegym_commit"]


# --------------------------------------------------------------------------- dicts, throttling, events


def test_round_trip_and_malformed_dicts():
    prov = Provenance(
        source="live",
        gpu=H200,
        before=snap(("gpu_idle",)),
        after=snap(("sw_power_cap",)),
        harness=HarnessInfo("tilegym", {"CUPTI": "1"}),
        host="node7",
        started_at=10.0,
        finished_at=20.5,
        unknown={"torch": "not loaded"},
        origin={"gpu": "nvml"},
    )
    assert provenance_from_dict(prov.to_dict()) == prov
    bad = prov.to_dict()
    bad["gpu"]["name"] = 3
    with pytest.raises(InputError) as err:
        provenance_from_dict(bad, source="events.jsonl:4")
    assert err.value.key == "gpu.name" and "events.jsonl:4" in str(err.value)
    with pytest.raises(InputError, match="newer"):
        provenance_from_dict({**prov.to_dict(), "version": 99})


def test_throttling_evidence():
    """SYNTHETIC snapshots: reasons at either end, and violation counters that grew in between."""
    assert Provenance(source="live").throttling() is None
    assert Provenance(source="live", before=snap(("gpu_idle",)), after=snap()).throttling() == ()
    hot = Provenance(source="live", before=snap(), after=snap(("sw_thermal_slowdown", "sync_boost")))
    assert hot.throttling() == ("sw_thermal_slowdown@end",)
    capped = Provenance(source="live", before=snap(power_v=0), after=snap(power_v=2_500_000))
    assert capped.throttling() == ("power_violation_2.5ms",)  # between the snapshots, reasons were clean


def test_events_merge_start_and_finish():
    start = Provenance(
        source="live",
        gpu=H200,
        before=snap(),
        host="n1",
        started_at=1.0,
        unknown={"torch": "torch not imported yet", "after": "x"},
    )
    finish = Provenance(
        source="live",
        gpu=H200,
        after=snap(sm=1755),
        torch="2.11.0+cu130",
        torch_cuda="13.0",
        finished_at=9.0,
        unknown={},
    )
    evs = [
        Event("provenance", 1.0, {"phase": "start", "provenance": start.to_dict()}, 1),
        Event("provenance", 9.0, {"phase": "finish", "provenance": finish.to_dict()}, 5),
    ]
    merged = provenance_from_events(evs)
    assert merged is not None and merged.before == start.before and merged.after == finish.after
    assert merged.torch == "2.11.0+cu130" and merged.started_at == 1.0 and merged.finished_at == 9.0
    assert "torch" not in merged.unknown and "after" not in merged.unknown
    # the start snapshot was of another GPU than the one torch used: it is dropped, with the reason
    other = GpuIdentity(**{**H200.__dict__, "uuid": "GPU-2222"})
    evs[1] = Event(
        "provenance",
        9.0,
        {"phase": "finish", "provenance": Provenance(source="live", gpu=other, after=snap()).to_dict()},
        5,
    )
    moved = provenance_from_events(evs)
    assert (
        moved is not None
        and moved.gpu == other
        and moved.before is None
        and "GPU-2222" in moved.unknown["before"]
    )
    assert provenance_from_events([Event("record", 1.0, {})]) is None


def test_plugin_emits_provenance_at_start_and_finish(monkeypatch):
    """REAL pytest child (fixture suite) with --workbench-events: two provenance events."""
    monkeypatch.setenv("WORKBENCH_CUPTI_WINDOW", "session")
    monkeypatch.setenv("CUPTI", "1")
    run = load_suite_runner().run_suite(("-q", "-k", "4096-1024 and triton"), events=True)
    evs = read_events(run.events)
    provs = [e for e in evs if e.event == "provenance"]
    assert [e["phase"] for e in provs] == ["start", "finish"]
    assert evs[0].event == "session_start" and evs[1] is provs[0] and evs[-2] is provs[1]
    merged = provenance_from_events(evs)
    assert merged is not None and merged.source == "live" and merged.host == socket.gethostname()
    assert merged.harness is not None and merged.harness.settings["WORKBENCH_CUPTI_WINDOW"] == "session"
    assert merged.harness.settings["CUPTI"] == "1" and merged.harness.name == "unknown"
    assert (
        merged.started_at is not None
        and merged.finished_at is not None
        and merged.started_at <= merged.finished_at
    )
    if merged.gpu is None:  # no GPU here: the reason, never a made-up value
        assert merged.unknown["gpu"].startswith("unavailable: ")
