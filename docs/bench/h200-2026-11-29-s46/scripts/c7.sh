#!/usr/bin/env bash
# Session 31, call 7 (H200): main (the library and operators of bbf9e2b's parent, cc683f5) validated as
# issue 19 closes: the 1B check, bench_decode with the torch baselines and batches 1, 4, 8, serve_check
# on the 1B weights, then every GPU suite but the soak, the Python package's and the Llama example's
# pytest suites, and the Llama server under load with operators swapped (tiny weights).
set -u
o=${OUT:?}
L=/tmp/logs7; rm -rf $L; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s46
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
rm -rf /tmp/site_m; python3 -m pip install -q --no-deps --target /tmp/site_m $P/whl_m/*.whl > $L/pip_m.log 2>&1
export PYTHONPATH=/tmp/site_m
cd $P/ex_m && python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt; pack
timeout 60 python3 check_reference.py /tmp/w1b --json $L/check_m.json > $L/check_m.log 2>&1; echo "check m rc $? ($SECONDS s): $(grep mean_err $L/check_m.log | head -c 300)" | tee -a $L/summary.txt; pack
timeout 150 python3 bench_decode.py /tmp/w1b --json $L/bench_llama.json > $L/bench_m.log 2>&1; echo "bench m rc=$? ($SECONDS s)" | tee -a $L/summary.txt; grep -E "TARGET|gpuos batch|torch|cuda graph|eager|bound" $L/bench_m.log | cut -c1-200 | tee -a $L/summary.txt; pack
timeout 80 python3 serve_check.py /tmp/w1b --json $L/serve_m.json > $L/serve_m.log 2>&1; echo "serve m rc=$? ($SECONDS s)" | tee -a $L/summary.txt; tail -3 $L/serve_m.log | cut -c1-300 | tee -a $L/summary.txt; pack
cd $R
unset PYTHONPATH
rm -rf /tmp/b7 /tmp/gr7 && mkdir -p /tmp/b7 && tar xzf $P/bin.tgz -C /tmp/b7 --strip-components=1
WHEEL=$(ls $P/whl_m/*.whl) STEP_TIMEOUT=120 bash scripts/gpu_run.sh /tmp/gr7 /tmp/b7 tests python llama > $L/gpu_run.log 2>&1; echo "gpu_run rc $? ($SECONDS s)" | tee -a $L/summary.txt
cat /tmp/gr7/summary.txt >> $L/summary.txt; cp /tmp/gr7/logs.tar.gz $L/gr_logs.tar.gz 2>/dev/null
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
