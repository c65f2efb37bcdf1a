#!/usr/bin/env bash
# Session 24, call 3 (H200), main's wheel at the tail merge (whl_tail): main's Llama example (v/base_ex, m)
# against the working tree's (a: llama_attn awaits its inputs itself, its early loads before the await),
# bench_decode --skip-torch batch 1, three rounds alternating; a trace of each at pos 40; a's 1B check,
# Llama tests and serve_check.
set -u
o=${OUT:?}
L=/tmp/logs3; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s24
python3 -m pip install -q --no-deps --target /tmp/site_t $P/whl_tail/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site_t
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
dir() { [ $1 = m ] && echo $P/v/base_ex || echo $R/examples/llama; }
(cd examples/llama && python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1)
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name round
  (cd $(dir $1) && timeout 70 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1)
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b c; do run m $k; run a $k; done
for v in m a; do
  (cd $(dir $v) && timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' > $L/trace_$v.txt 2>&1); echo "trace $v rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
done
(cd examples/llama
 timeout 100 python3 check_reference.py /tmp/w1b --json $L/check_a.json > $L/check_a.log 2>&1; echo "check a rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
 (cd tests && timeout 120 python3 -m pytest -q -rs -p no:cacheprovider . > $L/pytest_llama_a.log 2>&1); echo "llama tests a rc $? ($SECONDS s): $(tail -1 $L/pytest_llama_a.log)" | tee -a $L/summary.txt; pack
 timeout 80 python3 serve_check.py /tmp/w1b --json $L/serve_a.json > $L/serve_a.log 2>&1; echo "serve a rc=$? ($SECONDS s)" | tee -a $L/summary.txt; pack)
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
