#!/usr/bin/env bash
# Session 18, call 2: one resident block per SM with 255 registers (whl_1b: GPUOS_MIN_BLOCKS_PER_SM 1,
# GPUOS_MAX_REGISTERS 255) against main's kernel (whl_base: 2 x 128), and a ring of kDepth weight rounds
# a lane (v2/ring: project<kRows, kDepth, kAhead>, kAhead of them asked for before the await), alternating.
# v2/NAME: LQ/LO/LS/LL = qkv / resid (o and down) / swiglu / logits; _D depth, _A asked ahead.
set -u
o=${OUT:?}
L=/tmp/logs2; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s18
python3 -m pip install -q --no-deps --target /tmp/site_base $P/whl_base/*.whl > $L/pip.log 2>&1
python3 -m pip install -q --no-deps --target /tmp/site_1b $P/whl_1b/*.whl >> $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
PYTHONPATH=/tmp/site_base python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name kernel dir
  (cd $P/$3 && PYTHONPATH=/tmp/site_$2 timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
VS="base:m:v/base base:s2a1:v2/r_s2a1 base:all2a1:v2/r_all2a1 base:all3a1:v2/r_all3a1 1b:m:v/base 1b:all2:v2/r_all2 1b:all2a1:v2/r_all2a1 1b:all4a1:v2/r_all4a1 1b:all4a2:v2/r_all4a2 1b:all3a1l4:v2/r_all3a1l4"
for k in a b; do for v in $VS; do IFS=: read kern name dir <<< "$v"; run ${kern}_${name}_$k $kern $dir; done; done
pick=$(python3 - "$L" <<'PY'
import json, statistics, sys, glob, os
best = {}
for f in glob.glob(f"{sys.argv[1]}/dec_1b_*_a.json"):
    n = os.path.basename(f)[4:-7]
    try:
        best[n] = statistics.mean(json.load(open(f"{sys.argv[1]}/dec_{n}_{k}.json"))["gpuos"]["1"]["ms_per_step"] for k in "ab")
    except Exception:
        pass
print(min(best, key=best.get))
PY
)
echo "fastest 1b: $pick" | tee -a $L/summary.txt
for v in $VS; do IFS=: read kern name dir <<< "$v"; if [ "${kern}_$name" = "$pick" ] || [ "${kern}_$name" = base_m ]; then
  (cd $P/$dir && PYTHONPATH=/tmp/site_$kern timeout 60 python3 trace_step.py /tmp/w1b 1 --pos 40 > $L/trace_${kern}_$name.txt 2>&1; echo "trace ${kern}_$name rc $? ($SECONDS s)" | tee -a $L/summary.txt); pack
fi; done
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
