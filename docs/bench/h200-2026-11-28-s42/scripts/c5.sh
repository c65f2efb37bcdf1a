#!/usr/bin/env bash
# Session 27, call 5 (H200): the landed example (m, c759f3c) against qt / qt2 (each down projection tile t
# asks L2 for the first 16 / 32 KiB of the next layer's qkv tile t, which the placement gives the same
# block, instead of the first 4 MiB of qkv's weights spread over its tiles), bench_decode --skip-torch
# batch 1, three alternating rounds; the 1B check of the faster.
set -u
o=${OUT:?}
L=/tmp/logs5; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s42
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
for k in a b c; do for v in m qt qt2; do run $v $k; done; done
best=$(python3 -c "
import json,statistics
m={v:statistics.mean(json.load(open(f'$L/dec_{v}_{k}.json'))['gpuos']['1']['ms_per_step'] for k in 'abc') for v in ('qt','qt2')}
print(min(m,key=m.get))" 2>/dev/null || echo qt)
(cd $P/ex_$best && timeout 60 python3 check_reference.py /tmp/w1b --json $L/check_$best.json > $L/check_$best.log 2>&1); echo "check $best rc $? ($SECONDS s): $(grep mean_err $L/check_$best.log | head -c 300)" | tee -a $L/summary.txt; pack
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
