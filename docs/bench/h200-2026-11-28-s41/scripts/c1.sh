#!/usr/bin/env bash
# Session 26, call 1 (H200): main's example (m), bench_decode --skip-torch batch 1, two rounds; the
# traced step at position 40 with stamps inside llama::project's first tile (st,
# ../h200-2026-11-28-s40/variants/stamps_in_project_prepared.diff) and its raw records (where the LM
# head's blocks spend the time from their down tile to their first head tile).
set -u
o=${OUT:?}
L=/tmp/logs1; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s41
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
for k in a b; do run m $k; done
(cd $P/ex_st && timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' --raw $L/raw_st.npy > $L/trace_st.txt 2>&1); echo "trace st rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
(cd $P/ex_m && timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' --raw $L/raw_m.npy > $L/trace_m.txt 2>&1); echo "trace m rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
