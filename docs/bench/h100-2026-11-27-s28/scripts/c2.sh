#!/usr/bin/env bash
# Session 13, call 2: the split fixed (a buffer per kind), inputs loaded a round ahead (main ops) against
# base (split fixed, inputs loaded in the round) and nonorm (timing only: no RMSNorm arithmetic); traces
# with the awaited start; the Llama tests; the 1B reference check at split default and 1; serve_check.
set -u
O=${OUT:?}; o=/tmp/c2; mkdir -p $o
P=$PWD/.gpu/s13
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$o/gpu.txt"
python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
(python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1; echo "weights done at $SECONDS s") &
cd examples/llama
timeout 200 python3 -m pytest -q tests > "$o/pytest_llama.log" 2>&1; echo "llama tests rc $? $(tail -1 "$o/pytest_llama.log") ($SECONDS s)"
grep -E "^FAILED|Error" "$o/pytest_llama.log" | head -5
wait
S1='{"qkv":1,"o":1,"down":1}'
run() {  # name ops split
  timeout 60 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 --ops-dir "$2" --split "$3" --json "$o/dec_$1.json" > "$o/dec_$1.log" 2>&1
  echo "== $1 rc $? ($SECONDS s): $(grep -oE "gpuos batch [18]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" "$o/dec_$1.log" | sed -E "s/'tokens_per_s': [0-9.]+, //" | tr '\n' ' ')"
}
for r in 1 2; do
  run base_def_$r $P/ops_base '{}'
  run base_s1_$r $P/ops_base "$S1"
  run main_def_$r ops '{}'
  run main_s1_$r ops "$S1"
  run nonorm_s1_$r $P/ops_nonorm "$S1"
done
run main_q4_1 ops '{"qkv":4,"o":1,"down":1}'
run main_d2_1 ops '{"qkv":1,"o":1,"down":2}'
timeout 90 python3 trace_step.py /tmp/w1b 1 > "$o/trace_main_def.txt" 2>&1; echo "trace rc $?"; sed -n 1,12p "$o/trace_main_def.txt" | cut -c1-110
timeout 90 python3 trace_step.py /tmp/w1b 1 --engine "{\"split\":$S1}" > "$o/trace_main_s1.txt" 2>&1; echo "trace s1 rc $?"; sed -n 1,12p "$o/trace_main_s1.txt" | cut -c1-110
timeout 90 python3 trace_step.py /tmp/w1b 1 --ops $P/ops_base --engine "{\"split\":$S1}" > "$o/trace_base_s1.txt" 2>&1; echo "trace base s1 rc $?"; sed -n 4,12p "$o/trace_base_s1.txt" | cut -c1-110
tar czf $O/c2.tgz -C /tmp c2
timeout 200 python3 check_reference.py /tmp/w1b --json "$o/check_1b_def.json" > "$o/check_1b_def.log" 2>&1; echo "check def rc $? ($SECONDS s)"; grep -E '"same_tokens"|"ok_|"forced_same|mean_err' "$o/check_1b_def.json" | tr '\n' ' '; echo
tar czf $O/c2.tgz -C /tmp c2
[ $SECONDS -lt 420 ] && timeout 170 python3 check_reference.py /tmp/w1b --split "$S1" --json "$o/check_1b_s1.json" > "$o/check_1b_s1.log" 2>&1; echo "check s1 rc $? ($SECONDS s)"; grep -E '"same_tokens"|"ok_|"forced_same|mean_err' "$o/check_1b_s1.json" | tr '\n' ' '; echo
tar czf $O/c2.tgz -C /tmp c2
[ $SECONDS -lt 470 ] && timeout 120 python3 serve_check.py /tmp/w1b --json "$o/serve.json" > "$o/serve.log" 2>&1; echo "serve rc=$? ($SECONDS s)"
python3 -c "import json; d=json.load(open('$o/serve.json')); print(d['ok'], d['swap_events'], d['identical_answers'])" 2>&1 | tail -3
tar czf $O/c2.tgz -C /tmp c2
echo "end $SECONDS s"
