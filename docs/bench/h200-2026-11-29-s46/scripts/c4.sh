#!/usr/bin/env bash
# Session 31, call 4 (H200): main's operators (m) against qkv in tiles of 12 rows (q12: one round in flight;
# q12d: two, the second asked for after the await; q12a: two, both before), bench_decode --skip-torch
# batch 1, three alternating rounds; then, for the q12 variant with the lowest mean step: the 1B check,
# the Llama tests, and the trace at position 40 of it and of m.
set -u
o=${OUT:?}
L=/tmp/logs4; rm -rf $L; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s46
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
rm -rf /tmp/site_m; python3 -m pip install -q --no-deps --target /tmp/site_m $P/whl_m/*.whl > $L/pip_m.log 2>&1
export PYTHONPATH=/tmp/site_m
cd $P/ex_m && python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt; pack
run() {  # variant round
  (cd $P/ex_$1 && timeout 70 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1)
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, [^,]*, [^}]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b c; do for v in m q12 q12d q12a; do run $v $k; done; done
best=$(python3 - "$L" <<'PY'
import json, sys, statistics
L = sys.argv[1]
def ms(v):
    out = []
    for k in "abc":
        try:
            out.append(json.load(open(f"{L}/dec_{v}_{k}.json"))["gpuos"]["1"]["ms_per_step"])
        except Exception:
            pass
    return statistics.mean(out) if out else 1e9
print(min(("q12", "q12d", "q12a"), key=ms))
PY
)
echo "candidate: $best" | tee -a $L/summary.txt
cd $P/ex_$best
timeout 60 python3 check_reference.py /tmp/w1b --json $L/check_$best.json > $L/check_$best.log 2>&1; echo "check $best rc $? ($SECONDS s): $(grep mean_err $L/check_$best.log | head -c 300)" | tee -a $L/summary.txt; pack
(cd tests && timeout 120 python3 -m pytest -q -rs -p no:cacheprovider . > $L/pytest_llama_$best.log 2>&1); echo "llama tests $best rc $? ($SECONDS s): $(tail -1 $L/pytest_llama_$best.log)" | tee -a $L/summary.txt; pack
for v in m $best; do
  (cd $P/ex_$v && timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' --raw /tmp/raw_$v.npy > $L/trace_$v.txt 2>&1); echo "trace $v rc $? ($SECONDS s)" | tee -a $L/summary.txt
  python3 $P/late_blocks.py /tmp/raw_$v.npy > $L/late_$v.txt 2>&1; pack
done
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
