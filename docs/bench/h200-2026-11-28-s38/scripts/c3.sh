#!/usr/bin/env bash
# Session 23, call 3 (H200, main's wheel at 8eac5af): stage memory for the residual projections alone
# (r1: o and down copy their first round, 16 KiB; r2: two rounds, 32 KiB) against main's operators with
# 0, 16 and 32 KiB of stage memory, two rounds; traces of main, q21 (qkv stages two rounds), r1 and r2.
set -u
o=${OUT:?}
L=/tmp/logs3; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu
python3 -m pip install -q --no-deps --target /tmp/site $P/s22/whl_main/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
W="python3 $P/s23/sc/withstage.py"
run() {  # name stage round
  (cd examples/llama && STAGE=$2 timeout 90 $W bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --ops-dir $P/s23/v/$1 --json $L/dec_$1_$2_$3.json > $L/dec_$1_$2_$3.log 2>&1)
  echo "== $1 stage $2 $3 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2_$3.log)" | tee -a $L/summary.txt
  pack
}
for k in a b; do run m 0 $k; run m 16384 $k; run r1 16384 $k; run m 32768 $k; run r2 32768 $k; done
tr() {  # name stage
  (cd examples/llama && STAGE=$2 timeout 45 $W trace_step.py /tmp/w1b 1 --pos 40 --ops $P/s23/v/$1 --engine '{"max_pos": 192}' > $L/trace_$1_$2.txt 2>&1); echo "trace $1 rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
}
tr m 0; tr q21 32768; tr r1 16384; tr r2 32768; tr m 32768
run r1 16384 c; run m 0 c
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
