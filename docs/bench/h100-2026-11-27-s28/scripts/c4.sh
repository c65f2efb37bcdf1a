#!/usr/bin/env bash
# Session 13, call 4: L2 prefetch of the projections' weights (cp.async.bulk.prefetch.L2): pf (the first
# tile before the await, each next tile during the one before), pfa (next tiles only), pfw (the first
# tile only), pf2 (two tiles ahead), against main (8e93e50's operators). Two rounds, then a trace of the best.
set -u
O=${OUT:?}; o=/tmp/c4; mkdir -p $o
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
for r in 1 2; do
  run main_$r ops
  for v in pf pfa pfw pf2; do run ${v}_$r $P/ops_$v; done
done
for v in pf pf2; do
  timeout 90 python3 trace_step.py /tmp/w1b 1 --ops $P/ops_$v > "$o/trace_$v.txt" 2>&1; echo "trace $v rc $?"; sed -n 4,12p "$o/trace_$v.txt" | cut -c1-110
done
tar czf $O/c4.tgz -C /tmp c4
echo "end $SECONDS s"
