#!/usr/bin/env bash
# Session 25, call 4 (H200): attention one query head a tile, each tile a part of the row's chunks, about a
# tile a block (hp), against main (m): bench_decode --skip-torch batches 1 and 8, two rounds alternating;
# hp's 1B check, Llama tests, serve_check, bench_decode with its baselines, traces (pos 40; pos 900 of a
# 1,024-position cache, m too).
set -u
o=${OUT:?}
L=/tmp/logs4; mkdir -p $L
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
for k in a b; do for v in m hp; do run $v $k; done; done
cd $P/ex_hp
timeout 60 python3 check_reference.py /tmp/w1b --json $L/check_hp.json > $L/check_hp.log 2>&1; echo "check hp rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
(cd tests && timeout 80 python3 -m pytest -q -rs -p no:cacheprovider . > $L/pytest_llama_hp.log 2>&1); echo "llama tests hp rc $? ($SECONDS s): $(tail -1 $L/pytest_llama_hp.log)" | tee -a $L/summary.txt; pack
timeout 80 python3 serve_check.py /tmp/w1b --json $L/serve_hp.json > $L/serve_hp.log 2>&1; echo "serve hp rc=$? ($SECONDS s)" | tee -a $L/summary.txt; pack
timeout 140 python3 bench_decode.py /tmp/w1b --json $L/bench_llama.json > $L/bench.log 2>&1; echo "bench rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E "copy bandwidth|eager|cuda graph|gpuos batch|TARGET" $L/bench.log | cut -c1-200 | tee -a $L/summary.txt; pack
timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' > $L/trace_hp.txt 2>&1; echo "trace hp rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
for v in hp m; do
  [ $SECONDS -lt 490 ] || break
  (cd $P/ex_$v && timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 900 --engine '{"max_pos": 1024}' > $L/trace900_$v.txt 2>&1); echo "trace900 $v rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
done
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
