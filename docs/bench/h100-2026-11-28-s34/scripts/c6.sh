#!/usr/bin/env bash
# Session 19, call 6 (main's kernel, whl_base): v5/q3, qkv with three rounds of weights in flight a lane
# (project<16, 3, 1>: the first asked for before the await, two after it; qkv runs 192 tiles on 263
# blocks at ~2 TB/s, each block's stream limited by its bytes in flight), against the landed operators
# (v5/m), three rounds alternating; then q3's Llama tests.
set -u
o=${OUT:?}
L=/tmp/logs6; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s19
python3 -m pip install -q --no-deps --target /tmp/site_base $P/whl_base/*.whl > $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site_base
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name dir
  (cd $P/v5/$2 && timeout 50 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
for k in a b c; do for v in m q3; do run ${v}_$k $v; done; done
python3 - "$L" <<'PY' 2>&1 | tee -a $L/summary.txt
import json, statistics, sys
for v in ("m", "q3"):
    try:
        print(v, round(statistics.median(json.load(open(f"{sys.argv[1]}/dec_{v}_{k}.json"))["gpuos"]["1"]["ms_per_step"] for k in "abc"), 4))
    except Exception as e:
        print(v, "missing", e)
PY
pack
(cd $P/v5/q3 && timeout 60 python3 -m pytest -q -x tests > $L/pytest_q3.log 2>&1; echo "llama tests (q3) rc $? $(tail -1 $L/pytest_q3.log) ($SECONDS s)" | tee -a $L/summary.txt); pack
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
