#!/usr/bin/env bash
# Session 9, call 8: gated L2 prefetch: projections that await their inputs (ops_pf: the first 2 KiB of each
# weight row asked of L2 before the await), called once the node before has counted some of its tiles
# (whl_gp), against main (whl_main with main's ops) and whl_gp with main's ops. 1B decode, 3 rounds.
set -u
o=${OUT:?}
P=.gpu/s9h
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$o/gpu.txt"
for v in main gp; do python3 -m pip install -q --no-deps --target /tmp/site_$v $P/whl_$v/*.whl > "$o/pip_$v.log" 2>&1; done
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
echo "weights at $SECONDS s"
for i in 1 2 3; do for v in main gp gp_pf gp_pff; do
  site=/tmp/site_gp; ops=""
  case $v in main) site=/tmp/site_main;; gp_pf) ops="--ops-dir $PWD/$P/ops_pf";; gp_pff) ops="--ops-dir $PWD/$P/ops_pff";; esac
  (cd examples/llama && PYTHONPATH=$site timeout 120 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 $ops --json "$o/dec_${v}_$i.json" > "$o/dec_${v}_$i.log" 2>&1)
  echo "== dec $v $i ($SECONDS s): $(grep -oE "gpuos batch [18]: \{'ms_per_step': [0-9.]{5}" "$o/dec_${v}_$i.log" | tr '\n' ' ')"
done; done
echo "end $SECONDS s"
tar czf /tmp/out.tgz -C "$o" . ; rm -rf "$o"/* ; mv /tmp/out.tgz "$o"/
