#!/usr/bin/env bash
# Session 11, call 11: serve_check with per-run answer identity, inlining on and off.
set -u
o=${OUT:?}
P=$PWD/.gpu/s11
[ -d /tmp/site_ig5 ] || python3 -m pip install -q --no-deps --target /tmp/site_ig5 $P/ig5/*.whl >> "$o/pip.log" 2>&1
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
cd examples/llama
for inl in 1 0; do
GPUOS_INLINE_OPERATORS=$inl PYTHONPATH=/tmp/site_ig5 timeout 300 python3 serve_check.py /tmp/w1b --json "$o/serve_inl$inl.json" > "$o/serve_inl$inl.log" 2>&1; echo "serve inline=$inl rc=$? ($SECONDS s)"
python3 -c "import json; d=json.load(open('$o/serve_inl$inl.json')); print(d['ok'], d['swap_events'], d['identical_per_run'], d['swap_run_ends_s'], d['swap_run'].get('completed'))"
done
echo "end $SECONDS s"
