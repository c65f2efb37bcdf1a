#!/usr/bin/env bash
# Session 24, call 4 (H200): what the L1 invalidation of a placed item's wait costs: main's wheel at the
# tail merge (t) against a probe kernel whose role_wait skips its acquire (noiv: unsafe, not for main),
# main's operators, bench_decode --skip-torch batch 1, three rounds alternating; a trace of each.
set -u
o=${OUT:?}
L=/tmp/logs4; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s24
python3 -m pip install -q --no-deps --target /tmp/site_t $P/whl_tail/*.whl > $L/pip.log 2>&1
python3 -m pip install -q --no-deps --target /tmp/site_noiv $P/whl_noiv/*.whl >> $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
cd examples/llama
PYTHONPATH=/tmp/site_t python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name round
  PYTHONPATH=/tmp/site_$1 timeout 70 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b c; do run t $k; run noiv $k; done
PYTHONPATH=/tmp/site_noiv timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' > $L/trace_noiv.txt 2>&1; echo "trace noiv rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
