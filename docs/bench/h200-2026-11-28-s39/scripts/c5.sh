#!/usr/bin/env bash
# Session 24, call 5 (H200): GPUOS_OP_INPUTS_VIA_L2 (l2: the working tree, branch l2-inputs: a placed wait
# keeps the SM's L1 for operators that read their inputs through L2 only, the Llama operators flagged and
# reading through L2) against main (m: the wheel of the tail merge, main's example in v/base_ex),
# bench_decode --skip-torch batch 1, three rounds alternating. If l2 is 4 us faster: its 1B check, Llama
# tests, serve_check, a trace, every C++ GPU suite but the soak with its binaries, the Python suite.
set -u
o=${OUT:?}
L=/tmp/logs5; mkdir -p $L
pack() { (cd $L && tar czf "$o/all.tgz" .); }
R=$PWD
P=$R/.gpu/s24
python3 -m pip install -q --no-deps --target /tmp/site_m $P/whl_tail/*.whl > $L/pip.log 2>&1
python3 -m pip install -q --no-deps --target /tmp/site_l2 $P/whl_l2/*.whl >> $L/pip.log 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L/summary.txt
dir() { [ $1 = m ] && echo $P/v/base_ex || echo $R/examples/llama; }
(cd examples/llama && PYTHONPATH=/tmp/site_m python3 make_weights.py /tmp/w1b --preset 1b > $L/weights.log 2>&1)
echo "weights ($SECONDS s)" | tee -a $L/summary.txt
run() {  # name round
  (cd $(dir $1) && PYTHONPATH=/tmp/site_$1 timeout 70 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1 --new 128 --json $L/dec_$1_$2.json > $L/dec_$1_$2.log 2>&1)
  echo "== $1_$2 rc $? ($SECONDS s): $(grep -oE "gpuos batch [0-9]: \{'ms_per_step': [0-9.]{5}[^,]*" $L/dec_$1_$2.log)" | tee -a $L/summary.txt
  pack
}
for k in a b c; do run m $k; run l2 $k; done
pick=$(python3 - "$L" <<'PY'
import json, statistics, sys
def m(v):
    try:
        return statistics.median(json.load(open(f"{sys.argv[1]}/dec_{v}_{k}.json"))["gpuos"]["1"]["ms_per_step"] for k in "abc")
    except Exception:
        return 9.0
r = {v: m(v) for v in ("m", "l2")}
print(r, file=sys.stderr)
print("l2" if r["l2"] < r["m"] - 0.004 else "m")
PY
)
echo "pick: $pick" | tee -a $L/summary.txt; pack
[ "$pick" = m ] && { (cd examples/llama && PYTHONPATH=/tmp/site_l2 timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' > $L/trace_l2.txt 2>&1); echo "end $SECONDS s" | tee -a $L/summary.txt; pack; exit 0; }
export PYTHONPATH=/tmp/site_l2
(cd examples/llama
 timeout 100 python3 check_reference.py /tmp/w1b --json $L/check_l2.json > $L/check_l2.log 2>&1; echo "check l2 rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack
 timeout 80 python3 serve_check.py /tmp/w1b --json $L/serve_l2.json > $L/serve_l2.log 2>&1; echo "serve l2 rc=$? ($SECONDS s)" | tee -a $L/summary.txt; pack
 timeout 45 python3 trace_step.py /tmp/w1b 1 --pos 40 --engine '{"max_pos": 192}' > $L/trace_l2.txt 2>&1; echo "trace l2 rc $? ($SECONDS s)" | tee -a $L/summary.txt; pack)
unset PYTHONPATH
mkdir -p build && tar xJf $P/bin_l2.tar.xz -C build
left=$((540 - SECONDS))
STEP_TIMEOUT=150 WHEEL=$(ls $P/whl_l2/*.whl) timeout $left bash scripts/gpu_run.sh /tmp/gr build tests python > $L/gpu_run.log 2>&1; echo "suites rc $? ($SECONDS s)" | tee -a $L/summary.txt
cp /tmp/gr/summary.txt $L/suites_summary.txt 2>/dev/null
grep -vE " pass |test cases" $L/suites_summary.txt | tee -a $L/summary.txt
echo "end $SECONDS s" | tee -a $L/summary.txt; pack
