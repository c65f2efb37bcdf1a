#!/usr/bin/env bash
# Session 25, call 3 (H200): attention one query head a tile, a block's tiles in one range call (hr),
# against main (m) and the one-tile-a-call form (hc): bench_decode --skip-torch batches 1 and 8, two
# rounds alternating; traces of 8 rows with max_pos 1024 (a server's cache: 16 chunks); serve_check of
# m and hr; hr's 1B check and Llama tests.
set -u
o=${OUT:?}
L=/tmp/logs3; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s40
python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
cd $P/ex_m && python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # variant round
  (cd $P/ex_$1 && timeout 70 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1)
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
for k in a b; do for v in m hc hr; do run $v $k; done; done
for v in m hr hc; do
  (cd $P/ex_$v && timeout 45 python3 trace_step.py /tmp/w1b 8 --pos 40 --engine '{"max_pos": 1024}' > $L/trace8_$v.txt 2>&1); echo "trace8 $v rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
done
for v in hr m; do
  (cd $P/ex_$v && timeout 80 python3 serve_check.py /tmp/w1b --json $L/serve_$v.json > $L/serve_$v.log 2>&1); echo "serve $v rc=$? ($SECONDS s)" | tee -a $L/summary.txt; pack
done
cd $P/ex_hr
timeout 60 python3 check_reference.py /tmp/w1b --json $L/check_hr.json > $L/check_hr.log 2>&1; echo "check hr rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
if [ $SECONDS -lt 530 ]; then
(cd tests && timeout 60 python3 -m pytest -q -rs -p no:cacheprovider . > $L/pytest_llama_hr.log 2>&1); echo "llama tests hr rc $? ($SECONDS s): $(tail -1 $L/pytest_llama_hr.log)" | tee -a $L/summary.txt; pack
fi
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
