#!/usr/bin/env bash
# Session 27, call 3 (H200): main's example (m) against ao (each attention tile t asks L2 for the o
# projection's tile t, which the placement gives the same role), bench_decode --skip-torch batch 1,
# three alternating rounds; traces at position 40 with their raw records, and which blocks end each node
# (late_blocks.py); the 1B check of ao.
set -u
o=${OUT:?}
L=/tmp/logs3; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s42
S=$R/docs/bench/h200-2026-11-28-s42/scripts
python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
[ -d /tmp/w1b ] || (cd $P/ex_m && python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1)
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # variant round
  (cd $P/ex_$1 && timeout 70 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1)
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b c; do for v in m ao; do run $v $k; done; done
for v in m ao; do
  (cd $P/ex_$v && timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' --raw /tmp/raw_$v.npy > $L/trace_$v.txt 2>&1); echo "trace $v rc $? ($SECONDS s)" | tee -a $L/summary.txt
  python3 $S/late_blocks.py /tmp/raw_$v.npy > $L/late_$v.txt 2>&1; cat $L/late_$v.txt >> $L/summary.txt; pack
done
(cd $P/ex_ao && timeout 60 python3 check_reference.py /tmp/w1b --json $L/check_ao.json > $L/check_ao.log 2>&1); echo "check ao rc $? ($SECONDS s): $(grep mean_err $L/check_ao.log | head -c 300)" | tee -a $L/summary.txt; pack
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
