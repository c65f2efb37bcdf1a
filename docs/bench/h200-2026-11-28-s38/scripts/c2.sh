#!/usr/bin/env bash
# Session 23, call 2 (H200, main's wheel at 8eac5af): Llama projections copying their first rounds into
# 32 KiB of stage memory (bulk copy, mbarrier) before their await; against main's operators with no stage
# memory and with 32 KiB reserved, two rounds, alternating; a trace of each at position 40.
set -u
o=${OUT:?}
L=/tmp/logs2; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu
python3 -m pip install -q --no-deps --target /tmp/site $P/s22/whl_main/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
W="python3 $P/s23/sc/withstage.py"
run() {  # name stage round
  (cd examples/llama && STAGE=$2 timeout 90 $W bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --ops-dir $P/s23/v/$1 --json $L/dec_$1_$2_$3.json > $L/dec_$1_$2_$3.log 2>&1)
  echo "== $1 stage $2 $3 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2_$3.log)" | tee -a $L/summary.txt
  pack
}
for k in a b; do run m 0 $k; run m 32768 $k; run q 32768 $k; run q21 32768 $k; run qr1 32768 $k; run qr2 32768 $k; run all 32768 $k; done
for v in m all qr1; do
  s=32768; [ $v = m ] && s=0
  (cd examples/llama && STAGE=$s timeout 45 $W trace_step.py /tmp/w1b 1 --pos 40 --ops $P/s23/v/$v --engine '{"max_pos": 192}' > $L/trace_$v.txt 2>&1); echo "trace $v rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
done
(cd examples/llama && STAGE=32768 timeout 60 $W check_reference.py /tmp/w1b --ops-dir $P/s23/v/all --json $L/check_all.json > $L/check_all.log 2>&1); echo "check all rc $? ($SECONDS s)" | tee -a $L/summary.txt
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
