#!/usr/bin/env bash
# Session 13, call 9: main with the weights' loads asking L2 for 256 bytes (L2::256B): the Llama tests, the
# full decode benchmark with the torch baselines.
set -u
O=${OUT:?}; o=/tmp/c9; mkdir -p $o
P=$PWD/.gpu/s13
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$o/gpu.txt"
[ -d /tmp/site/gpuos ] || python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
[ -d /tmp/w1b ] || (python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1; echo "weights done at $SECONDS s") &
cd examples/llama
timeout 200 python3 -m pytest -q tests > "$o/pytest_llama.log" 2>&1; echo "llama tests rc $? $(tail -1 "$o/pytest_llama.log") ($SECONDS s)"
wait
timeout 200 python3 check_reference.py /tmp/w1b --json "$o/check_1b.json" > "$o/check_1b.log" 2>&1; echo "check rc $? ($SECONDS s)"; grep -E '"same_tokens"|"ok_|"forced_same|mean_err|max_abs' "$o/check_1b.json" | tr '\n' ' '; echo
timeout 170 python3 bench_decode.py /tmp/w1b --batches 1,4,8 --new 128 --json "$o/bench_llama.json" > "$o/bench_llama.log" 2>&1; echo "bench rc=$? ($SECONDS s)"; tail -4 "$o/bench_llama.log"
tar czf $O/c9.tgz -C /tmp c9
echo "end $SECONDS s"
