#!/usr/bin/env bash
# Session 27, call 1 (H200): main's example (m) against variants, bench_decode --skip-torch batch 1,
# three alternating rounds: a (qkv, gate/up and the LM head take the hidden size in their arguments, so
# that their first weights asked for need not wait for the dimensions' load), ap (a, and each projection's
# thread 0 asks L2 for the rest of its first tile's first 64 KiB before its await), ae (a, and the weights
# streamed with an L2 evict-first policy), ape (both), apn (ap without the residual projections' L2
# prefetches of the next node's weights). Then traces at position 40, the 1B check and the Llama tests.
set -u
o=${OUT:?}
L=/tmp/logs1; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s42
python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
cd $P/ex_m && python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # variant round
  (cd $P/ex_$1 && timeout 70 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1)
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b c; do for v in m a ap ae ape apn; do run $v $k; done; done
for v in m ap ape; do
  (cd $P/ex_$v && timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' > $L/trace_$v.txt 2>&1); echo "trace $v rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
done
for v in a ape; do
  (cd $P/ex_$v && timeout 60 python3 check_reference.py /tmp/w1b --json $L/check_$v.json > $L/check_$v.log 2>&1); echo "check $v rc $? ($SECONDS s): $(grep mean_err $L/check_$v.log | head -c 300)" | tee -a $L/summary.txt; pack
done
(cd $P/ex_a/tests && timeout 90 python3 -m pytest -q -rs -p no:cacheprovider . > $L/pytest_llama_a.log 2>&1); echo "llama tests a rc $? ($SECONDS s): $(tail -1 $L/pytest_llama_a.log)" | tee -a $L/summary.txt; pack
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
