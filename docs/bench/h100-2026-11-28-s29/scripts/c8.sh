#!/usr/bin/env bash
# Session 14, call 8 (on the machine c7 left warm: the wheel in /tmp/site, the 1B weights in /tmp/w1b):
# serve_check (failed at once: its v2 edit of llama_resid still named the 16-row epilogue), bench_decode
# with the baselines.
cd examples/llama && export PYTHONPATH=/tmp/site && mkdir -p /tmp/l2 && (timeout 70 python3 serve_check.py /tmp/w1b --json /tmp/l2/serve.json > /tmp/l2/serve.log 2>&1; echo "serve rc=$? ($SECONDS s)"; python3 -c "import json; d=json.load(open('/tmp/l2/serve.json')); print(d['ok'], d['swap_events'], d['identical_answers'])"); (timeout 100 python3 bench_decode.py /tmp/w1b --json /tmp/l2/bench_llama.json > /tmp/l2/bench.log 2>&1; echo "bench rc $? ($SECONDS s)"; grep -E "copy bandwidth|eager|cuda graph|gpuos batch|TARGET" /tmp/l2/bench.log | cut -c1-160); cp /tmp/l2/* $OUT/ 2>/dev/null; ls $OUT
