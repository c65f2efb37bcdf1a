#!/usr/bin/env bash
# Session 20, call 7 (main's kernel, s19/whl_base): the down projection's prefetch of the next qkv at 2 /
# 4 / 6 MiB (v/dq), three rounds alternating.
set -u
o=${OUT:?}
L=/tmp/logs7; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s20
python3 -m pip install -q --no-deps --target /tmp/site_base $R/.gpu/s19/whl_base/*.whl > $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site_base
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
cd $P/v/dq
for k in a b c; do for b in 2 4 6; do
  LLAMA_DOWN_QKV_PF=$((b << 20)) timeout 40 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_dq${b}_$k.json > $L/dec_dq${b}_$k.log 2>&1
  echo "== dq$b $k ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}" $L/dec_dq${b}_$k.log)" | tee -a $L/summary.txt; pack
done; done
python3 - "$L" <<'PY' 2>&1 | tee -a $L/summary.txt
import json, statistics, sys
for v in ["dq2", "dq4", "dq6"]:
    print(v, round(statistics.median(json.load(open(f"{sys.argv[1]}/dec_{v}_{k}.json"))["gpuos"]["1"]["ms_per_step"] for k in "abc"), 4))
PY
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
