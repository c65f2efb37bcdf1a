#!/usr/bin/env bash
# Session 12, call 4: the landed operators (ranges, pipelined rounds, awaiting inputs): the 1B reference check, serve_check, the Llama tests, inlining off (rng against final), and the full decode benchmark with the torch baselines.
set -u
o=${OUT:?}
P=$PWD/.gpu/s12
[ -d /tmp/site_rng ] || python3 -m pip install -q --no-deps --target /tmp/site_rng $P/whl_rng/*.whl >> "$o/pip.log" 2>&1
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
echo "weights at $SECONDS s"
cd examples/llama
export PYTHONPATH=/tmp/site_rng
timeout 100 python3 -m pytest -q tests > "$o/pytest_llama.log" 2>&1; echo "llama rc $? $(tail -1 "$o/pytest_llama.log")  ($SECONDS s)"
timeout 200 python3 check_reference.py /tmp/w1b --json "$o/check_1b.json" > "$o/check_1b.log" 2>&1; echo "check rc $? ($SECONDS s)"; grep -E '"same_tokens"|"ok_|"forced_same' "$o/check_1b.json" | head
for v in rng final; do
  GPUOS_INLINE_OPERATORS=0 timeout 100 python3 bench_decode.py /tmp/w1b --skip-torch --batches 1,8 --new 128 --ops-dir $P/ops_$v --json "$o/dec_off_$v.json" > "$o/dec_off_$v.log" 2>&1
  echo "== dec off $v ($SECONDS s): $(grep -oE "gpuos batch [18]: \{'ms_per_step': [0-9.]{5}" "$o/dec_off_$v.log" | tr '\n' ' ')"
done
timeout 150 python3 serve_check.py /tmp/w1b --json "$o/serve.json" > "$o/serve.log" 2>&1; echo "serve rc=$? ($SECONDS s)"
python3 -c "import json; d=json.load(open('$o/serve.json')); print(d['ok'], d['swap_events'], d['identical_answers'])" 2>&1 | tail -2
timeout 150 python3 bench_decode.py /tmp/w1b --batches 1,4,8 --new 128 --json "$o/bench_llama.json" > "$o/bench_llama.log" 2>&1; echo "bench rc=$? ($SECONDS s)"; tail -5 "$o/bench_llama.log"
echo "end $SECONDS s"
