#!/usr/bin/env bash
# Session 18, call 4 (main's kernel, whl_base): the landed operators (v4/n: qkv and gate/up with two
# rounds in flight, the second asked for after the await) against qkv with both asked ahead (n_q22), qkv
# alone with two rounds (n_q21only: gate/up back to one), and the same for the down (n_dn21: llama_resid
# with K > hidden) or the o projection (n_o21: K == hidden); three rounds alternating; then a trace of n.
set -u
o=${OUT:?}
L=/tmp/logs4; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s18
python3 -m pip install -q --no-deps --target /tmp/site_base $P/whl_base/*.whl > $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site_base
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name dir
  (cd $P/v4/$2 && timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
VS="n n_q22 n_q21only n_dn21 n_o21"
for k in a b c; do for v in $VS; do run ${v}_$k $v; done; done
python3 - "$L" <<'PY' | tee -a $L/summary.txt
import json, statistics, sys
for v in ["n", "n_q22", "n_q21only", "n_dn21", "n_o21"]:
    try:
        print(v, round(statistics.median(json.load(open(f"{sys.argv[1]}/dec_{v}_{k}.json"))["gpuos"]["1"]["ms_per_step"] for k in "abc"), 4))
    except Exception as e:
        print(v, e)
PY
(cd $P/v4/n && timeout 40 python3 trace_step.py /tmp/w1b 1 --pos 40 > $L/trace_40.txt 2>&1; echo "trace rc $? ($SECONDS s)" | tee -a $L/summary.txt); pack
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
