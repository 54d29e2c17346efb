#!/usr/bin/env bash
# One GPU-machine call: set up the cuTile/CUPTI bundle, then probe, GPU tests, recording, harness
# cost, E repeats. Each step has its own timeout inside one global deadline; everything lands in
# $OUT/results.tgz (+ summary.txt). Usage (device machine, repo root):
#   bash bench/gpu_session.sh "probe gputests record harness erun"   [deadline seconds, default 560]
set -o pipefail
STEPS="${1:-probe gputests record harness}"
DEADLINE=$(( $(date +%s) + ${2:-560} ))
OUT="${OUT:-/tmp/wb_out}"; W="$OUT/w"; mkdir -p "$W"
mkdir -p /tmp/site
if [ -x /tmp/site/nvidia/cu13/bin/tileiras ] && { [ -d /tmp/site/cupti ] || [ -d .carry/cutile_whl ]; }; then
  # a staged earlier call of this warm machine unpacked the bundle (64 MiB per call: gpu.md §7)
  export CUDA_HOME=/tmp/site/nvidia/cu13 PATH=/tmp/site/nvidia/cu13/bin:$PATH
  echo "cuTile bundle already unpacked in /tmp/site (staged call)"
elif [ "${NEED_STAGED_SITE:-0}" = 1 ]; then
  echo "STAGED SETUP MISSING: /tmp/site has no tileiras (the machine went cold between the two calls)"; exit 42
elif [ -f .carry/cutile_tar/cu134.tar.xz ]; then  # the bundle's tarball alone (a tree too big for 64 MiB
  # with the wheels: the next call carries .carry/cutile_whl, installed below)
  tar -xJf .carry/cutile_tar/cu134.tar.xz -C /tmp/site && export CUDA_HOME=/tmp/site/nvidia/cu13 \
    PATH=/tmp/site/nvidia/cu13/bin:$PATH || { echo SETUP FAILED; exit 3; }
