#!/usr/bin/env bash
# Session 24, call 2 (H200): the tail-pin kernel (t) validated: bench_decode with its baselines,
# serve_check, every C++ GPU suite but the soak with t's binaries, the Python and Llama suites with t's wheel.
set -u
o=${OUT:?}
L=/tmp/logs2; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s24
python3 -m pip install -q --no-deps --target /tmp/site_t $P/whl_tail/*.whl > $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site_t
(cd examples/llama
 python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
 echo "weights ($SECONDS s)" | tee -a $L/summary.txt
 timeout 150 python3 bench_decode.py /tmp/w1b --json $L/bench_llama.json > $L/bench.log 2>&1; echo "bench rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E "copy bandwidth|eager|cuda graph|gpuos batch|TARGET" $L/bench.log | cut -c1-200 | tee -a $L/summary.txt; pack
 timeout 80 python3 serve_check.py /tmp/w1b --json $L/serve.json > $L/serve.log 2>&1; echo "serve rc=$? ($SECONDS s)" | tee -a $L/summary.txt; tail -3 $L/serve.log | cut -c1-300 | tee -a $L/summary.txt; pack)
unset PYTHONPATH
mkdir -p build && tar xJf $P/bin_t.tar.xz -C build
left=$((580 - SECONDS))
STEP_TIMEOUT=200 WHEEL=$(ls $P/whl_tail/*.whl) timeout $left bash scripts/gpu_run.sh /tmp/gr build tests python > $L/gpu_run.log 2>&1; echo "suites rc $? ($SECONDS s)" | tee -a $L/summary.txt
cp /tmp/gr/summary.txt $L/suites_summary.txt 2>/dev/null
(cd /tmp/gr && tar czf $L/gr_logs.tgz logs 2>/dev/null)
grep -vE " pass |test cases" $L/suites_summary.txt | tee -a $L/summary.txt
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
