#!/usr/bin/env bash
# Session 13, call 10: where the attention tile's time goes (attn_phases.py: the global timer at each
# barrier of the tiles that run a chunk), batch 1 at positions 8, 40, 62.
set -u
O=${OUT:?}
P=$PWD/.gpu/s13
[ -d /tmp/site/gpuos ] || python3 -m pip install -q --no-deps --target /tmp/site $P/whl/*.whl > /dev/null 2>&1
export PYTHONPATH=/tmp/site
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > /dev/null 2>&1
cd examples/llama
PYTHONPATH=/tmp/site:$PWD timeout 120 python3 $P/attn_phases.py /tmp/w1b 2>&1 | tee $O/attn_phases.txt | grep -v Warning
