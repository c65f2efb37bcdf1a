#!/usr/bin/env bash
# Session 22, call 3 (H200): main at 8eac5af (the role tail's fence.release, waits without sleeping):
# bench_decode with its baselines, the 1B check, serve_check, a trace at position 40; then two rounds of
# main against the kernel before it (s19 whl_base), alternating.
set -u
o=${OUT:?}
L=/tmp/logs3; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s22
python3 -m pip install -q --no-deps --target /tmp/site_main $P/whl_main/*.whl > $L/pip.log 2>&1
python3 -m pip install -q --no-deps --target /tmp/site_m $R/.gpu/s19/whl_base/*.whl >> $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
cd examples/llama
export PYTHONPATH=/tmp/site_main
python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
timeout 150 python3 bench_decode.py /tmp/w1b --json $L/bench_llama.json > $L/bench.log 2>&1; echo "bench rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E "copy bandwidth|eager|cuda graph|gpuos batch|TARGET" $L/bench.log | cut -c1-200 | tee -a $L/summary.txt; pack
timeout 100 python3 check_reference.py /tmp/w1b --json $L/check_1b.json > $L/check_1b.log 2>&1; echo "check rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
timeout 80 python3 serve_check.py /tmp/w1b --json $L/serve.json > $L/serve.log 2>&1; echo "serve rc=$? ($SECONDS s)" | tee -a $L/summary.txt; pack
timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' > $L/trace_40.txt 2>&1; echo "trace rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
run() {  # name round
  PYTHONPATH=/tmp/site_$1 timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b; do run m $k; run main $k; done
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
