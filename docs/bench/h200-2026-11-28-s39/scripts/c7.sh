#!/usr/bin/env bash
# Session 24, call 7 (H200): serve_check on the tiny weights with the l2-inputs wheel and operators of c6.
python3 -m pip install -q --no-deps --target /tmp/site_l2 .gpu/s24/whl_l2/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site_l2:examples/llama
mkdir -p $OUT
(python3 examples/llama/make_weights.py /tmp/tiny --preset tiny > $OUT/weights.log 2>&1 &&
 timeout 70 python3 examples/llama/serve_check.py /tmp/tiny --json $OUT/serve_l2_tiny.json > $OUT/serve_l2_tiny.log 2>&1
 echo "serve rc $? ($SECONDS s)") | tee $OUT/summary.txt
