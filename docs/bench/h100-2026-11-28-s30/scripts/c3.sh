#!/usr/bin/env bash
# Session 15, call 3: claiming items await inside the operator (the kernel change: wheel whl/, HEAD's in
# whl_head/); the projections with two rounds in flight, the second asked for after the await (p3), and
# before it (p2); alternating with HEAD's operators. Then the C++ GPU suites the change touches.
set -u
o=${OUT:?}
L=/tmp/logs3; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s15
[ "$R" = /work/main ] || { mkdir -p /work; rm -rf /work/main; ln -s "$R" /work/main; }
mkdir -p build && tar xJf $P/bin.tar.xz -C build
rm -rf /tmp/site /tmp/site_head
python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > $L/pip.log 2>&1
python3 -m pip install -q --no-deps --target /tmp/site_head $P/whl_head/*.whl >> $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
[ -f /tmp/w1b/config.json ] || PYTHONPATH=/tmp/site python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
run() {  # name dir site
  (cd $2 && PYTHONPATH=$3 timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
V=$P/v
run head_k0 $V/head /tmp/site_head
run head_k1 $V/head /tmp/site
run p3_k1 $V/p3 /tmp/site
run p2_k1 $V/p2 /tmp/site
run head_k0b $V/head /tmp/site_head
run head_k1b $V/head /tmp/site
run p3_k1b $V/p3 /tmp/site
(cd $V/p3 && PYTHONPATH=/tmp/site timeout 40 python3 trace_step.py /tmp/w1b 1 > $L/trace_p3.txt 2>&1); echo "trace rc $?"; head -14 $L/trace_p3.txt | tail -8; pack
(cd $V/head && PYTHONPATH=/tmp/site timeout 40 python3 trace_step.py /tmp/w1b 1 > $L/trace_head_k1.txt 2>&1); echo "trace rc $?"; tail -2 $L/trace_head_k1.txt | head -1; grep logits $L/trace_head_k1.txt | head -1; pack
cd /work/main
for t in graphs graph_fault; do
  timeout 200 build/tests/gpuos_gpu_$t > $L/gpu_$t.log 2>&1; echo "$t rc=$? $(grep -E '^\[doctest\] test cases' $L/gpu_$t.log) ($SECONDS s)" | tee -a $L/summary.txt; pack
done
GPUOS_INLINE_OPERATORS=1 timeout 200 build/tests/gpuos_gpu_graphs > $L/gpu_inl_graphs.log 2>&1; echo "inline graphs rc=$? $(grep -E '^\[doctest\] test cases' $L/gpu_inl_graphs.log) ($SECONDS s)" | tee -a $L/summary.txt; pack
cp -r $V/p3/ops examples/llama/ && cd examples/llama && PYTHONPATH=/tmp/site timeout 150 python3 -m pytest -q -x tests > $L/pytest_llama.log 2>&1; echo "llama tests rc $? $(tail -1 $L/pytest_llama.log) ($SECONDS s)" | tee -a $L/summary.txt; pack
echo "end $SECONDS s"
