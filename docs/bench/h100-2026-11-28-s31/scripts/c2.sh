#!/usr/bin/env bash
# Session 16, call 2: run_role publishes with release fences alone (whl_rel; HEAD's fence.acq_rel adds
# an L1 invalidation, CCTL.IVALL) against HEAD (whl_base); attention's combination with one thread's
# release and acquire fences instead of __threadfence in every thread (v/af) against HEAD's (v/head).
# Traces at position 40 (one chunk) and 150 (three: the combination). Then the suites the change touches.
set -u
o=${OUT:?}
L=/tmp/logs2; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s16
[ "$R" = /work/main ] || { mkdir -p /work; rm -rf /work/main; ln -s "$R" /work/main; }
mkdir -p build && tar xJf $P/bin.tar.xz -C build
[ -d /tmp/site_base/gpuos ] || python3 -m pip install -q --no-deps --target /tmp/site_base $P/whl_base/*.whl > $L/pip.log 2>&1
rm -rf /tmp/site_rel; python3 -m pip install -q --no-deps --target /tmp/site_rel $P/whl_rel/*.whl >> $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
[ -f /tmp/w1b/config.json ] || PYTHONPATH=/tmp/site_rel python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name dir site [env...]
  local name=$1 dir=$2 site=$3; shift 3
  (cd $P/v/$dir && env PYTHONPATH=$site "$@" timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$name.json > $L/dec_$name.log 2>&1)
  echo "== $name rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$name.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
B=/tmp/site_base; X=/tmp/site_rel
for k in a b; do
  run base_head_$k head $B; run rel_head_$k head $X; run base_af_$k af $B; run rel_af_$k af $X
done
tr() {  # name dir site pos
  (cd $P/v/$2 && PYTHONPATH=$3 timeout 45 python3 trace_step.py /tmp/w1b 1 --pos $4 > $L/trace_$1.txt 2>&1); echo "trace $1 rc $?"; head -14 $L/trace_$1.txt | tail -8 | cut -c1-100; pack
}
tr rel_af_150 af $X 150; tr base_head_150 head $B 150; tr rel_af_40 af $X 40
cd /work/main
for t in graphs graph_fault errors; do
  timeout 200 build/tests/gpuos_gpu_$t > $L/gpu_$t.log 2>&1; echo "$t rc=$? $(grep -E '^\[doctest\] test cases' $L/gpu_$t.log) ($SECONDS s)" | tee -a $L/summary.txt; pack
done
grep -A2 "claimed node made before" $L/gpu_graphs.log | head -3
cp $P/v/af/ops/llama_attn.cu examples/llama/ops/
cd examples/llama && PYTHONPATH=$X timeout 150 python3 -m pytest -q -x tests > $L/pytest_llama.log 2>&1; echo "llama tests rc $? $(tail -1 $L/pytest_llama.log) ($SECONDS s)" | tee -a $L/summary.txt; pack
PYTHONPATH=$X timeout 150 python3 check_reference.py /tmp/w1b --json $L/check_1b.json > $L/check_1b.log 2>&1; echo "check rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E '"same_tokens"|"ok_|"forced_same|"mean_' $L/check_1b.json | head -8; pack
echo "end $SECONDS s"
