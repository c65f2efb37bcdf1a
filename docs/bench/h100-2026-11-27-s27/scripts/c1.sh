#!/usr/bin/env bash
# Session 12, call 1: the 1B step with the operators' variants (ranges, pipelined rounds, awaiting inputs), inlining on.
set -u
o=${OUT:?}
P=$PWD/.gpu/s12
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$o/gpu.txt"
for v in main rng; do [ -d /tmp/site_$v ] || python3 -m pip install -q --no-deps --target /tmp/site_$v $P/whl_$v/*.whl >> "$o/pip.log" 2>&1; done
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
echo "weights at $SECONDS s"
cd examples/llama
R=${ROUNDS:-1}; TAG=${TAG:-}
for i in $(seq 1 $R); do for v in ${VARIANTS:-main rng pl rngaw plaw}; do
  s=rng; [ $v = main ] && s=main
  GPUOS_INLINE_OPERATORS=1 PYTHONPATH=/tmp/site_$s timeout 150 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 --ops-dir $P/ops_$v --json "$o/dec_${v}_$i$TAG.json" > "$o/dec_${v}_$i$TAG.log" 2>&1
  echo "== dec $v $i ($SECONDS s): $(grep -oE "gpuos batch [18]: \{'ms_per_step': [0-9.]{5}" "$o/dec_${v}_$i$TAG.log" | tr '\n' ' ')"
done; done
for v in ${TRACES:-}; do
  s=rng; [ $v = main ] && s=main
  GPUOS_INLINE_OPERATORS=1 PYTHONPATH=/tmp/site_$s timeout 90 python3 trace_step.py /tmp/w1b 1 --ops $P/ops_$v > "$o/trace_$v$TAG.txt" 2>&1; echo "trace $v rc=$? ($SECONDS s)"; sed -n 1,12p "$o/trace_$v$TAG.txt"
done
echo "end $SECONDS s"
