#!/usr/bin/env bash
# Session 28, call 1 (H200): the release fence's probe (which outstanding memory operations it waits for),
# then main (m) against two library variants, bench_decode --skip-torch batch 1, three alternating rounds:
# look (the awaiting projections' first look at their one predecessor's count before their own loads,
# variants/inputs_look.diff) and f (a counted chunk's release and count made at the next item's start,
# past its barrier when that item's operator awaits its inputs itself, variants/count_after_entry.diff).
# Then traces at position 40 with the per-block analysis, the 1B check of both variants.
set -u
o=${OUT:?}
L=/tmp/logs1; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s43
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
$P/fence_probe > $L/fence_probe.txt 2>&1; cat $L/fence_probe.txt | tee -a $L/summary.txt
for v in m look f; do python3 -m pip install -q --no-deps --target /tmp/site_$v $P/whl_$v/*.whl > $L/pip_$v.log 2>&1; done
cd $P/ex_m && PYTHONPATH=/tmp/site_m python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # variant round
  (cd $P/ex_$1 && PYTHONPATH=/tmp/site_$1 timeout 70 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1)
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b c; do for v in m look f; do run $v $k; done; done
for v in m look f; do
  (cd $P/ex_$v && PYTHONPATH=/tmp/site_$v timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' --raw /tmp/raw_$v.npy > $L/trace_$v.txt 2>&1); echo "trace $v rc $? ($SECONDS s)" | tee -a $L/summary.txt
  python3 $P/late_blocks.py /tmp/raw_$v.npy > $L/late_$v.txt 2>&1; cat $L/late_$v.txt >> $L/summary.txt; pack
done
for v in look f; do
  (cd $P/ex_$v && PYTHONPATH=/tmp/site_$v timeout 60 python3 check_reference.py /tmp/w1b --json $L/check_$v.json > $L/check_$v.log 2>&1); echo "check $v rc $? ($SECONDS s): $(grep mean_err $L/check_$v.log | head -c 300)" | tee -a $L/summary.txt; pack
done
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
