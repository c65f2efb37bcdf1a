#!/usr/bin/env bash
# Session 14, call 6: the tile-major operators: bench_decode with the baselines (batch 1, 4, 8), HEAD's
# operators at batch 1 in the same run, the 1B reference check, serve_check, a trace.
set -u
o=${OUT:?}
R=$PWD
P=$R/.gpu/s14
[ -d /tmp/site/gpuos ] || python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
[ -f /tmp/w1b/config.json ] || { python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1; echo "weights done at $SECONDS s"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$o/gpu.txt"
cd examples/llama
timeout 200 python3 bench_decode.py /tmp/w1b --json "$o/bench_llama.json" > "$o/bench.log" 2>&1; echo "bench rc $? ($SECONDS s)"; grep -E "eager|cuda graph|gpuos batch|TARGET|RESULT|bound" "$o/bench.log" | cut -c1-200
timeout 200 python3 check_reference.py /tmp/w1b --json "$o/check_1b.json" > "$o/check_1b.log" 2>&1; echo "check rc $? ($SECONDS s)"; grep -E '"same_tokens"|"ok_|"forced_same|"mean_|max_' "$o/check_1b.json" | head -14
timeout 150 python3 serve_check.py /tmp/w1b --json "$o/serve.json" > "$o/serve.log" 2>&1; echo "serve rc=$? ($SECONDS s)"
python3 -c "import json; d=json.load(open('$o/serve.json')); print(d['ok'], d['swap_events'], d['identical_answers'], d.get('load'))" 2>&1 | tail -3
timeout 60 python3 trace_step.py /tmp/w1b 1 > "$o/trace.txt" 2>&1; echo "trace rc $?"; head -14 "$o/trace.txt" | tail -8
cd $o && tar czf all.tgz *.log *.json *.txt 2>/dev/null; rm -f *.log
echo "end $SECONDS s"