elif [ -d .carry/cutile ]; then  # cuTile 13.4 bundle + cuda-tile + cupti-python (make-cutile-carry.sh)
  tar -xJf .carry/cutile/cu134.tar.xz -C /tmp/site &&
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/cutile/*.whl &&
    export CUDA_HOME=/tmp/site/nvidia/cu13 PATH=/tmp/site/nvidia/cu13/bin:$PATH || { echo SETUP FAILED; exit 3; }
fi
if [ -d .carry/cutile_whl ]; then  # cuda-tile + cupti-python wheels carried apart from the tarball
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/cutile_whl/*.whl ||
    { echo WHEEL SETUP FAILED; exit 3; }
fi
if [ -d .carry/tui ]; then  # textual + pytest-asyncio wheels (TUI bench, Pilot GPU test)
  # compiled at install (no --no-compile): the TUI bench measures an installed app's start-up
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .carry/tui/*.whl || { echo TUI SETUP FAILED; exit 3; }
fi
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
if [ -f .carry/tg/tilegym_trim.tar.xz ]; then  # trimmed TileGym snapshot (src/tilegym + the test files)
  mkdir -p /tmp/tg && tar -xJf .carry/tg/tilegym_trim.tar.xz -C /tmp/tg && export TG=/tmp/tg/TileGym &&
    export PYTHONPATH="$PYTHONPATH:$TG/src"
fi
if [ -d .carry/cutile-rs ] && [ -n "${TG:-}" ]; then  # TileGym's real cutile-rs library (make-cutile-rs-carry.sh)
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/cutile-rs/cffi-*.whl \
      .carry/cutile-rs/pycparser-*.whl &&
    mkdir -p "$TG/src/tilegym/ops/cutile_rs/cutile_kernels/target/release" &&
    xz -dc .carry/cutile-rs/libcutile_kernels.so.xz > "$TG/src/tilegym/ops/cutile_rs/cutile_kernels/target/release/libcutile_kernels.so" &&
    export CUTILE_RS_AUTOBUILD=0 CUTILE_TILEIRAS_PATH=/tmp/site/nvidia/cu13/bin/tileiras || { echo RS SETUP FAILED; exit 3; }
fi
# TileGym's real test_perf selections recorded for the embedded sessions (issue 11)
SILU_K="torch.float16"
MM_K="False-False-2048-2048-2048-0-0-torch.float16 or False-False-4096-4096-4096-0-0-torch.float16 or False-False-8192-8192-8192-0-0-torch.float16"
# Nsight Compute: the counters seen readable on the H200 (gpu.md §6) + spills/occupancy limits
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__grid_size,launch__block_size,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic,sm__warps_active.avg.pct_of_peak_sustained_active,sm__maximum_warps_per_active_cycle_pct,sm__throughput.avg.pct_of_peak_sustained_elapsed
MX=l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum,smsp__inst_executed_op_local_ld.sum,smsp__inst_executed_op_local_st.sum,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
NCU="ncu --csv --page raw --print-units base --clock-control none --profile-from-start off -c 1"
export W
nvidia-smi -q -d CLOCK,PERFORMANCE > "$W/smi_clock_perf.txt" 2>&1; nvidia-smi -q > "$W/smi_q.txt" 2>&1
echo "setup done at $(date -u +%FT%TZ)" | tee "$W/summary.txt"
step() {  # step NAME MAX_SECONDS CMD...
  local name=$1 max=$2; shift 2
  local left=$(( DEADLINE - $(date +%s) - 15 ))
  if (( left < 20 )); then echo "$name SKIPPED (deadline)" | tee -a "$W/summary.txt"; return; fi
  (( max > left )) && max=$left
  local t0=$(date +%s)
  timeout -k 5 "$max" "$@" > "$W/$name.log" 2>&1; local rc=$?
  echo "$name rc=$rc $(( $(date +%s) - t0 ))s (limit ${max}s)" | tee -a "$W/summary.txt"
  tail -n 25 "$W/$name.log"
  return $rc
}
for s in $STEPS; do
  case $s in
    probe) step probe 90 python3 bench/gpu_probe.py ;;
    demo)  # issue 23 B: report f --demonstrate on real cutile-rs matmul (the reference's config added in a copy)
      step demo 420 env TILEGYM_PATH="$TG" WB_DEMO_OUT="$W/demo.json" python3 -m pytest -m gpu \
        tests/gpu/test_demonstrate_gpu.py -v -s -rs -p no:cacheprovider ;;
    stage) echo "staged: the cuTile bundle is unpacked in /tmp/site" | tee -a "$W/summary.txt" ;;
    doctor)  # issue 36: the doctor on the GPU node, with TileGym + cutile-rs, then with a child Python
      # that has the node's torch but no pytest (a venv whose site dir links every system package but pytest)
      step doctor 120 bash -c '
        python3 -m cutile_workbench doctor --tilegym "$TG" --python python3; echo "rc=$?"
        python3 -m cutile_workbench doctor --tilegym "$TG" --python python3 --json > "$W/doctor.json"
        sp=$(python3 -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))")
        mkdir -p /tmp/nopytest/site && for f in "$sp"/*; do case ${f##*/} in pytest*|_pytest*|py.py) ;;
          *) ln -sfn "$f" /tmp/nopytest/site/ ;; esac; done
        python3 -m venv --without-pip /tmp/nopytest/venv
        v=$(/tmp/nopytest/venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()[\"purelib\"])")
        printf "/tmp/site\n/tmp/nopytest/site\n" > "$v/node.pth"
        echo "--- child Python without pytest"
        python3 -m cutile_workbench doctor --tilegym "$TG" --python /tmp/nopytest/venv/bin/python; echo "rc=$?"' ;;
    gputests) step gputests 240 python3 -m pytest -m gpu tests/gpu/test_gpu_capture.py tests/gpu/test_gpu_faults.py tests/gpu/test_runner_gpu.py -v -s -rs -p no:cacheprovider ;;
    record) step record 300 python3 -m scripts.record_profiles gpu --out "$W/rec" --timeout 120 ;;
    harness) step harness 200 python3 bench/harness_cost.py --out "$W/harness_cost.json" \
               --variants "default:,reenable:WORKBENCH_CUPTI_KEEP_ENABLED=0,settle100:WORKBENCH_SETTLE_US=100,settle1000:WORKBENCH_SETTLE_US=1000" ;;
    choose)  # the smallest settle whose medians agree with TileGym's harness within 2 % (else the closest)
      export WORKBENCH_SETTLE_US=$(python3 - "$W/harness_cost.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))["variants"]
cands = [("default", 0), ("settle100", 100), ("settle1000", 1000)]
err = {n: max(abs(d) for d in v[n]["summary"]["median_diff_pct"]) for n, _ in cands if n in v}
ok = [s for n, s in cands if n in err and err[n] <= 2.0]
print(ok[0] if ok else min(cands, key=lambda c: err.get(c[0], 1e9))[1])
PY
); echo "chosen WORKBENCH_SETTLE_US=$WORKBENCH_SETTLE_US" | tee -a "$W/summary.txt" ;;
    harness2)  # flush-mode variants, and 1000-sample sessions (what a real run with REP=50 ms does)
      step harness100 150 python3 bench/harness_cost.py --out "$W/harness_cost_100.json" \
        --variants "forced:,complete:WORKBENCH_CUPTI_FLUSH=complete"
      step harness1000 200 python3 bench/harness_cost.py --out "$W/harness_cost_1000.json" --nrep 1000 --batches 2 \
        --cases '[{"factory":"cutile_workbench.profiles.rms_norm.backends:factory","kwargs":{"framework":"triton","m":4096,"n":1024}},{"factory":"cutile_workbench.profiles.rms_norm.backends:factory","kwargs":{"framework":"triton","m":16384,"n":2048}},{"factory":"cutile_workbench.profiles.rms_norm.backends:factory","kwargs":{"framework":"cutile","m":8192,"n":8192}}]' \
        --variants "forced:,complete:WORKBENCH_CUPTI_FLUSH=complete" ;;
    apis)  # launch-only API records: the capture tests under it, then cost vs the whole kinds
      WORKBENCH_CUPTI_APIS=launch step gputests_launch 120 python3 -m pytest -m gpu tests/gpu/test_gpu_capture.py -v -s -rs -p no:cacheprovider
      step harness_apis 150 python3 bench/harness_cost.py --out "$W/harness_cost_apis.json" \
        --variants "launch:WORKBENCH_CUPTI_APIS=launch,all:"
      step harness_apis1000 150 python3 bench/harness_cost.py --out "$W/harness_cost_apis1000.json" --nrep 1000 --batches 2 \
        --cases '[{"factory":"cutile_workbench.profiles.rms_norm.backends:factory","kwargs":{"framework":"triton","m":4096,"n":1024}},{"factory":"cutile_workbench.profiles.rms_norm.backends:factory","kwargs":{"framework":"cutile","m":8192,"n":8192}}]' \
        --variants "launch:WORKBENCH_CUPTI_APIS=launch,all:"
      if grep -q " passed" "$W/gputests_launch.log" && ! grep -qE "[0-9]+ failed" "$W/gputests_launch.log"; then
        export WORKBENCH_CUPTI_APIS=launch; fi
      echo "chosen WORKBENCH_CUPTI_APIS=${WORKBENCH_CUPTI_APIS:-all}" | tee -a "$W/summary.txt" ;;
    apis2)  # launch-only API records (other cbids disabled per cbid), tests + cost
      WORKBENCH_CUPTI_APIS=launch step gputests_launch 90 python3 -m pytest -m gpu tests/gpu/test_gpu_capture.py -v -s -rs -p no:cacheprovider -k "not kineto and not profiler"
      step harness_apis 100 python3 bench/harness_cost.py --out "$W/harness_cost_apis.json" \
        --variants "launch:WORKBENCH_CUPTI_APIS=launch,all:"
      step harness_apis1000 90 python3 bench/harness_cost.py --out "$W/harness_cost_apis1000.json" --nrep 1000 --batches 2 \
        --cases '[{"factory":"cutile_workbench.profiles.rms_norm.backends:factory","kwargs":{"framework":"triton","m":4096,"n":1024}},{"factory":"cutile_workbench.profiles.rms_norm.backends:factory","kwargs":{"framework":"cutile","m":8192,"n":8192}}]' \
        --variants "launch:WORKBENCH_CUPTI_APIS=launch" ;;
    runnergpu) step runnergpu 150 env OUT="$W" python3 -m pytest tests/gpu/test_runner_gpu.py -m gpu -v -s -rs -p no:cacheprovider ;;
    tuilive) step tuilive 240 python3 -m pytest tests/gpu/test_tui_live_gpu.py -m gpu -v -s -rs -p no:cacheprovider ;;
    irdiff)  # structural IR diff build time on the device host's CPU (no GPU used; issue 19), twice
      python3 -m compileall -q workbench widgets > /dev/null
      step irdiff 150 python3 bench/ir_structdiff.py --repeat 3 --plain-budget 5 --out "$W/ir_structdiff.json"
      step irdiff2 150 python3 bench/ir_structdiff.py --repeat 3 --plain-budget 5 --out "$W/ir_structdiff2.json" ;;
    tuibench)  # byte-compile the checkout as `pip install` would, then two bench runs
      python3 -m compileall -q cutile_workbench /tmp/site > /dev/null
      step tuibench 200 python3 bench/tui_start.py
      step tuibench2 200 python3 bench/tui_start.py ;;
    liverun)  # a live profile run with the harness, then what the views read back from the layout
      step liverun 200 bash -c 'python3 -m cutile_workbench run rms_norm --harness --out-root "$W/live" &&
        ls -la "$W/live/rms_norm/workbench" &&
        python3 -m cutile_workbench timeline rms_norm --config 16384-2048-torch.bfloat16 --out-root "$W/live" &&
        python3 -m cutile_workbench timeline rms_norm --config 16384-2048-torch.bfloat16 --out-root "$W/live" --json > "$W/live_timeline.json" &&
        python3 -m cutile_workbench table rms_norm --out-root "$W/live"' ;;
    offset) step offset 240 python3 bench/median_offset.py --out "$W/median_offset.json" --nrep 300 ;;
    tgbackend) step tgbackend 150 python3 -m pytest "cutile_workbench/profiles/rms_norm/test_rms_norm.py::Test_RMSNorm::test_perf" \
                 -k "tilegym or (cutile and not hotpath)" -sv --print-record -p cutile_workbench.run.plugins.perflog -p no:cacheprovider ;;
    tgrun)  # TileGym's real test_perf: its own harness, then ours swapped in (--workbench-harness)
      step tgplain 200 python3 -m cutile_workbench run rms_norm --tilegym "$TG" -b cutile -b triton -k static_persistent \
        --env CUPTI=1 --timeout 120 --out-root "$W/tg_plain"
      step tgharness 200 python3 -m cutile_workbench run rms_norm --tilegym "$TG" -b cutile -b triton -k static_persistent \
        --env CUPTI=1 --timeout 120 --out-root "$W/tg_harness" --harness
      step tgcompare 30 python3 bench/tilegym_harness_compare.py "$W/tg_plain" "$W/tg_harness" rms_norm --json "$W/tg_compare.json" ;;
    harnessw)  # per-call vs whole-session CUPTI windows: cost and agreement with TileGym's harness
      step harnessw 200 python3 bench/harness_cost.py --out "$W/harness_cost_window.json" \
        --variants "per_call:WORKBENCH_CUPTI_WINDOW=per_call,session:WORKBENCH_CUPTI_WINDOW=session" ;;
    harnessx)  # which part of the per-call protocol moves the medians, and what each part costs
      step harnessx 240 python3 bench/harness_cost.py --out "$W/harness_cost_percall.json" \
        --variants "per_call:,pc_noflush:WORKBENCH_CUPTI_PER_CALL_FLUSH=0,pc_kernel:WORKBENCH_CUPTI_PER_CALL_KINDS=kernel,pc_kernel_noflush:WORKBENCH_CUPTI_PER_CALL_KINDS=kernel;WORKBENCH_CUPTI_PER_CALL_FLUSH=0,session:WORKBENCH_CUPTI_WINDOW=session" ;;
    harnessf)  # is the per-window flush alone enough, and does a non-forced flush do it (cheaper)?
      step harnessf 240 python3 bench/harness_cost.py --out "$W/harness_cost_flush2.json" \
        --variants "pc_kernel:WORKBENCH_CUPTI_PER_CALL_KINDS=kernel,flush_only:WORKBENCH_CUPTI_PER_CALL_KINDS=none,completed_only:WORKBENCH_CUPTI_PER_CALL_KINDS=none;WORKBENCH_CUPTI_PER_CALL_FLUSH=completed,pc_kernel_completed:WORKBENCH_CUPTI_PER_CALL_KINDS=kernel;WORKBENCH_CUPTI_PER_CALL_FLUSH=completed" ;;
    gpucap) step gpucap 150 python3 -m pytest -m gpu tests/gpu/test_gpu_capture.py -v -s -rs -p no:cacheprovider ;;
    tgcheck) step tgcheck 90 python3 -m cutile_workbench check rms_norm --tilegym "$TG" --out-root "$W/chk" ;;
    erun) step erun 240 python3 bench/harness_cost.py --skip-harness --e-runs 3 --out "$W/erun.json" ;;
    clock) step clock 120 python3 bench/cupti_clock_probe.py --out "$W/clock.json" ;;
    gpudir)  # the GPU tests of tests/gpu (those needing Textual skip without .carry/tui), one process
      step gpudir 330 env TILEGYM_PATH="$TG" python3 -m pytest -m gpu tests/gpu -v -s -rs -p no:cacheprovider ;;
    gpuall)  # every GPU test of the suite (real cutile-rs ones via TILEGYM_PATH), one pytest process
      step gpuall 330 env TILEGYM_PATH="$TG" python3 -m pytest -m gpu tests/ -v -s -rs -p no:cacheprovider ;;
    ncuprobe)  # the focused ncu probe on the real matmul gap (static_persistent 2048^3), both sides
      step probe 200 python3 bench/probe_session.py --kernel matmul --tilegym "$TG" --out "$W/probe" \
        --config True-True-False-False-2048-2048-2048-0-0-torch.float16 ;;
    gpunew)  # the GPU tests added by the probe / scale-out TUI work, and one real run on the final code
      step gpunew 200 env TILEGYM_PATH="$TG" python3 -m pytest -m gpu -v -s -rs -p no:cacheprovider \
        tests/unit/test_probe_cli.py tests/unit/test_f_ncu_sol.py tests/gpu/test_tui_sharded_gpu.py tests/unit/test_history_provenance.py
      step finalrun 150 python3 -m cutile_workbench run silu_and_mul --tilegym "$TG" -b cutile-rs -b cutile \
        -k "64-1024-512-torch.float16 or 64-1024-8192-torch.float16" --dump-ir --timeout 120 --out-root "$W/final" &&
        step finalread 60 bash -c "python3 -m cutile_workbench table silu_and_mul --out-root '$W/final' &&
          python3 -m cutile_workbench history silu_and_mul --out-root '$W/final'" ;;  # logged: BENCHMARKS quotes it
    scale2on1)  # run --gpus 0,0 (two shards on ONE GPU: plumbing, labelled) vs one process
      step scale2on1 200 python3 bench/scaleout_gpus.py --variants single,2on1 --rounds 1 --out "$W/scaleout.json" -- \
        silu_and_mul --tilegym "$TG" -b cutile-rs -b cutile -k "64-1024-512-torch.float16 or 64-1024-1024-torch.float16" ;;
    rssilu)  # real cutile-rs vs cuTile Python, TileGym's test_perf: workbench harness (+ IR), then TileGym's
      step silu_wb 200 python3 -m cutile_workbench run silu_and_mul --tilegym "$TG" -b cutile-rs -b cutile -k "$SILU_K" \
        --dump-ir --timeout 240 --out-root "$W/rec"
      step silu_tg 200 python3 -m cutile_workbench run silu_and_mul --tilegym "$TG" -b cutile-rs -b cutile -k "$SILU_K" \
        --tilegym-harness --timeout 240 --out-root "$W/rectg" ;;
    ncu)  # Nsight Compute on one call of each side, one config per kernel (raw CSV for F's probe parser)
      step ncu_query 60 bash -c "ncu --query-metrics --chip gh100 | grep -E 'local|warps_active|occupancy|spill|tensor_op|dram__bytes' | head -300"
      for be in cutile-rs cutile; do  # the extended set first; the base set (gpu.md §6) if ncu refuses a name
        step "ncu_silu_$be" 90 $NCU --metrics "$M,$MX" python3 bench/ncu_target.py --op silu_and_mul --backend $be --shape 64,1024,4096 ||
          step "ncu_silu_${be}_base" 90 $NCU --metrics "$M" python3 bench/ncu_target.py --op silu_and_mul --backend $be --shape 64,1024,4096
      done ;;
    ncumm)
      for be in cutile-rs cutile; do
        step "ncu_mm_$be" 120 $NCU --metrics "$M,$MX" python3 bench/ncu_target.py --op matmul --backend $be --shape 4096,4096,4096 --static-persistent
      done ;;
    delegate)  # issue 18: a REAL delegating cutile-rs wrapper (calls TileGym's cuTile op) must read REF / FIXABLE
      step delegate 260 bash -c 'rm -rf /tmp/tgdel && mkdir -p /tmp/tgdel && cp -r "$TG" /tmp/tgdel/ &&
        python3 bench/delegating_wrapper.py /tmp/tgdel/TileGym silu_and_mul &&
        export PYTHONPATH="/tmp/site:$PWD:/tmp/tgdel/TileGym/src" &&
        python3 -m cutile_workbench run silu_and_mul --tilegym /tmp/tgdel/TileGym -b cutile-rs -b cutile \
          -k "64-1024-512-torch.float16 or 64-1024-8192-torch.float16" --timeout 150 --out-root "$W/deleg" &&
        python3 -m cutile_workbench table silu_and_mul --out-root "$W/deleg" &&
        python3 -m cutile_workbench report e silu_and_mul --out-root "$W/deleg" --yes --no-real-scripts | tail -n 3 &&
        python3 -m cutile_workbench report f silu_and_mul --tilegym /tmp/tgdel/TileGym --out-root "$W/deleg" --yes \
          --no-real-scripts | tail -n 2 &&
        sed -n "1,12p;/## Candidate identity/,\$p" "$W"/deleg/silu_and_mul/reports/perf_investigation_64-1024-512*.md' ;;
    horder)  # issue 22: run cost per harness with warm caches, order alternating; the cold first run
             # apart. Put it FIRST on a fresh machine (the cold run must meet cuTile's empty compile cache).
      step horder 540 python3 bench/harness_order.py --rounds 2 --fresh --out "$W/harness_order_silu.json" -- \
        silu_and_mul --tilegym "$TG" -b cutile-rs -b cutile -k "$SILU_K" --timeout 240 ;;
    hordermm)  # the same for matmul (6 configs per backend: one warm round fits a call)
      step hordermm 540 python3 bench/harness_order.py --rounds 1 --fresh --out "$W/harness_order_matmul.json" -- \
        matmul --tilegym "$TG" -b cutile-rs -b cutile -k "$MM_K" --timeout 300 ;;
    coldstart)  # issue 26: the same 2-shard cuTile matmul run, first with an empty shared compile cache
      # (cold shards), then again with that cache warm; each run's split is in its session.json files
      CS_GPUS="${CS_GPUS:-0,1}"  # 2 GPUs (nvidia-h200-x2); on one H200 use CS_GPUS=0,0 (plumbing, labelled)
      rm -rf "$W/cc"
      step cs_cold 280 python3 -m cutile_workbench run matmul --tilegym "$TG" -b cutile -k "$MM_K" --gpus "$CS_GPUS" \
        --compile-cache "$W/cc" --timeout 240 --out-root "$W/cs_cold"
      step cs_warm 280 python3 -m cutile_workbench run matmul --tilegym "$TG" -b cutile -k "$MM_K" --gpus "$CS_GPUS" \
        --compile-cache "$W/cc" --timeout 240 --out-root "$W/cs_warm"
      step cs_summary 30 python3 bench/coldstart_summary.py "$W/cs_cold" "$W/cs_warm" --out "$W/coldstart.json" ;;
    rsmmwb)
      step matmul_wb 300 python3 -m cutile_workbench run matmul --tilegym "$TG" -b cutile-rs -b cutile -k "$MM_K" \
        --dump-ir --timeout 300 --out-root "$W/rec" ;;
    rsmmtg)
      step matmul_tg 300 python3 -m cutile_workbench run matmul --tilegym "$TG" -b cutile-rs -b cutile -k "$MM_K" \
        --tilegym-harness --timeout 300 --out-root "$W/rectg" ;;
    evtune)  # issue 32: both sides' autotune tables (autotune events) on the planted tree's bmm and matmul
      [ -d /tmp/tgp/TileGym ] || { mkdir -p /tmp/tgp && cp -r "$TG" /tmp/tgp/ && python3 bench/plant_bugs.py /tmp/tgp/TileGym --out /tmp/tgp/planted.json; }
      for kk in "bmm|2-2048-2048-2048-False-False-torch.float16 or 8-2048-2048-2048-False-False-torch.float16" \
                "matmul|False-False-2048-2048-2048-0-0-torch.float16"; do
        IFS='|' read -r kn ksel <<< "$kk"
        step "tune_$kn" 170 env PYTHONPATH="/tmp/site:$PWD:/tmp/tgp/TileGym/src" bash -c "python3 -m cutile_workbench run $kn \
          --tilegym /tmp/tgp/TileGym -b cutile-rs -b cutile -k '$ksel' --timeout 160 --out-root /tmp/evtune &&
          python3 -m cutile_workbench report f $kn --tilegym /tmp/tgp/TileGym --out-root /tmp/evtune --yes --no-real-scripts | tail -n 2;
          grep -h -A6 'Autotune tables' /tmp/evtune/$kn/reports/perf_investigation_*.md | head -n 30"
        mkdir -p "$W/tune_$kn" && cp -r /tmp/evtune/$kn/reports /tmp/evtune/$kn/*.txt "$W/tune_$kn/" 2>/dev/null
        grep -h '"event": *"autotune"' /tmp/evtune/$kn/workbench/events.jsonl > "$W/tune_$kn/autotune_events.jsonl" 2>/dev/null
      done ;;
    evcost)  # issue 32: attribution's cost alone (medians on/off alternated in one process)
      [ -d /tmp/tgp/TileGym ] || { mkdir -p /tmp/tgp && cp -r "$TG" /tmp/tgp/ && python3 bench/plant_bugs.py /tmp/tgp/TileGym --out /tmp/tgp/planted.json; }
      step attcost 120 env PYTHONPATH="/tmp/site:$PWD:/tmp/tgp/TileGym/src" python3 bench/attribution_cost.py \
        --out "$W/attribution_cost.json" --rounds 5 ;;
    evidence|evdemo)  # issue 32: three planted wrapper bugs (bench/plant_bugs.py, in a copy) + real bmm rows
      # (q=2), with launch attribution; E + F per kernel, attribution's cost (evidence); then F's
      # demonstrations (evdemo, a second call right after: the runs stay in $EV_ROOT under /tmp)
      EV_ROOT=/tmp/ev32
      # a fresh machine: the evidence runs' kernel dirs come carried (.carry/ev32, from the first call)
      [ "$s" = evdemo ] && [ ! -d "$EV_ROOT" ] && [ -d .carry/ev32 ] && cp -r .carry/ev32 "$EV_ROOT"
      EV_K_SILU="64-1024-4096-torch.float16 or 64-1024-8192-torch.float16"
      EV_K_MM="False-False-2048-2048-2048-0-0-torch.float16"
      EV_K_BMM="2-2048-2048-2048-False-False-torch.float16 or 2-4096-4096-4096-False-False-torch.float16 or 8-2048-2048-2048-False-False-torch.float16"
      if [ ! -d /tmp/tgp/TileGym ]; then
        mkdir -p /tmp/tgp && cp -r "$TG" /tmp/tgp/ && python3 bench/plant_bugs.py /tmp/tgp/TileGym --out /tmp/tgp/planted.json
      fi
      cp /tmp/tgp/planted.json "$W/planted.json"; cat "$W/planted.json" >> "$W/summary.txt"
      EV_PP="/tmp/site:$PWD:/tmp/tgp/TileGym/src"
      if [ "$s" = evidence ]; then  # first: attribution's cost, and whether a subscriber can be had at all
        step attcost 100 env PYTHONPATH="$EV_PP" python3 bench/attribution_cost.py --out "$W/attribution_cost.json" --rounds 5
        if grep -q '"unavailable"' "$W/attribution_cost.json" 2>/dev/null; then
          # Kineto (TileGym's cutile-rs autotuner times configs with torch.profiler) kept the one CUPTI
          # subscriber: make it let go after its sessions (cupti.md 2.1), and say so
          export TEARDOWN_CUPTI=1; echo "attribution refused a subscriber: runs with TEARDOWN_CUPTI=1" | tee -a "$W/summary.txt"
        fi
      fi
      for kk in "silu_and_mul|$EV_K_SILU|150" "bmm|$EV_K_BMM|200" "matmul|$EV_K_MM|200"; do
        IFS='|' read -r kn ksel kmax <<< "$kk"
        if [ "$s" = evidence ]; then
          step "ev_$kn" "$kmax" env PYTHONPATH="$EV_PP" python3 -m cutile_workbench run "$kn" --tilegym /tmp/tgp/TileGym \
            -b cutile-rs -b cutile -k "$ksel" --timeout "$kmax" --out-root "$EV_ROOT"
          step "ev_f_$kn" 60 env PYTHONPATH="$EV_PP" bash -c "python3 -m cutile_workbench report e $kn --out-root $EV_ROOT --yes --no-real-scripts | tail -n 3;
            python3 -m cutile_workbench report f $kn --tilegym /tmp/tgp/TileGym --out-root $EV_ROOT --yes --no-real-scripts | tail -n 3;
            grep -h -iE 'issued at|confirmed|not executed|attribution|pinned' $EV_ROOT/$kn/reports/perf_investigation_*.md | head -n 20"
        else
          step "ev_demo_$kn" 170 env PYTHONPATH="$EV_PP" bash -c "python3 -m cutile_workbench report f $kn --tilegym /tmp/tgp/TileGym \
            --out-root $EV_ROOT --yes --no-real-scripts --demonstrate --demonstrate-timeout 150 | tail -n 3;
            sed -n '/## Demonstrated/,/TileGym tree/p' $EV_ROOT/$kn/reports/perf_investigation_*.md | head -n 60"
        fi
        mkdir -p "$W/ev_$kn" && cp -r "$EV_ROOT/$kn/reports" "$EV_ROOT/$kn/workbench" "$W/ev_$kn/" 2>/dev/null
        rm -rf "$W/ev_$kn/workbench/demonstrate"/*/ 2>/dev/null
        cp "$EV_ROOT/$kn"/*.txt "$W/ev_$kn/" 2>/dev/null
      done
      ;;
    nvmlclocks)  # issue 18 §3: cost of the per-call NVML clock readings (per reading, on medians), then the
      # GPU tests of the record's clocks key and discard-on-throttle
      step nvmlclocks 200 python3 bench/clock_sampler_cost.py --out "$W/clock_sampler_cost.json"
      step nvmlclocktests 120 python3 -m pytest -m gpu tests/gpu/test_gpu_clocks.py -v -s -rs -p no:cacheprovider ;;
  esac
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$W/summary.txt" 2>&1
tar czf "$OUT/results.tgz" -C "$W" . && ls -la "$OUT"
cat "$W/summary.txt"
