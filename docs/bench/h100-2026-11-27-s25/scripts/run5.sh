#!/usr/bin/env bash
# Session 10, call 5: fused attention with the count as one acq_rel atomic and its inputs gathered before.
set -u
o=${OUT:?}
P=$PWD/.gpu/s10
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$o/gpu.txt"
python3 -m pip install -q --no-deps --target /tmp/site $P/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
(cd $P/llama && timeout 240 python3 -m pytest -q tests/test_llama_gpu.py > "$o/pytest_llama.log" 2>&1; echo "pytest rc $?" >> "$o/pytest_llama.log")
grep -E "passed|failed|^FAILED|rc " "$o/pytest_llama.log"; echo "pytest at $SECONDS s"
(cd $P/llama && timeout 100 python3 diag.py 2>&1 | grep -v -E "Warning|shards" > "$o/diag.txt"); cat "$o/diag.txt"
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
echo "weights at $SECONDS s"
for i in 1 2 3; do for v in main f0 f4; do
  dir=$P/llama; extra=""
  case $v in main) dir=$PWD/examples/llama;; f0) extra="--fuse-limit 0";; f4) extra="--fuse-limit 4";; esac
  (cd $dir && timeout 120 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 $extra --json "$o/dec_${v}_$i.json" > "$o/dec_${v}_$i.log" 2>&1)
  echo "== dec $v $i ($SECONDS s): $(grep -oE "gpuos batch [18]: \{'ms_per_step': [0-9.]{5}" "$o/dec_${v}_$i.log" | tr '\n' ' ')"
done; done
(cd $P/llama && timeout 90 python3 trace_step.py /tmp/w1b 1 --fuse-limit 4 > "$o/trace_f4.txt" 2>&1); sed -n 1,12p "$o/trace_f4.txt"
(cd $P/llama && timeout 150 python3 check_reference.py /tmp/w1b --json "$o/check_1b.json" > "$o/check_1b.log" 2>&1; echo "rc $?" >> "$o/check_1b.log")
grep -E '"same_tokens"|forced_same|"ok_|rc ' "$o/check_1b.log"
(cd examples/llama && timeout 150 python3 check_reference.py /tmp/w1b --json "$o/check_1b_main.json" > "$o/check_1b_main.log" 2>&1; echo "rc $?" >> "$o/check_1b_main.log")
echo main; grep -E '"same_tokens"|forced_same|"ok_|rc ' "$o/check_1b_main.log"
echo "end $SECONDS s"
tar czf /tmp/out.tgz -C "$o" . ; rm -rf "$o"/* ; mv /tmp/out.tgz "$o"/
