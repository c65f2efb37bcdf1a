#!/usr/bin/env bash
# Session 14, call 1: stage memory (C++ errors suite), the Llama projections streaming through it:
# Llama tests, bench_decode per ring depth against the register path (HEAD's operators), a trace.
set -u
o=${OUT:?}
R=$PWD
P=$R/.gpu/s14
[ "$R" = /work/main ] || { mkdir -p /work; rm -rf /work/main; ln -s "$R" /work/main; }
mkdir -p build && tar xJf $P/bin.tar.xz -C build
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$o/gpu.txt"; cat "$o/gpu.txt"
python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
(python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1; echo "weights done at $SECONDS s") &
cd /work/main
timeout 120 build/tests/gpuos_gpu_errors > "$o/gpu_errors.log" 2>&1; echo "errors rc=$? $(grep -E '^\[doctest\] test cases' "$o/gpu_errors.log") ($SECONDS s)"
cd examples/llama
timeout 200 python3 -m pytest -q -x tests > "$o/pytest_llama.log" 2>&1; echo "llama tests rc $? $(tail -1 "$o/pytest_llama.log") ($SECONDS s)"
wait
run() {  # name ops stage
  timeout 100 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --ops-dir $2 ${3:+--stage-bytes $3} --json "$o/dec_$1.json" > "$o/dec_$1.log" 2>&1
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch 1: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" "$o/dec_$1.log")"
}
run s6 $P/ops_s6
run head0 $P/ops_head
run head96 $P/ops_head 98304
run s4 $P/ops_s4
run s3 $P/ops_s3
run s6np $P/ops_s6np
run s6b $P/ops_s6
run head0b $P/ops_head
timeout 90 python3 trace_step.py /tmp/w1b 1 > "$o/trace_s6.txt" 2>&1; echo "trace rc $?"; head -16 "$o/trace_s6.txt"
echo "end $SECONDS s"
