"""Provenance complete (issue 36): tileiras, ptxas, cutile-rs, cuda-tile, cupti in every run's provenance,
in session.json and agent_e.md; ``history`` names a toolchain change as the likely cause.

Real: the TileGym snapshot (75a1430) for the cutile-rs crate pin, the recorded matmul session for the
history, the runner's own fixture suite for a real pytest child. SYNTHETIC: the ``tileiras`` and
``ptxas`` on PATH (shell scripts printing version lines in ptxas's format; no CUDA toolkit here), a
``Cargo.lock`` with a git source, and the follow-up runs of the history test (history_helpers).
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest
from history_helpers import SP_2048, candidate_configs, copy_matmul, derived_entry, provenance, utc

from cutile_workbench.cli import main
from cutile_workbench.history.compat import compare_provenance
from cutile_workbench.history.provenance import HarnessInfo, provenance_from_dict, static_provenance
from cutile_workbench.history.provenance.toolchain import KERNELS_CRATE, toolchain_facts
from cutile_workbench.history.query import open_history

ROOT = Path(__file__).resolve().parents[2]
TILEGYM = ROOT / ".fetched" / "TileGym"
needs_tilegym = pytest.mark.skipif(
    not (TILEGYM / KERNELS_CRATE / "Cargo.toml").is_file(),
    reason="TileGym snapshot absent (.fetched/TileGym)",
)
TILEIRAS_LINE = "Cuda compilation tools, release 13.4, V13.4.92"  # SYNTHETIC, ptxas's format


def _tool(bin_dir: Path, name: str, *lines: str) -> Path:
    """SYNTHETIC ``name --version`` printing ``lines``."""
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / name
    exe.write_text("#!/bin/sh\n" + "".join(f"echo '{ln}'\n" for ln in lines))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


@pytest.fixture
def tools(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    _tool(bin_dir, "tileiras", "tileiras: NVIDIA (R) Tile IR optimizing assembler", TILEIRAS_LINE)
    _tool(
        bin_dir,
        "ptxas",
        "ptxas: NVIDIA (R) Ptx optimizing assembler",
        "Cuda compilation tools, release 13.4, V13.4.93",
        "Build cuda_13.4.r13.4/compiler.1_0",
    )
    return {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin"}


@needs_tilegym
def test_toolchain_facts_of_the_real_tilegym_tree(tools: dict[str, str]) -> None:
    facts, unknown = toolchain_facts(tilegym_dir=TILEGYM, env=tools, cuda_tile="1.7.0")
    assert facts["tileiras"] == TILEIRAS_LINE
    assert (
        facts["ptxas"] == "Cuda compilation tools, release 13.4, V13.4.93"
    )  # the release line, not the build line
    assert facts["cutile_rs"] == "0.2.0"  # cutile = "=0.2.0" in the snapshot's Cargo.toml
    assert facts["cuda_tile"] == "1.7.0"
    assert "crates.io" in unknown["cutile_rs_commit"]


def test_a_git_sourced_cutile_crate_records_its_commit(tmp_path: Path, tools: dict[str, str]) -> None:
    crate = tmp_path / "tg" / KERNELS_CRATE
    crate.mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[dependencies]\ncutile = "=0.2.0"\n')
    sha = "0123456789abcdef0123456789abcdef01234567"
    (crate / "Cargo.lock").write_text(  # SYNTHETIC
        f'[[package]]\nname = "cutile"\nversion = "0.2.1"\nsource = "git+https://github.com/NVlabs/cutile-rs?rev=x#{sha}"\n'
    )
    facts, _unknown = toolchain_facts(tilegym_dir=tmp_path / "tg", env=tools)
    assert facts["cutile_rs"] == "0.2.1" and facts["cutile_rs_commit"] == sha


def test_missing_tools_are_unknown_with_the_reason(tmp_path: Path) -> None:
    facts, unknown = toolchain_facts(tilegym_dir=None, env={"PATH": str(tmp_path)})
    assert "tileiras" not in facts and "not found" in unknown["tileiras"]
    assert unknown["cutile_rs"] == "not a TileGym run"


@needs_tilegym
def test_static_provenance_carries_the_toolchain_and_round_trips(
    tools: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", tools["PATH"])
    prov = static_provenance(tilegym_dir=TILEGYM, harness=HarnessInfo("workbench"))
    assert prov.toolchain["tileiras"] == TILEIRAS_LINE and prov.toolchain["cutile_rs"] == "0.2.0"
    assert "toolchain.cutile_rs_commit" in prov.unknown
    assert provenance_from_dict(json.loads(json.dumps(prov.to_dict()))) == prov


def test_a_toolchain_difference_is_a_condition_flag() -> None:
    older = replace(provenance(utc("2026-12-08 10:00")), toolchain={"tileiras": "release 13.4, V13.4.92"})
    newer = replace(provenance(utc("2026-12-15 10:00")), toolchain={"tileiras": "release 13.5, V13.5.10"})
    cond = compare_provenance(newer, older, a_label="newer run", b_label="older run")
    assert [d.text for d in cond.flags] == [
        "tileiras: newer run release 13.5, V13.5.10 vs older run release 13.4, V13.4.92"
    ]
    assert not compare_provenance(older, provenance(utc("2026-12-01 10:00")), a_label="a", b_label="b").flags


def test_history_names_a_toolchain_change_as_the_likely_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = copy_matmul(tmp_path)
    store, _report = open_history(paths, source="out_root", persist=True)
    with store:
        base = candidate_configs(store)
        w2, w3 = utc("2026-12-08 10:00"), utc("2026-12-15 10:00")
        p2 = replace(provenance(w2), toolchain={"tileiras": "release 13.4, V13.4.92", "cutile_rs": "0.2.0"})
        p3 = replace(provenance(w3), toolchain={"tileiras": "release 13.5, V13.5.10", "cutile_rs": "0.2.0"})
        store.add(derived_entry(base, kernel="matmul", tag="w2", at=w2, prov=p2, seed=2))
        store.add(
            derived_entry(base, kernel="matmul", tag="w3", at=w3, prov=p3, scale={SP_2048: 1.12}, seed=3)
        )
    assert main(["history", "matmul", "--out-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    sp = out[out.index(SP_2048) :].split("\n\n")[0]
    regression = next(ln for ln in sp.splitlines() if "+ regression" in ln)
    assert "(likely cause: the toolchain changed (tileiras), not necessarily the kernel)" in regression
    line = next(ln for ln in out.splitlines() if ln.startswith("⚠ run "))
    assert "tileiras: newer run release 13.5, V13.5.10 vs older run release 13.4, V13.4.92" in line
    assert main(["history", "matmul", "--out-root", str(tmp_path), "--json"]) == 0
    assert "release 13.5, V13.5.10" in capsys.readouterr().out  # every run's full provenance
    # configs that did not move are "same", with no cause to name
    assert "likely cause" not in out.replace(regression, "")


@needs_tilegym
def test_a_runs_session_json_and_agent_e_name_the_toolchain(tmp_path: Path, tools: dict[str, str]) -> None:
    from test_runner import make_suite, spec_for

    from cutile_workbench.artifacts.layout import KernelPaths
    from cutile_workbench.run.results import write_results
    from cutile_workbench.run.runner import run
    from cutile_workbench.stages.e.report import session_facts

    suite = make_suite(tmp_path)
    out = KernelPaths.under(tmp_path / "out", "rms_norm")
    spec = spec_for(
        suite,
        k_expr="cutile and 4096",
        env={**tools, "PATH": tools["PATH"] + os.pathsep + os.environ["PATH"], "TILEGYM_PATH": str(TILEGYM)},
    )
    result = run(spec, out)
    write_results(result, spec, out)
    meta = json.loads(out.session_json.read_text())
    block = meta["runs"]["candidate"]["provenance"]
    assert block["tileiras"] == TILEIRAS_LINE and block["cutile_rs"] == "0.2.0"
    assert block["ptxas"] == "Cuda compilation tools, release 13.4, V13.4.93"
    assert "cutile_rs_commit" in block["unknown"]
    # the snapshot is an unpacked tarball, not a git checkout: its commit is unknown, and says why
    assert block["tilegym_commit"] is None and "not a git checkout" in block["unknown"]["tilegym_commit"]
    facts = session_facts(meta, {"cutile"})
    assert facts.tileiras == TILEIRAS_LINE
    assert (
        facts.toolchain is not None
        and "cutile-rs 0.2.0" in facts.toolchain
        and "ptxas Cuda" in facts.toolchain
    )
