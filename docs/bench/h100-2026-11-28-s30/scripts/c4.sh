#!/usr/bin/env bash
# Session 15, call 4 (kernel: claiming items await inside the operator): HEAD's operators (hk), the
# attention's output sums by position groups (at), the LM head with two rounds in flight a lane (lg), both
# (atlg); alternating. Trace of atlg; the Llama tests with atlg's operators.
set -u
o=${OUT:?}
L=/tmp/logs4; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s15
[ "$R" = /work/main ] || { mkdir -p /work; rm -rf /work/main; ln -s "$R" /work/main; }
[ -d /tmp/site/gpuos ] || python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
[ -f /tmp/w1b/config.json ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
run() {  # name dir
  (cd $2 && timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
V=$P/v
for r in 1 2; do for n in hk at lg atlg; do run ${n}_$r $V/$n; done; done
(cd $V/atlg && timeout 40 python3 trace_step.py /tmp/w1b 1 > $L/trace_atlg.txt 2>&1); echo "trace rc $?"; head -14 $L/trace_atlg.txt | tail -8; pack
cp -r $V/atlg/ops examples/llama/ && cd examples/llama && timeout 150 python3 -m pytest -q -x tests > $L/pytest_llama.log 2>&1; echo "llama tests rc $? $(tail -1 $L/pytest_llama.log) ($SECONDS s)" | tee -a $L/summary.txt; pack
echo "end $SECONDS s"
