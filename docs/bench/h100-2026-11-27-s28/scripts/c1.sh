#!/usr/bin/env bash
# Session 13, call 1: split projections (llama::Split) and steps launched ahead (step_async): the Llama
# tests, bench_decode per split, attention chunks, traces, the 1B reference check, serve_check.
set -u
o=${OUT:?}
P=$PWD/.gpu/s13
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$o/gpu.txt"; cat "$o/gpu.txt"
python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
(python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1; echo "weights done at $SECONDS s") &
cd examples/llama
timeout 200 python3 -m pytest -q tests > "$o/pytest_llama.log" 2>&1; echo "llama tests rc $? $(tail -1 "$o/pytest_llama.log") ($SECONDS s)"
wait
i=0
for sp in '{"qkv":1,"o":1,"down":1}' '{}' '{"qkv":2,"o":2,"down":2}' '{"qkv":4,"o":2,"down":4}' '{"qkv":4,"o":1,"down":2}'; do
  i=$((i+1))
  timeout 90 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 --split "$sp" --json "$o/dec_s$i.json" > "$o/dec_s$i.log" 2>&1
  echo "== split $sp rc $? ($SECONDS s): $(grep -oE "gpuos batch [18]: \{'ms_per_step': [0-9.]{5}[^,]*, 'tokens_per_s': [0-9.]+, 'ms_per_step_one_by_one': [0-9.]{5}" "$o/dec_s$i.log" | tr '\n' ' ')"
done
for ch in 32 16; do
  timeout 90 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 --chunk $ch --json "$o/dec_c$ch.json" > "$o/dec_c$ch.log" 2>&1
  echo "== chunk $ch rc $? ($SECONDS s): $(grep -oE "gpuos batch [18]: \{'ms_per_step': [0-9.]{5}" "$o/dec_c$ch.log" | tr '\n' ' ')"
done
timeout 90 python3 trace_step.py /tmp/w1b 1 > "$o/trace_default.txt" 2>&1; echo "trace rc $?"; head -14 "$o/trace_default.txt"
timeout 90 python3 trace_step.py /tmp/w1b 1 --engine '{"split":{"qkv":1,"o":1,"down":1}}' > "$o/trace_s1.txt" 2>&1; echo "trace s1 rc $?"; head -14 "$o/trace_s1.txt"
timeout 200 python3 check_reference.py /tmp/w1b --json "$o/check_1b.json" > "$o/check_1b.log" 2>&1; echo "check rc $? ($SECONDS s)"; grep -E '"same_tokens"|"ok_|"forced_same|max_' "$o/check_1b.json" | head -12
timeout 150 python3 serve_check.py /tmp/w1b --json "$o/serve.json" > "$o/serve.log" 2>&1; echo "serve rc=$? ($SECONDS s)"
python3 -c "import json; d=json.load(open('$o/serve.json')); print(d['ok'], d['swap_events'], d['identical_answers'])" 2>&1 | tail -3
echo "end $SECONDS s"
