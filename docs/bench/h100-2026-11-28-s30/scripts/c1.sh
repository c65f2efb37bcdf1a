#!/usr/bin/env bash
# Session 15, call 1: the review commits rechecked (errors suite, Llama tests with the working tree);
# L2 bulk prefetch of the projections' weights ahead of their loads, variants alternating with HEAD.
set -u
o=${OUT:?}
L=/tmp/logs; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s15
[ "$R" = /work/main ] || { mkdir -p /work; rm -rf /work/main; ln -s "$R" /work/main; }
mkdir -p build && tar xJf $P/bin.tar.xz -C build
[ -d /tmp/site/gpuos ] || python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
(python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1; echo "weights done at $SECONDS s") &
cd /work/main
timeout 120 build/tests/gpuos_gpu_errors > $L/gpu_errors.log 2>&1; echo "errors rc=$? $(grep -E '^\[doctest\] test cases' $L/gpu_errors.log) ($SECONDS s)" | tee -a $L/summary.txt
cd examples/llama
timeout 150 python3 -m pytest -q -x tests > $L/pytest_llama.log 2>&1; echo "llama tests rc $? $(tail -1 $L/pytest_llama.log) ($SECONDS s)" | tee -a $L/summary.txt
wait; pack
run() {  # name dir
  (cd $2 && timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
V=$P/v
run head $V/head
run a64 $V/a64
run a32 $V/a32
run a128 $V/a128
run i64 $V/i64
run a0 $V/a0
run head2 $V/head
run a64b $V/a64
(cd $V/a64 && timeout 40 python3 trace_step.py /tmp/w1b 1 > $L/trace_a64.txt 2>&1); echo "trace rc $?"; pack
(cd $V/head && timeout 40 python3 trace_step.py /tmp/w1b 1 > $L/trace_head.txt 2>&1); echo "trace rc $?"; pack
echo "end $SECONDS s"
