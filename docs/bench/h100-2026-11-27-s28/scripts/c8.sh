#!/usr/bin/env bash
# Session 13, call 8: the weights' loads with an L2 evict-first policy (hint: createpolicy.fractional
# L2::evict_first + L2::cache_hint), with a 256-byte L2 prefetch size (p256), both (hp256), against main.
set -u
O=${OUT:?}; o=/tmp/c8; mkdir -p $o
P=$PWD/.gpu/s13
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$o/gpu.txt"
[ -d /tmp/site/gpuos ] || python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
[ -d /tmp/w1b ] || { python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1; echo "weights done at $SECONDS s"; }
cd examples/llama
run() {  # name ops
  timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 --ops-dir "$2" --json "$o/dec_$1.json" > "$o/dec_$1.log" 2>&1
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [18]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" "$o/dec_$1.log" | sed -E "s/'tokens_per_s': [0-9.]+, //" | tr '\n' ' ')"
}
for r in 1 2 3; do
  run main_$r ops
  for v in hint p256 hp256; do run ${v}_$r $P/ops_$v; done
done
timeout 90 python3 trace_step.py /tmp/w1b 1 --ops $P/ops_hint > "$o/trace_hint.txt" 2>&1; echo "trace hint rc $?"; sed -n 1,12p "$o/trace_hint.txt" | cut -c1-110
tar czf $O/c8.tgz -C /tmp c8
echo "end $SECONDS s"
