#!/usr/bin/env bash
# Session 18, call 1 (main's kernel, whl_base), prepared at the end of session 17: two rounds of weights in
# flight a lane (project<kRows, 2>, both asked for before the await) for one projection at a time, against
# main's operators (v/base), alternating. The fifteenth session measured it only for every projection at
# once (1.39-1.41 against 1.35 ms) and for the LM head alone (landed). v/o2: the attention's output
# projection (its whole tile in flight while attention runs); v/dn2: both residual projections (o and
# down); v/sw2: gate/up; v/sw2l: gate/up, its second round asked for after the await; v/sw2dn2:
# gate/up, o and down; v/qkv2: qkv. The offline-linked image's stack:
# base 1,688, o2 1,672, dn2 1,696, sw2 1,680, sw2l 1,680, sw2dn2 1,664, qkv2 1,680 bytes a thread.
# v/pf16, v/pf32: each attention tile asks L2 (cp.async.bulk.prefetch.L2) for its share of the top 16 /
# 32 MB of the layer's gate/up weights (the tiles its claims take first), while attention leaves the
# memory idle (the step reads 2.47 GB; attention and the o projection run ~15 us a layer at ~0.6 TB/s).
# v/sw2dn2pf32: sw2dn2 and pf32 together. v/qkv2 (qkv with two rounds) is prepared but not in the list.
set -u
o=${OUT:?}
L=/tmp/logs1; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s18
python3 -m pip install -q --no-deps --target /tmp/site_base $P/whl_base/*.whl > $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site_base
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name dir
  (cd $P/v/$2 && timeout 45 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
for k in a b; do for v in base o2 dn2 sw2 sw2l sw2dn2 pf16 pf32 sw2dn2pf32; do run ${v}_$k $v; done; done
pick=$(python3 - "$L" <<'PY'
import json, statistics, sys
def m(v):
    try:
        return statistics.mean(json.load(open(f"{sys.argv[1]}/dec_{v}_{k}.json"))["gpuos"]["1"]["ms_per_step"] for k in "ab")
    except Exception:
        return 9.0
vs = ["base", "o2", "dn2", "sw2", "sw2l", "sw2dn2", "pf16", "pf32", "sw2dn2pf32"]
print(min(vs, key=m))
PY
)
echo "fastest: $pick" | tee -a $L/summary.txt
(cd $P/v/$pick && timeout 60 python3 trace_step.py /tmp/w1b 1 --pos 40 > $L/trace_$pick.txt 2>&1; echo "trace rc $? ($SECONDS s)" | tee -a $L/summary.txt); pack
(cd $P/v/$pick && timeout 120 python3 -m pytest -q -x tests > $L/pytest_llama.log 2>&1; echo "llama tests rc $? $(tail -1 $L/pytest_llama.log) ($SECONDS s)" | tee -a $L/summary.txt); pack
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
