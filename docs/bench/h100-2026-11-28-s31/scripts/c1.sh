#!/usr/bin/env bash
# Session 16, call 1: an experiment build (whl_exp: a claimed node's roles run fixed shares of
# GPUOS_EXP_FIXED eighths of an even share first, 6 by default, then claim the rest; role_wait's poll
# sleeps at most GPUOS_EXP_POLL_CAP ns, bit 16: no release fences in run_role, a diagnostic) against
# HEAD's (whl_base); HEAD's operators (v/head: attention in tiles of 64 positions) and the new attention
# (v/new: tiles of 256 positions taken 64 at a time with a running softmax). Then the Llama tests with the
# new operators, a trace, and the C++ graphs suites of the working tree's build.
set -u
o=${OUT:?}
L=/tmp/logs1; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s16
[ "$R" = /work/main ] || { mkdir -p /work; rm -rf /work/main; ln -s "$R" /work/main; }
mkdir -p build && tar xJf $P/bin.tar.xz -C build
python3 -m pip install -q --no-deps --target /tmp/site_base $P/whl_base/*.whl > $L/pip.log 2>&1
python3 -m pip install -q --no-deps --target /tmp/site_exp $P/whl_exp/*.whl >> $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
PYTHONPATH=/tmp/site_exp python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name dir site [env...] -- [args]
  local name=$1 dir=$2 site=$3; shift 3
  (cd $P/v/$dir && env PYTHONPATH=$site "$@" timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$name.json ${EXTRA:-} > $L/dec_$name.log 2>&1)
  echo "== $name rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$name.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
B=/tmp/site_base; X=/tmp/site_exp
run base_head head $B
run exp_head_f0 head $X GPUOS_EXP_FIXED=0
run exp_head head $X
run exp_new new $X
EXTRA="--chunk 64" run exp_new_c64 new $X
run exp_new_f0 new $X GPUOS_EXP_FIXED=0
run exp_new_f4 new $X GPUOS_EXP_FIXED=4
run exp_new_f7 new $X GPUOS_EXP_FIXED=7
run exp_new_p64 new $X GPUOS_EXP_POLL_CAP=64
run exp_new_p32 new $X GPUOS_EXP_POLL_CAP=32
run exp_new_nofence new $X GPUOS_EXP_POLL_CAP=65792
run exp_new_s16 new $X GPUOS_CLAIM_SPREAD=16
run base_head_b head $B
run exp_new_b new $X
run exp_head_b head $X
run exp_new_f0_b new $X GPUOS_EXP_FIXED=0
(cd $P/v/new && PYTHONPATH=$X timeout 40 python3 trace_step.py /tmp/w1b 1 > $L/trace_new.txt 2>&1); echo "trace rc $?"; head -14 $L/trace_new.txt | tail -9; pack
(cd $P/v/new && PYTHONPATH=$X timeout 40 python3 trace_step.py /tmp/w1b 1 --engine '{"max_pos": 192}' > $L/trace_new_192.txt 2>&1); echo "trace rc $?"; head -14 $L/trace_new_192.txt | tail -9; pack
(cd $P/v/head && PYTHONPATH=$B timeout 40 python3 trace_step.py /tmp/w1b 1 > $L/trace_head.txt 2>&1); echo "trace rc $?"; head -14 $L/trace_head.txt | tail -9; pack
cd examples/llama && PYTHONPATH=$X timeout 150 python3 -m pytest -q -x tests > $L/pytest_llama.log 2>&1; echo "llama tests rc $? $(tail -1 $L/pytest_llama.log) ($SECONDS s)" | tee -a $L/summary.txt; pack
cd /work/main
for t in graphs graph_fault; do
  timeout 200 build/tests/gpuos_gpu_$t > $L/gpu_$t.log 2>&1; echo "$t rc=$? $(grep -E '^\[doctest\] test cases' $L/gpu_$t.log) ($SECONDS s)" | tee -a $L/summary.txt; pack
done
echo "end $SECONDS s"
