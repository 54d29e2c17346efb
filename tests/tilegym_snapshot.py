"""The TileGym snapshot the parity tests read: where it is, how it gets there, when its absence fails.

Contract:
- ``SNAPSHOT`` is ``<repo>/.fetched/TileGym`` (git-ignored); it counts as present when its
  ``TILEGYM_COMMIT`` file is there (the tarball writes that file; a half-unpacked tree has none
  because the tarball is unpacked beside it and renamed into place only when complete).
- ``ensure_snapshot()`` unpacks ``tilegym-75a1430.tar.xz`` into ``.fetched/`` when no snapshot is
  there. The tarball is ``$WORKBENCH_TILEGYM_TARBALL`` if set, else ``../shared/tilegym/…`` beside
  the repository (where CI's fresh clone finds the read-only shared folder). No tarball → nothing
  happens here and the parity tests skip, unless the snapshot is *required*.
- Required (``WORKBENCH_REQUIRE_TILEGYM=1``, set by ``.ci/run``): a missing tarball is an error, and
  every test that skips with a reason naming the TileGym snapshot is turned into a failure by the
  conftest hook (``is_snapshot_skip``), so CI cannot go green without the real-TileGym checks.

Stdlib only: ``.ci/run`` runs it with the system ``python3`` before the venv exists
(``python3 tests/tilegym_snapshot.py``; exit 0 = snapshot present, 2 = could not provide it).
"""

from __future__ import annotations

import os
import shutil
import sys
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FETCHED = REPO / ".fetched"
SNAPSHOT = FETCHED / "TileGym"
TARBALL_NAME = "tilegym-75a1430.tar.xz"
DEFAULT_TARBALL = REPO.parent / "shared" / "tilegym" / TARBALL_NAME
REQUIRE_ENV = "WORKBENCH_REQUIRE_TILEGYM"
TARBALL_ENV = "WORKBENCH_TILEGYM_TARBALL"
#: every parity test's skip reason names the snapshot with these words (see the test files)
SKIP_MARK = "TileGym snapshot"


class SnapshotUnavailable(RuntimeError):
    """The snapshot is required but neither present nor unpackable (message says which file)."""


def snapshot_required(env: Mapping[str, str] = os.environ) -> bool:
    return env.get(REQUIRE_ENV, "") not in ("", "0")


def is_present(snapshot: Path = SNAPSHOT) -> bool:
    return (snapshot / "TILEGYM_COMMIT").is_file()


def tarball_path(env: Mapping[str, str] = os.environ) -> Path:
    return Path(env[TARBALL_ENV]) if env.get(TARBALL_ENV) else DEFAULT_TARBALL


def needs_test_files():  # -> pytest.MarkDecorator (pytest imported here: .ci/run runs this file with bare python3)
    """The skip mark of a test that reads TileGym's own test files (``tests/ops``) from the snapshot;
    its reason carries :data:`SKIP_MARK`, so under ``WORKBENCH_REQUIRE_TILEGYM`` the skip fails the run."""
    import pytest

    return pytest.mark.skipif(
        not (SNAPSHOT / "tests" / "ops").is_dir(), reason=f"{SKIP_MARK} absent (.fetched/TileGym)"
    )


def is_snapshot_skip(reason: str) -> bool:
    """True when a skip reason says the test lacks the TileGym snapshot."""
    return SKIP_MARK in reason


def ensure_snapshot(
    tarball: Path | None = None, fetched: Path = FETCHED, required: bool | None = None
) -> Path | None:
    """Unpack the snapshot into ``fetched`` unless it is there; its path, or None when unavailable.

    Raises ``SnapshotUnavailable`` when ``required`` (default: the environment says so) and the
    snapshot can be neither found nor unpacked.
    """
    required = snapshot_required() if required is None else required
    snapshot = fetched / "TileGym"
    if is_present(snapshot):
        return snapshot
    tarball = tarball or tarball_path()
    if not tarball.is_file():
        if required:
            raise SnapshotUnavailable(
                f"TileGym snapshot required ({REQUIRE_ENV}=1) but {snapshot} is absent "
                f"and {tarball} does not exist (set {TARBALL_ENV})"
            )
        return None
    fetched.mkdir(parents=True, exist_ok=True)
    # Unpack beside the target and rename when complete: a killed run or a second pytest process
    # never leaves (or reads) a half-written TileGym/.
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=fetched))
    try:
        with tarfile.open(tarball, "r:xz") as tar:
            members = tar.getmembers()
            bad = [
                m.name
                for m in members
                if Path(m.name).parts[:1] != ("TileGym",)
                or ".." in Path(m.name).parts
                or m.issym()
                or m.islnk()
                or m.isdev()
            ]
            if bad:
                raise SnapshotUnavailable(
                    f"{tarball}: unexpected member {bad[0]!r} (only plain TileGym/ files allowed)"
                )
            # members vetted above (no links, no '..'); the "data" filter where this Python has it
            # (3.11.4+) re-checks that and avoids 3.12+'s warning about the unfiltered default
            if hasattr(tarfile, "data_filter"):
                tar.extractall(staging, members=members, filter="data")
            else:
                tar.extractall(staging, members=members)
        if not is_present(staging / "TileGym"):
            raise SnapshotUnavailable(f"{tarball}: no TileGym/TILEGYM_COMMIT inside")
        try:
            os.rename(staging / "TileGym", snapshot)
        except OSError:
            if not is_present(snapshot):  # lost a race to another process: theirs is as good
                raise
    except (OSError, tarfile.TarError) as exc:
        if required:
            raise SnapshotUnavailable(f"cannot unpack {tarball} into {fetched}: {exc}") from exc
        return None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return snapshot


def main() -> int:
    try:
        path = ensure_snapshot(required=True)
    except SnapshotUnavailable as exc:
        print(f"tilegym snapshot: {exc}", file=sys.stderr)
        return 2
    assert path is not None  # required=True raises instead of returning None
    print(f"tilegym snapshot: {path} ({(path / 'TILEGYM_COMMIT').read_text().strip()[:12]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
