#!/usr/bin/env bash
# Session 15, call 8: the LM head in fixed shares instead of claimed (an experiment build: the placement's
# claim threshold from GPUOS_EXP_CLAIM_FROM, 4 by default; 64 places the 8,016-tile head in fixed shares
# of 30-31 tiles a role), the landed operators, alternating; a trace of each.
set -u
o=${OUT:?}
L=/tmp/logs8; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
P=$PWD/.gpu/s15
python3 -m pip install -q --no-deps --target /tmp/site_exp $P/whl_exp/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site_exp
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
cd examples/llama
run() {  # name claim_from
  GPUOS_EXP_CLAIM_FROM=$2 timeout 50 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
run claim 4; run fixed 64; run claim_b 4; run fixed_b 64
GPUOS_EXP_CLAIM_FROM=64 timeout 35 python3 trace_step.py /tmp/w1b 1 > $L/trace_fixed.txt 2>&1; echo "trace rc $?"; grep -E "logits|down" $L/trace_fixed.txt | head -2; pack
echo "end $SECONDS s"
