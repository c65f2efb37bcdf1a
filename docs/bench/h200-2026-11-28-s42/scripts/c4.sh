#!/usr/bin/env bash
# Session 27, call 4 (H200): main's example (m) against l (the landed form of c3's ao: attention's tile t
# asks L2 for the o projection's tile t) and aoc (l, and each o projection tile j asks L2 for the first
# tile of gate/up's chunk j, instead of the top 12 MiB of gate/up's weights), bench_decode --skip-torch
# batch 1, three alternating rounds; the 1B check of both; then, for the faster of the two, the Llama
# tests, serve_check, bench_decode with the torch baselines and batches 1, 4, 8, and its trace at
# position 40 with late_blocks.py.
set -u
o=${OUT:?}
L=/tmp/logs4; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s42
S=$R/docs/bench/h200-2026-11-28-s42/scripts
python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > $L/pip.log 2>&1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
[ -d /tmp/w1b ] || (cd $P/ex_m && python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1)
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # variant round
  (cd $P/ex_$1 && timeout 70 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1)
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b c; do for v in m l aoc; do run $v $k; done; done
for v in l aoc; do
  (cd $P/ex_$v && timeout 60 python3 check_reference.py /tmp/w1b --json $L/check_$v.json > $L/check_$v.log 2>&1); echo "check $v rc $? ($SECONDS s): $(grep mean_err $L/check_$v.log | head -c 300)" | tee -a $L/summary.txt; pack
done
best=$(python3 -c "
import json,statistics
m={v:statistics.mean(json.load(open(f'$L/dec_{v}_{k}.json'))['gpuos']['1']['ms_per_step'] for k in 'abc') for v in ('l','aoc')}
print(min(m,key=m.get))" 2>$L/best.err || echo l)
echo "best: $best" | tee -a $L/summary.txt
(cd $P/ex_$best/tests && timeout 90 python3 -m pytest -q -rs -p no:cacheprovider . > $L/pytest_llama_$best.log 2>&1); echo "llama tests $best rc $? ($SECONDS s): $(tail -1 $L/pytest_llama_$best.log)" | tee -a $L/summary.txt; pack
(cd $P/ex_$best && timeout 80 python3 serve_check.py /tmp/w1b --json $L/serve_$best.json > $L/serve_$best.log 2>&1; echo "serve $best rc=$? ($SECONDS s)" | tee -a $L/summary.txt; tail -3 $L/serve_$best.log | cut -c1-300 | tee -a $L/summary.txt); pack
(cd $P/ex_$best && timeout 150 python3 bench_decode.py /tmp/w1b --json $L/bench_llama.json > $L/bench_$best.log 2>&1; echo "bench $best rc=$? ($SECONDS s)" | tee -a $L/summary.txt; grep -E "TARGET|gpuos batch|torch" $L/bench_$best.log | cut -c1-200 | tee -a $L/summary.txt); pack
(cd $P/ex_$best && timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' --raw /tmp/raw_$best.npy > $L/trace_$best.txt 2>&1); echo "trace $best rc $? ($SECONDS s)" | tee -a $L/summary.txt
python3 $S/late_blocks.py /tmp/raw_$best.npy > $L/late_$best.txt 2>&1; pack
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
