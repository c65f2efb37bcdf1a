#!/usr/bin/env bash
# Session 11, call 10: serve_check with the load repeated until the swaps are done (inlining on, as the engine sets it).
set -u
o=${OUT:?}
P=$PWD/.gpu/s11
[ -d /tmp/site_ig5 ] || python3 -m pip install -q --no-deps --target /tmp/site_ig5 $P/ig5/*.whl >> "$o/pip.log" 2>&1
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
cd examples/llama
PYTHONPATH=/tmp/site_ig5 timeout 400 python3 serve_check.py /tmp/w1b --json "$o/serve_1b.json" > "$o/serve_1b.log" 2>&1; echo "serve rc=$? ($SECONDS s)"
python3 -c "import json; d=json.load(open('$o/serve_1b.json')); print(d['ok'], d['swap_events'], d['swap_run'].get('runs'), d['swap_run'].get('completed'), d['swap_run'].get('wall_s'), d['identical_answers'], d['reference_run']['tokens_per_s'], d['swap_run']['tokens_per_s'], d.get('server_exit'))"
echo "end $SECONDS s"
