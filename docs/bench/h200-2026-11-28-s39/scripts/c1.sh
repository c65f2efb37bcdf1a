#!/usr/bin/env bash
# Session 24, call 1 (H200): main's wheel (m) against the tail-pin wheel (t: run_role's post-tile state in
# shared memory), bench_decode --skip-torch batch 1, three rounds alternating; a trace of each at pos 40;
# t's 1B check and Llama tests. dd: main's wheel with the down projection keeping two rounds in flight.
set -u
o=${OUT:?}
L=/tmp/logs1; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s24
python3 -m pip install -q --no-deps --target /tmp/site_m $P/whl_main/*.whl > $L/pip.log 2>&1
python3 -m pip install -q --no-deps --target /tmp/site_t $P/whl_tail/*.whl >> $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
cd examples/llama
PYTHONPATH=/tmp/site_m python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name round (dd: main's wheel, the operators of v/dd)
  local site=$1 ops=""
  [ $1 = dd ] && site=m && ops="--ops-dir $P/v/dd"
  PYTHONPATH=/tmp/site_$site timeout 70 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 $ops --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b c; do run m $k; run t $k; run dd $k; done
for v in m t dd; do
  site=$v ops=""
  [ $v = dd ] && site=m && ops="--ops $P/v/dd"
  PYTHONPATH=/tmp/site_$site timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 $ops --engine '{"max_pos": 192}' > $L/trace_$v.txt 2>&1; echo "trace $v rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
done
PYTHONPATH=/tmp/site_t timeout 100 python3 check_reference.py /tmp/w1b --json $L/check_t.json > $L/check_t.log 2>&1; echo "check t rc $? ($SECONDS s): $(tail -2 $L/check_t.log | head -c 300)" | tee -a $L/summary.txt; pack
(cd tests && PYTHONPATH=/tmp/site_t timeout 120 python3 -m pytest -q -rs -p no:cacheprovider . > $L/pytest_llama_t.log 2>&1); echo "llama tests t rc $? ($SECONDS s): $(tail -1 $L/pytest_llama_t.log)" | tee -a $L/summary.txt; pack
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
