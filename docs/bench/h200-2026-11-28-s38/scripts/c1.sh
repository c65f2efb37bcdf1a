#!/usr/bin/env bash
# Session 23, call 1 (H200, main's wheel at 8eac5af = b860217's kernel): (1) what a release fence waits
# for, with copies into shared memory in flight; (2) the cost of reserved, unused stage memory.
set -u
o=${OUT:?}
L=/tmp/logs1; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu
python3 -m pip install -q --no-deps --target /tmp/site $P/s22/whl_main/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
$P/s23/probe/fence_probe > $L/fence_probe.txt 2>&1; cat $L/fence_probe.txt >> $L/summary.txt
pack
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
cp $P/s23/sc/bench_stage.py examples/llama/
run() {  # stage_bytes round
  (cd examples/llama && STAGE=$1 timeout 90 python3 bench_stage.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1)
  echo "== stage $1 $2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b; do run 0 $k; run 32768 $k; run 65536 $k; run 16384 $k; done
run 0 c
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
