#!/usr/bin/env bash
# Session 20, call 2 (main's kernel, s19/whl_base): where the LM head's late start goes. Timing, three
# rounds alternating: v/m (landed), v/la1 (the LM head asks one round before its await, not two), v/dpf
# with the last down projection asking L2 for the top 4 / 16 MiB of the LM head's weights (engine only).
# Diagnostic traces (trace_diag.py: each call's entry and await return) of m, dpf16 and la1 at pos 40.
set -u
o=${OUT:?}
L=/tmp/logs2; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s20
python3 -m pip install -q --no-deps --target /tmp/site_base $R/.gpu/s19/whl_base/*.whl > $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site_base
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
VS="m:m:0 la1:la1:0 dpf4:dpf:4194304 dpf16:dpf:16777216"
run() {  # name dir pf
  (cd $P/v/$2 && LLAMA_DOWN_PF=$3 timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
for k in a b c; do for v in $VS; do IFS=: read name dir pf <<< "$v"; run ${name}_$k $dir $pf; done; done
python3 - "$L" <<'PY' 2>&1 | tee -a $L/summary.txt
import json, statistics, sys
for v in ["m", "la1", "dpf4", "dpf16"]:
    try:
        print(v, round(statistics.median(json.load(open(f"{sys.argv[1]}/dec_{v}_{k}.json"))["gpuos"]["1"]["ms_per_step"] for k in "abc"), 4))
    except Exception as e:
        print(v, "failed", e)
PY
for v in m:m:0 dpf16:dpf:16777216 la1:la1:0; do
  IFS=: read name dir pf <<< "$v"
  cp $P/trace_diag.py $P/v/$dir/
  (cd $P/v/$dir && LLAMA_DOWN_PF=$pf timeout 50 python3 trace_diag.py /tmp/w1b 1 --pos 40 --raw $L/raw_$name.npy > $L/trace_$name.txt 2>&1; echo "trace $name rc $? ($SECONDS s)" | tee -a $L/summary.txt)
  python3 $P/diag.py $L/raw_$name.npy > $L/diag_$name.txt 2>&1; tail -4 $L/diag_$name.txt | tee -a $L/summary.txt; grep -E "^logits" $L/trace_$name.txt | tee -a $L/summary.txt; pack
done
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
