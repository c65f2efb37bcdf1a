#!/usr/bin/env bash
# Session 11, call 14: the 1B reference check against transformers with the operators inlined.
set -u
o=${OUT:?}
P=$PWD/.gpu/s11
[ -d /tmp/site_ig5 ] || python3 -m pip install -q --no-deps --target /tmp/site_ig5 $P/ig5/*.whl >> "$o/pip.log" 2>&1
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
cd examples/llama
GPUOS_INLINE_OPERATORS=1 PYTHONPATH=/tmp/site_ig5 timeout 240 python3 check_reference.py /tmp/w1b --json "$o/check_1b_inl.json" > "$o/check_1b_inl.log" 2>&1; echo "check rc $? ($SECONDS s)"; grep -E '"same_tokens"|"ok_' "$o/check_1b_inl.log" | head
