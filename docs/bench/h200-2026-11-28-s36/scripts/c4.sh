#!/usr/bin/env bash
# Session 21, call 4 (H200, main's kernel and operators: whl_base, v/m as landed): the claim spread
# around c3's fastest: GPUOS_CLAIM_SPREAD 64 (the default), 3, 4, 6, and 4 with GPUOS_TILE_BATCH 4; three
# rounds alternating; the fastest traced (raw records: the LM head's calls). No validation (c3 validated
# spread 4).
set -u
o=${OUT:?}
L=/tmp/logs4; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s21
python3 -m pip install -q --no-deps --target /tmp/site_base $R/.gpu/s19/whl_base/*.whl > $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site_base
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
VS="m:GPUOS_CLAIM_SPREAD=64 s3:GPUOS_CLAIM_SPREAD=3 s4:GPUOS_CLAIM_SPREAD=4 s6:GPUOS_CLAIM_SPREAD=6 s4b4:GPUOS_CLAIM_SPREAD=4,GPUOS_TILE_BATCH=4"
run() {  # name env
  (cd $P/v/m && env ${2//,/ } timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
for k in a b c; do for v in $VS; do IFS=: read name env <<< "$v"; run ${name}_$k $env; done; done
pick=$(python3 - "$L" <<'PY'
import json, statistics, sys
def m(v):
    try:
        return statistics.median(json.load(open(f"{sys.argv[1]}/dec_{v}_{k}.json"))["gpuos"]["1"]["ms_per_step"] for k in "abc")
    except Exception:
        return 9.0
vs = ["m", "s3", "s4", "s6", "s4b4"]
for v in vs:
    print(v, round(m(v), 4), file=sys.stderr)
b = min(vs[1:], key=m)
print(b if m(b) < m("m") - 0.005 else "m")
PY
)
echo "fastest: $pick" | tee -a $L/summary.txt
env=$(echo "$VS" | tr ' ' '\n' | grep "^$pick:" | cut -d: -f2)
cd $P/v/m
export ${env//,/ }
timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' --raw $L/raw_$pick.npy > $L/trace_$pick.txt 2>&1; echo "trace $pick rc $? ($SECONDS s)" | tee -a $L/summary.txt; head -12 $L/trace_$pick.txt | tail -8 | tee -a $L/summary.txt
python3 $P/lm_an.py $L/raw_$pick.npy 2>&1 | tee -a $L/summary.txt; pack
if false; then
  timeout 150 python3 bench_decode.py /tmp/w1b --json $L/bench_llama.json > $L/bench.log 2>&1; echo "bench rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E "copy bandwidth|eager|cuda graph|gpuos batch|TARGET" $L/bench.log | cut -c1-200 | tee -a $L/summary.txt; pack
  timeout 100 python3 check_reference.py /tmp/w1b --json $L/check_1b.json > $L/check_1b.log 2>&1; echo "check rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E '"same_tokens"|"ok_|"forced_same|"mean_' $L/check_1b.json | head -8 | tee -a $L/summary.txt; pack
  timeout 80 python3 serve_check.py /tmp/w1b --json $L/serve.json > $L/serve.log 2>&1; echo "serve rc=$? ($SECONDS s)" | tee -a $L/summary.txt; python3 -c "import json; d=json.load(open('$L/serve.json')); print(d['ok'], d['swap_events'], d['identical_answers'])" | tee -a $L/summary.txt; pack
  timeout 100 python3 -m pytest -q -x tests > $L/pytest_llama.log 2>&1; echo "llama tests rc $? $(tail -1 $L/pytest_llama.log) ($SECONDS s)" | tee -a $L/summary.txt; pack
fi
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
