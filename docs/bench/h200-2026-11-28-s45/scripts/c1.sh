#!/usr/bin/env bash
# Session 30, call 1 (H200): main (f6fcf9d, the LM head in fixed shares) validated where the last session
# had no device time left: the 1B check, serve_check on the 1B weights, bench_decode with the torch
# baselines and batches 1, 4, 8, the trace at position 40 with the per-block analysis, bench_graph, and
# the soak for 120 s.
set -u
o=${OUT:?}
L=/tmp/logs1; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s45
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
python3 -m pip install -q --no-deps --target /tmp/site_m $P/whl_m/*.whl > $L/pip_m.log 2>&1
export PYTHONPATH=/tmp/site_m
cd $P/ex_m
python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt; pack
timeout 60 python3 check_reference.py /tmp/w1b --json $L/check_m.json > $L/check_m.log 2>&1; echo "check m rc $? ($SECONDS s): $(grep mean_err $L/check_m.log | head -c 300)" | tee -a $L/summary.txt; pack
timeout 150 python3 bench_decode.py /tmp/w1b --json $L/bench_llama.json > $L/bench_m.log 2>&1; echo "bench m rc=$? ($SECONDS s)" | tee -a $L/summary.txt; grep -E "TARGET|gpuos batch|torch|cuda graph|eager|bound" $L/bench_m.log | cut -c1-200 | tee -a $L/summary.txt; pack
timeout 80 python3 serve_check.py /tmp/w1b --json $L/serve_m.json > $L/serve_m.log 2>&1; echo "serve m rc=$? ($SECONDS s)" | tee -a $L/summary.txt; tail -3 $L/serve_m.log | cut -c1-300 | tee -a $L/summary.txt; pack
timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' --raw /tmp/raw_m.npy > $L/trace_m.txt 2>&1; echo "trace m rc $? ($SECONDS s)" | tee -a $L/summary.txt
python3 $P/late_blocks.py /tmp/raw_m.npy > $L/late_m.txt 2>&1; cat $L/late_m.txt >> $L/summary.txt; pack
cd $R
mkdir -p /tmp/b && tar xzf $P/bin.tgz -C /tmp/b --strip-components=1
SOAK_SECONDS=120 STEP_TIMEOUT=200 bash scripts/gpu_run.sh /tmp/gr /tmp/b graph soak > $L/gpu_run.log 2>&1; echo "gpu_run rc $? ($SECONDS s)" | tee -a $L/summary.txt
cat /tmp/gr/summary.txt >> $L/summary.txt; cp -r /tmp/gr/logs $L/gr_logs
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
