#!/usr/bin/env bash
# Session 16, call 3 (HEAD's kernel, whl_base): attention awaits its inputs itself, its row read from the
# host's mapped copy and the keys and values of earlier steps' positions asked for before the await
# (v/ea, the working tree) against HEAD's operators (v/af); with it, two rounds in flight for one
# projection at a time (qkv: eaq2, gate/up: eas2, o and down: ear2). Traces; the Llama tests and the 1B
# check with v/ea.
set -u
o=${OUT:?}
L=/tmp/logs3; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s16
[ -d /tmp/site_base/gpuos ] || python3 -m pip install -q --no-deps --target /tmp/site_base $P/whl_base/*.whl > $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site_base
[ -f /tmp/w1b/config.json ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name dir
  (cd $P/v/$2 && timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
for k in a b; do run af_$k af; run ea_$k ea; run eaq2_$k eaq2; run eas2_$k eas2; run ear2_$k ear2; done
tr() {  # name dir pos
  (cd $P/v/$2 && timeout 45 python3 trace_step.py /tmp/w1b 1 --pos $3 > $L/trace_$1.txt 2>&1); echo "trace $1 rc $?"; head -14 $L/trace_$1.txt | tail -8 | cut -c1-100; pack
}
tr ea_150 ea 150; tr ea_40 ea 40; tr af_40 af 40
cd examples/llama && timeout 150 python3 -m pytest -q -x tests > $L/pytest_llama.log 2>&1; echo "llama tests rc $? $(tail -1 $L/pytest_llama.log) ($SECONDS s)" | tee -a $L/summary.txt; pack
timeout 150 python3 check_reference.py /tmp/w1b --json $L/check_1b.json > $L/check_1b.log 2>&1; echo "check rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E '"same_tokens"|"ok_|"forced_same|"mean_' $L/check_1b.json | head -8; pack
echo "end $SECONDS s"
