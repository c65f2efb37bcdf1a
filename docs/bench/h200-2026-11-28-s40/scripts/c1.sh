#!/usr/bin/env bash
# Session 25, call 1 (H200): main's example (m) against x round ahead in every projection (xa), in the
# 16-row ones only (x16), and attention one query head a tile (h; h2: two heads a tile), bench_decode
# --skip-torch batch 1, three rounds alternating; traces at pos 40; h's 1B check and Llama tests.
set -u
o=${OUT:?}
L=/tmp/logs1; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s40
python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
cd $P/ex_m && python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
dir() { case $1 in h2) echo $P/ex_h;; *) echo $P/ex_$1;; esac; }
units() { case $1 in h2) echo 16;; *) echo 32;; esac; }
run() {  # variant round
  (cd $(dir $1) && LLAMA_ATTN_UNITS=$(units $1) timeout 70 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1)
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b c; do for v in m xa x16 h h2; do run $v $k; done; done
for v in m h xa x16; do
  (cd $(dir $v) && LLAMA_ATTN_UNITS=32 timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' > $L/trace_$v.txt 2>&1); echo "trace $v rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
done
(cd $P/ex_h && timeout 60 python3 check_reference.py /tmp/w1b --json $L/check_h.json > $L/check_h.log 2>&1); echo "check h rc $? ($SECONDS s): $(tail -2 $L/check_h.log | head -c 300)" | tee -a $L/summary.txt; pack
if [ $SECONDS -lt 500 ]; then
(cd $P/ex_h/tests && timeout 70 python3 -m pytest -q -rs -p no:cacheprovider . > $L/pytest_llama_h.log 2>&1); echo "llama tests h rc $? ($SECONDS s): $(tail -1 $L/pytest_llama_h.log)" | tee -a $L/summary.txt; pack
fi
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
