#!/usr/bin/env bash
# Session 14, call 7: llama_resid (o and down projections) in tiles of 8 rows, spread over every block,
# against HEAD (16-row tiles) run from HEAD's examples/llama; the Llama tests; a trace; the 1B check.
set -u
o=${OUT:?}
L=/tmp/logs; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s14
[ -d /tmp/site/gpuos ] || python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site
(python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1; echo "weights done at $SECONDS s") &
mkdir -p /tmp/head && git archive HEAD examples/llama | tar x -C /tmp/head
cd examples/llama
timeout 120 python3 -m pytest -q -x tests > $L/pytest_llama.log 2>&1; echo "llama tests rc $? $(tail -1 $L/pytest_llama.log) ($SECONDS s)" | tee -a $L/summary.txt
wait; pack
run() {  # name dir
  (cd $2 && timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
run r8 $R/examples/llama
run head /tmp/head/examples/llama
run r8b $R/examples/llama
run headb /tmp/head/examples/llama
timeout 40 python3 trace_step.py /tmp/w1b 1 > $L/trace_r8.txt 2>&1; echo "trace rc $?"; head -14 $L/trace_r8.txt | tail -7; pack
timeout 130 python3 check_reference.py /tmp/w1b --json $L/check_1b.json > $L/check_1b.log 2>&1; echo "check rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E '"same_tokens"|"ok_|"forced_same|"mean_' $L/check_1b.json | head -8; pack
echo "end $SECONDS s"
