#!/usr/bin/env bash
# Session 17, call 5 (HEAD's kernel, whl_base): the attention's output projection asking for its first
# weights after its await (v/late_o: llama_resid with K == hidden), so that its loads do not compete
# with attention's, against HEAD's operators (v/base), alternating. Then the faster one is validated
# (the Llama tests, the 1B check, bench_decode with its baselines, serve_check, a trace), and the
# claimed-node graph test runs unplaced (HEAD's build).
set -u
o=${OUT:?}
L=/tmp/logs5; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s17
python3 -m pip install -q --no-deps --target /tmp/site_base $P/whl_base/*.whl > $L/pip.log 2>&1
mkdir -p /tmp/bm && tar xJf $P/bin_main.tar.xz -C /tmp/bm && ln -sfn $R /work/main 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L/summary.txt
export PYTHONPATH=/tmp/site_base
(cd /tmp/bm && GPUOS_GRAPH_PLACED=0 timeout 60 ./tests/gpuos_gpu_graphs -tc="graphs: a claimed node*" > $L/graphs_claimed_unplaced.log 2>&1; echo "claimed-node test unplaced rc $? ($SECONDS s)" | tee -a $L/summary.txt)
python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name dir
  (cd $P/v/$2 && timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1.json > $L/dec_$1.log 2>&1)
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" $L/dec_$1.log | tr '\n' ' ')" | tee -a $L/summary.txt
  pack
}
for k in a b c; do run base_$k base; run lo_$k late_o; done
pick=$(python3 - "$L" <<'PY'
import json, statistics, sys
m = lambda v: statistics.median(json.load(open(f"{sys.argv[1]}/dec_{v}_{k}.json"))["gpuos"]["1"]["ms_per_step"] for k in "abc")
try:
    base, lo = m("base"), m("lo")
    print("late_o" if lo < base - 0.003 else "base")
except Exception as e:
    print("base")
PY
)
echo "validating: $pick" | tee -a $L/summary.txt
cd $P/v/$pick
timeout 120 python3 -m pytest -q -x tests > $L/pytest_llama.log 2>&1; echo "llama tests rc $? $(tail -1 $L/pytest_llama.log) ($SECONDS s)" | tee -a $L/summary.txt; pack
timeout 100 python3 check_reference.py /tmp/w1b --json $L/check_1b.json > $L/check_1b.log 2>&1; echo "check rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E '"same_tokens"|"ok_|"forced_same|"mean_' $L/check_1b.json | head -8; pack
timeout 150 python3 bench_decode.py /tmp/w1b --json $L/bench_llama.json > $L/bench.log 2>&1; echo "bench rc $? ($SECONDS s)" | tee -a $L/summary.txt; grep -E "copy bandwidth|eager|cuda graph|gpuos batch|TARGET" $L/bench.log | cut -c1-200 | tee -a $L/summary.txt; pack
timeout 80 python3 serve_check.py /tmp/w1b --json $L/serve.json > $L/serve.log 2>&1; echo "serve rc=$? ($SECONDS s)" | tee -a $L/summary.txt; python3 -c "import json; d=json.load(open('$L/serve.json')); print(d['ok'], d['swap_events'], d['identical_answers'])" | tee -a $L/summary.txt; pack
timeout 40 python3 trace_step.py /tmp/w1b 1 --pos 40 > $L/trace_40.txt 2>&1; echo "trace rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
