#!/usr/bin/env bash
# Session 21, call 5 (H200, main's kernel: whl_base; every run with GPUOS_CLAIM_SPREAD=4 as landed):
# v/pf (the two 64 KiB L2-prefetch loops of llama_qkv and llama_resid as one llama::prefetch_l2: an image
# change) against v/m (the landed operators), and m with the o projection asking L2 for 8 / 6 MiB of
# gate/up instead of 12; three rounds alternating; the Llama tests on v/pf.
set -u
o=${OUT:?}
L=/tmp/logs5; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s21
python3 -m pip install -q --no-deps --target /tmp/site_base $R/.gpu/s19/whl_base/*.whl > $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site_base GPUOS_CLAIM_SPREAD=4
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
VS="m:m:LLAMA_GU_PF=12582912 pf:pf:LLAMA_GU_PF=12582912 gu8:m:LLAMA_GU_PF=8388608 gu6:m:LLAMA_GU_PF=6291456"
run() {  # name dir env
  (cd $P/v/$2 && env $3 timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
for k in a b c; do for v in $VS; do IFS=: read name dir env <<< "$v"; run ${name}_$k $dir $env; done; done
python3 - "$L" <<'PY' 2>&1 | tee -a $L/summary.txt
import json, statistics, sys
for v in ["m", "pf", "gu8", "gu6"]:
    try:
        print(v, round(statistics.median(json.load(open(f"{sys.argv[1]}/dec_{v}_{k}.json"))["gpuos"]["1"]["ms_per_step"] for k in "abc"), 4))
    except Exception as e:
        print(v, "missing", e)
PY
(cd $P/v/pf && timeout 120 python3 -m pytest -q -x tests > $L/pytest_llama_pf.log 2>&1; echo "llama tests (pf) rc $? $(tail -1 $L/pytest_llama_pf.log) ($SECONDS s)" | tee -a $L/summary.txt); pack
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
