#!/usr/bin/env bash
# Drive the real app in tmux the way a person would, and check what the screen shows:
#   open -> sort by ratio -> filter -> clear -> Enter opens the row's timeline -> 3 opens the IR
#   diff -> 4, e plans stage E -> w, y writes it -> Ctrl+Q quits (exit 0).
# It works on a temp copy of a recorded session (cutile_workbench/profiles/rms_norm/session/rms_norm), or of the
# real H200 E fixture when no session is recorded, or of the kernel dir given as $1; the copy is
# deleted at the end. Uses a private tmux server socket (never touches the user's tmux).
# Usage: scripts/tmux_drive.sh [KERNEL_DIR]      Env: PYTHON (default .venv/bin/python)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
SRC="${1:-}"
if [[ -z "$SRC" ]]; then
  if [[ -d "$ROOT/profiles/rms_norm/session/rms_norm" ]]; then
    SRC="$ROOT/profiles/rms_norm/session/rms_norm"
  else
    SRC="$ROOT/tests/fixtures/e/real/rms_norm"
  fi
fi
WORK="$(mktemp -d)"
SOCK="cwb-drive-$$"
LOG="$WORK/screen.txt"
cleanup() { tmux -L "$SOCK" kill-server 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

cp -r "$SRC" "$WORK/rms_norm"
KDIR="$WORK/rms_norm"
rm -f "$KDIR/reports/performance.md"   # the write below must create it
if ! ls "$KDIR"/reference/reference*.mlir >/dev/null 2>&1; then  # give the diff screen a real pair
  mkdir -p "$KDIR/reference" "$KDIR/generated"
  cp "$ROOT/tests/fixtures/ir/rms_norm_ref_16x1024.mlir" "$KDIR/reference/reference.mlir"
  cp "$ROOT/tests/fixtures/ir/rms_norm_ref_4x8192.mlir" "$KDIR/generated/generated_canon.mlir"
fi

screen() { tmux -L "$SOCK" capture-pane -p -t main; }
keys() { tmux -L "$SOCK" send-keys -t main "$@"; }
fail() { echo "FAIL: $1" >&2; screen > "$LOG" 2>/dev/null || true; cat "$LOG" >&2; exit 1; }
wait_for() {  # wait_for PATTERN [SECONDS]
  local pat="$1" limit="${2:-20}" i
  for ((i = 0; i < limit * 10; i++)); do
    if screen | grep -qF -- "$pat"; then return 0; fi
    sleep 0.1
  done
  fail "screen never showed: $pat"
}
step() { echo "ok: $1"; }

tmux -L "$SOCK" -f /dev/null new-session -d -s main -x 120 -y 36 \
  "cd '$ROOT' && TERM=xterm-256color '$PY' -m cutile_workbench rms_norm --out-root '$WORK'; echo EXITED:\$?; sleep 60"
tmux -L "$SOCK" set -g escape-time 0 >/dev/null

wait_for " Ratios " 60
wait_for " rows  ·  sort config"
N="$(screen | sed -nE 's#^ ([0-9]+)/([0-9]+) rows.*#\2#p' | head -1)"
[[ -n "$N" && "$N" -gt 0 ]] || fail "no row count on the status line"
step "open: Ratios screen with $N configs"

keys s s s s s
wait_for "sort ratio ▲"
step "sort by ratio"

WANT="$(screen | grep -cE '^ [^ ]*16384' || true)"   # table rows whose config has 16384
keys /
wait_for "filter (Enter to apply"
for ((i = 0; i < 100; i++)); do screen | tail -1 | grep -qF "s Sort" || break; sleep 0.1; done  # input focused
keys 1 6 3 8 4
wait_for "$WANT/$N rows"
keys Enter
keys Escape
wait_for "$N/$N rows"
step "filter '16384' -> $WANT of $N rows, Escape clears"

keys Home Enter
wait_for " Timeline "
wait_for "  launches/call "
step "Enter opens the selected row's timeline: $(screen | sed -n 2p | sed 's/  */ /g')"

keys 3
wait_for " IR Diff "
wait_for "reference.mlir"
step "IR diff of reference.mlir vs generated_canon.mlir"

keys 4
wait_for " Report "
keys e
wait_for "validators pass" 60
keys w
wait_for "Write stage E report"
keys y
wait_for "wrote " 30
head -1 "$KDIR/reports/performance.md" | grep -q "^VERDICT: " || fail "performance.md not written"
step "E report written: $(head -1 "$KDIR/reports/performance.md")"

keys C-q
wait_for "EXITED:0"
step "Ctrl+Q quits with exit 0"
echo "PASS"
