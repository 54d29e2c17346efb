#!/usr/bin/env bash
# The CPU-side benchmarks on the GPU machine (no GPU work): issue 31's cases and issue 34's key latency
# measured on the node kind the workbench runs on. One device call; outputs under $OUT (JSON, raw).
# Usage (device machine, repo root; .carry/tui = the textual wheels, .carry/main-tree = `git archive`
# of the commit compared against, unpacked):
#   bash bench/gpu_cpu_session.sh "cases1000 cases100 keys keysab tuitable1000 history threads" [deadline s, default 560]
set -o pipefail
STEPS="${1:-cases1000}"
DEADLINE=$(( $(date +%s) + ${2:-560} ))
OUT="${OUT:-/tmp/wb_out}"; mkdir -p "$OUT" /tmp/site
python3 -m pip install -q --no-index --no-deps --target /tmp/site .carry/tui/*.whl || { echo TUI SETUP FAILED; exit 3; }
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
BOX="GPU machine (H200 host), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg) at start"
TREE=()
[ -d .carry/main-tree ] && TREE=(--tree "main=$PWD/.carry/main-tree")
left() { echo $(( DEADLINE - $(date +%s) )); }
step() {  # step NAME SECONDS CMD...: run with the smaller of SECONDS and what is left
  local name=$1 t=$2; shift 2
  local l; l=$(left); [ "$l" -lt "$t" ] && t=$l
  [ "$t" -le 5 ] && { echo "SKIP $name (deadline)"; return; }
  echo "== $name ($t s max) $(date -u +%H:%M:%S)"
  timeout "$t" "$@" 2>&1 | tail -25; echo "== $name rc ${PIPESTATUS[0]}"
}
for s in $STEPS; do
  case $s in
    cases1000) step cases1000 540 python3 bench/scale_cost.py --cases table,report-e,report-f,timeline,tui \
                 --configs 1000 --reps 1 "${TREE[@]}" --box "$BOX" --out "$OUT/scale_cost-gpu-1000.json" ;;
    cases100) step cases100 200 python3 bench/scale_cost.py --cases table,report-e,report-f,timeline,tui \
                 --configs 100 --reps 2 "${TREE[@]}" --box "$BOX" --out "$OUT/scale_cost-gpu-100.json" ;;
    tui1000) step tui1000 200 python3 bench/scale_cost.py --cases tui --configs 1000 --reps 1 "${TREE[@]}" \
                 --box "$BOX" --out "$OUT/scale_cost-gpu-tui-1000.json" ;;
    keysab) step keysab 300 python3 bench/tui_keys.py --repeats 4 --presses 3 --baseline-tree .carry/main-tree \
                 --box "$BOX" --out "$OUT/tui_keys-gpu-ab.json" ;;
    tuitable1000) step tuitable1000 560 python3 bench/scale_cost.py --cases table,tui --configs 1000 --reps "${REPS:-1}" \
                 "${TREE[@]}" --box "$BOX" --out "$OUT/scale_cost-gpu-tuitable-1000.json" ;;
    keys) step keys 250 python3 bench/tui_keys.py --quick --box "$BOX" --out "$OUT/tui_keys-gpu.json" ;;
    history) step history 120 python3 bench/scale_cost.py --configs --runs 1000 --reps 3 --box "$BOX" \
                 --out "$OUT/scale_cost-gpu-history-1000.json" ;;
    threads) step threads 200 python3 bench/thread_cost.py --configs 1000 --reps 3 --only table,timeline \
                 --variants default,openblas-cores --box "$BOX" --out "$OUT/thread_cost-gpu.json" ;;
    *) echo "unknown step $s" ;;
  esac
done
