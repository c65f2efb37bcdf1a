#!/usr/bin/env bash
# Session 12, call 5: the landed operators with claim spreads 64 (default), 16, 4, 1 (the LM head's claimed batches, one range call each); traces at 64 and 1.
set -u
o=${OUT:?}
P=$PWD/.gpu/s12
[ -d /tmp/site_rng ] || python3 -m pip install -q --no-deps --target /tmp/site_rng $P/whl_rng/*.whl >> "$o/pip.log" 2>&1
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
echo "weights at $SECONDS s"
cd examples/llama
export PYTHONPATH=/tmp/site_rng
for i in 1 2; do for sp in 64 16 4 1; do
  GPUOS_CLAIM_SPREAD=$sp timeout 100 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 --json "$o/dec_sp${sp}_$i.json" > "$o/dec_sp${sp}_$i.log" 2>&1
  echo "== dec spread $sp $i ($SECONDS s): $(grep -oE "gpuos batch [18]: \{'ms_per_step': [0-9.]{5}" "$o/dec_sp${sp}_$i.log" | tr '\n' ' ')"
done; done
for sp in 64 1; do
  GPUOS_CLAIM_SPREAD=$sp timeout 90 python3 trace_step.py /tmp/w1b 1 > "$o/trace_sp$sp.txt" 2>&1; echo "trace $sp rc=$? ($SECONDS s)"; sed -n 1,12p "$o/trace_sp$sp.txt"
done
echo "end $SECONDS s"
