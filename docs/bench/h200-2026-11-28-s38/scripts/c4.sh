#!/usr/bin/env bash
# Session 23, call 4 (H200, main's wheel at 8eac5af): ss, the RMSNorm's partial sums asked for in one round
# trip (two float4 a thread at once); ssq, plus qkv's dimensions before its await and its row right after;
# ssq2, plus the cache's dimensions before the await; against main's operators, three rounds, alternating;
# traces of m and ssq2 at position 40; the 1B check of ssq2.
set -u
o=${OUT:?}
L=/tmp/logs4; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu
python3 -m pip install -q --no-deps --target /tmp/site $P/s22/whl_main/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name round
  (cd examples/llama && timeout 90 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --ops-dir $P/s23/v/$1 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1)
  echo "== $1 $2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b c; do run m $k; run ss $k; run ssq $k; run ssq2 $k; done
tr() {
  (cd examples/llama && timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --ops $P/s23/v/$1 --engine '{"max_pos": 192}' > $L/trace_$1.txt 2>&1); echo "trace $1 rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
}
tr m; tr ssq2
(cd examples/llama && timeout 60 python3 check_reference.py /tmp/w1b --ops-dir $P/s23/v/ssq2 --json $L/check_ssq2.json > $L/check_ssq2.log 2>&1); echo "check ssq2 rc $? ($SECONDS s)" | tee -a $L/summary.txt
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
