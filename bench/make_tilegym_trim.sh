#!/usr/bin/env bash
# Trim a TileGym checkout to what a GPU run of E/F needs, as one .tar.xz to carry to the device machine.
# Usage: bash bench/make_tilegym_trim.sh TILEGYM_GIT_DIR [DEST_DIR]   (DEST default .carry/tg)
# Contents (from HEAD of the git dir, unpacked as TileGym/): src/tilegym, pytest.ini, tests/{__init__,
# common,config,conftest}.py, tests/ops/{__init__,conftest}.py + the test files of the kernels below,
# and the skill's validator scripts (.agents/skills/<skill>/scripts, as validators are run there).
# The cutile-rs library is NOT in it: make-cutile-rs-carry.sh builds it; the GPU command places it.
set -euo pipefail
GIT=$1; DEST=${2:-.carry/tg}
KERNELS=(silu_and_mul matmul rms_norm swiglu bmm)
SKILL=skills/tilegym-converting-cutile-triton-to-cutile-rs
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
paths=(src/tilegym pytest.ini tests/__init__.py tests/common.py tests/config.py tests/conftest.py "$SKILL/scripts")
for f in tests/ops/__init__.py tests/ops/conftest.py; do
  git -C "$GIT" cat-file -e "HEAD:$f" 2>/dev/null && paths+=("$f")
done
for k in "${KERNELS[@]}"; do paths+=("tests/ops/test_$k.py"); done
mkdir -p "$tmp/TileGym"
git -C "$GIT" archive HEAD "${paths[@]}" | tar -x -C "$tmp/TileGym"
# validators are run as .agents/skills/<skill>/scripts/X.sh from the TileGym root
mkdir -p "$tmp/TileGym/.agents/skills" && mv "$tmp/TileGym/skills/$(basename $SKILL)" "$tmp/TileGym/.agents/skills/" && rmdir "$tmp/TileGym/skills"
git -C "$GIT" rev-parse HEAD > "$tmp/TileGym/TILEGYM_COMMIT"
mkdir -p "$DEST"
tar -C "$tmp" -cf - TileGym | xz -9e > "$DEST/tilegym_trim.tar.xz"
du -b "$DEST/tilegym_trim.tar.xz"
