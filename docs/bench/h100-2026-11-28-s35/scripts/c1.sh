#!/usr/bin/env bash
# Session 20, call 1 (main's kernel, s19/whl_base): v/ef, the projections' weight loads with an L2
# evict_first policy, against the landed operators (v/m), four rounds alternating; raw traces of both
# at position 40 (LM head start); if ef is 3 us faster: Llama tests, 1B check, bench_decode with baselines.
set -u
o=${OUT:?}
L=/tmp/logs1; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s20
python3 -m pip install -q --no-deps --target /tmp/site_base $R/.gpu/s19/whl_base/*.whl > $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site_base
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
VS="m ef"
run() {  # name dir
  (cd $P/v/$2 && timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
for k in a b c d; do for v in $VS; do run ${v}_$k $v; done; done
pick=$(python3 - "$L" <<'PY'
import json, statistics, sys
def m(v):
    try:
        return statistics.median(json.load(open(f"{sys.argv[1]}/dec_{v}_{k}.json"))["gpuos"]["1"]["ms_per_step"] for k in "abcd")
    except Exception:
        return 9.0
vs = ["m", "ef"]
for v in vs:
    print(v, round(m(v), 4), file=sys.stderr)
b = min(vs[1:], key=m)
print(b if m(b) < m("m") - 0.003 else "m")
PY
)
echo "fastest: $pick" | tee -a $L/summary.txt
for v in m ef; do
  (cd $P/v/$v && timeout 50 python3 trace_step.py /tmp/w1b 1 --pos 40 --raw $L/raw_$v.npy > $L/trace_$v.txt 2>&1; echo "trace $v rc $? ($SECONDS s)" | tee -a $L/summary.txt)
  python3 $P/lm_starts.py $L/raw_$v.npy > $L/lm_starts_$v.txt 2>&1; head -3 $L/lm_starts_$v.txt | tee -a $L/summary.txt; pack
done
cd $P/v/$pick
if [ "$pick" != m ]; then
  timeout 120 python3 -m pytest -q -x tests > $L/pytest_llama.log 2>&1; echo "llama tests rc $? $(tail -1 $L/pytest_llama.log) ($SECONDS s)" | tee -a $L/summary.txt; pack
  timeout 100 python3 check_reference.py /tmp/w1b --json $L/check_1b.json > $L/check_1b.log 2>&1; echo "check rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E '"same_tokens"|"ok_|"forced_same|"mean_' $L/check_1b.json | head -8; pack
  if [ $SECONDS -lt 440 ]; then
    timeout 120 python3 bench_decode.py /tmp/w1b --json $L/bench_llama.json > $L/bench.log 2>&1; echo "bench rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E "copy bandwidth|eager|cuda graph|gpuos batch|TARGET" $L/bench.log | cut -c1-200 | tee -a $L/summary.txt; pack
  fi
fi
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
