#!/usr/bin/env bash
# Session 17, call 6 (main, whl_base): the claim spread (GPUOS_CLAIM_SPREAD: a claim of a large placed node
# takes (tiles left) / (spread x grid blocks) tiles, at least 1), which sets how many tiles the LM head's
# calls take: 64 (the default: one tile a call), 8 and 4, alternating.
set -u
o=${OUT:?}
L=/tmp/logs6; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s17
python3 -m pip install -q --no-deps --target /tmp/site_base $P/whl_base/*.whl > $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site_base
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name spread
  (cd $P/v/base && GPUOS_CLAIM_SPREAD=$2 timeout 45 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
for k in a b; do run sp64_$k 64; run sp8_$k 8; run sp4_$k 4; done
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
