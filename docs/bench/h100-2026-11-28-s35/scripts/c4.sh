#!/usr/bin/env bash
# Session 20, call 4 (main's kernel, s19/whl_base): code the SMs keep warm. v/attc: attention compiled
# for 4 query heads a KV head (no guards, shorter code); v/lmsh: gate/up and the LM head share one body
# (llama::head16), which gate/up keeps warm; v/al: both. Against the landed m, three rounds alternating;
# diagnostic traces of lmsh and attc; the fastest (3 us or more) validated: Llama tests, 1B check,
# bench_decode with its baselines, serve_check.
set -u
o=${OUT:?}
L=/tmp/logs4; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s20
python3 -m pip install -q --no-deps --target /tmp/site_base $R/.gpu/s19/whl_base/*.whl > $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site_base
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
VS="m attc lmsh al"
run() {  # name dir
  (cd $P/v/$2 && timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
for k in a b c; do for v in $VS; do run ${v}_$k $v; done; done
pick=$(python3 - "$L" <<'PY'
import json, statistics, sys
def m(v):
    try:
        return statistics.median(json.load(open(f"{sys.argv[1]}/dec_{v}_{k}.json"))["gpuos"]["1"]["ms_per_step"] for k in "abc")
    except Exception:
        return 9.0
vs = ["m", "attc", "lmsh", "al"]
for v in vs:
    print(v, round(m(v), 4), file=sys.stderr)
b = min(vs[1:], key=m)
print(b if m(b) < m("m") - 0.003 else "m")
PY
)
echo "fastest: $pick" | tee -a $L/summary.txt
for v in lmsh attc; do
  cp $P/trace_diag.py $P/v/$v/
  (cd $P/v/$v && timeout 45 python3 trace_diag.py /tmp/w1b 1 --pos 40 --raw $L/raw_$v.npy > $L/trace_$v.txt 2>&1; echo "trace $v rc $? ($SECONDS s)" | tee -a $L/summary.txt)
  python3 $P/diag.py $L/raw_$v.npy > $L/diag_$v.txt 2>&1; tail -2 $L/diag_$v.txt | tee -a $L/summary.txt
  python3 $P/attdiag.py $L/raw_$v.npy 2>&1 | tail -1 | tee -a $L/summary.txt; grep -E "^(attn|logits|swiglu)" $L/trace_$v.txt | tee -a $L/summary.txt; pack
done
cd $P/v/$pick
if [ "$pick" != m ]; then
  timeout 120 python3 -m pytest -q -x tests > $L/pytest_llama.log 2>&1; echo "llama tests rc $? $(tail -1 $L/pytest_llama.log) ($SECONDS s)" | tee -a $L/summary.txt; pack
  timeout 100 python3 check_reference.py /tmp/w1b --json $L/check_1b.json > $L/check_1b.log 2>&1; echo "check rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E '"same_tokens"|"ok_|"forced_same|"mean_' $L/check_1b.json | head -8 | tee -a $L/summary.txt; pack
  timeout 120 python3 bench_decode.py /tmp/w1b --json $L/bench_llama.json > $L/bench.log 2>&1; echo "bench rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E "copy bandwidth|eager|cuda graph|gpuos batch|TARGET" $L/bench.log | cut -c1-200 | tee -a $L/summary.txt; pack
  if [ $SECONDS -lt 500 ]; then
    timeout 80 python3 serve_check.py /tmp/w1b --json $L/serve.json > $L/serve.log 2>&1; echo "serve rc=$? ($SECONDS s)" | tee -a $L/summary.txt; python3 -c "import json; d=json.load(open('$L/serve.json')); print(d['ok'], d['swap_events'], d['identical_answers'])" | tee -a $L/summary.txt; pack
  fi
fi
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
