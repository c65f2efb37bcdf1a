#!/usr/bin/env bash
# Session 29, call 1 (H200): the fence probe for loads issued after the fence began, the local-memory
# probe; main (m) against two timing bounds, bench_decode --skip-torch batch 1, alternating rounds:
# nw (every placed wait returns at once, no acquire: unsafe, tokens not checked) and nwa (no wait, the
# acquire kept); the stamped build's trace at position 40 (passage.py).
set -u
o=${OUT:?}
L=/tmp/logs1; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s44
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
$P/fence_after > $L/fence_after.txt 2>&1; cat $L/fence_after.txt | tee -a $L/summary.txt
$P/l1_local_probe > $L/l1_local.txt 2>&1; cat $L/l1_local.txt | tee -a $L/summary.txt
pack
for v in m nw nwa st; do python3 -m pip install -q --no-deps --target /tmp/site_$v $P/whl_$v/*.whl > $L/pip_$v.log 2>&1; done
cd $P/ex_m && PYTHONPATH=/tmp/site_m python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # variant round
  (cd $P/ex_$1 && PYTHONPATH=/tmp/site_$1 timeout 70 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1)
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b c; do for v in m nw nwa; do run $v $k; done; done
for v in st m; do
  (cd $P/ex_$v && PYTHONPATH=/tmp/site_$v timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' --raw /tmp/raw_$v.npy > $L/trace_$v.txt 2>&1); echo "trace $v rc $? ($SECONDS s)" | tee -a $L/summary.txt
  cp /tmp/raw_$v.npy $L/ 2>/dev/null
  python3 $P/late_blocks.py /tmp/raw_$v.npy > $L/late_$v.txt 2>&1; pack
done
python3 $P/passage.py /tmp/raw_st.npy > $L/passage_st.txt 2>&1; cat $L/passage_st.txt >> $L/summary.txt
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
