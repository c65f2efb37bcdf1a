#!/usr/bin/env bash
# Session 23, call 6 (H200, main's wheel at 8eac5af): xpf (the working tree's operators): each projection
# asks L1 for the rows of x it reads right after its await; xpf21: xpf and the residual projections with
# two rounds in flight (the second asked after the await); against main's operators (ssq), two rounds,
# alternating. Then, on xpf: the 1B check, the Llama tests, a trace at position 40, serve_check, and
# bench_decode with its baselines.
set -u
o=${OUT:?}
L=/tmp/logs6; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu
python3 -m pip install -q --no-deps --target /tmp/site $P/s22/whl_main/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
cd examples/llama
python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name round
  timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --ops-dir $P/s23/v/$1 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b; do run ssq $k; run xpf $k; run xpf21 $k; done
timeout 60 python3 check_reference.py /tmp/w1b --json $L/check_1b.json > $L/check_1b.log 2>&1; echo "check rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
(cd tests && timeout 60 python3 -m pytest -q -rs -p no:cacheprovider . > $L/pytest_llama.log 2>&1); echo "llama tests rc $? ($SECONDS s): $(tail -1 $L/pytest_llama.log)" | tee -a $L/summary.txt; pack
timeout 40 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' > $L/trace_40.txt 2>&1; echo "trace rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
timeout 50 python3 serve_check.py /tmp/w1b --json $L/serve.json > $L/serve.log 2>&1; echo "serve rc=$? ($SECONDS s)" | tee -a $L/summary.txt; pack
timeout 90 python3 bench_decode.py /tmp/w1b --json $L/bench_llama.json > $L/bench.log 2>&1; echo "bench rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E "copy bandwidth|eager|cuda graph|gpuos batch|TARGET" $L/bench.log | cut -c1-200 | tee -a $L/summary.txt; pack
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
