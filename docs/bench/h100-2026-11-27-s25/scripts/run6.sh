#!/usr/bin/env bash
set -u
o=${OUT:?}
P=$PWD/.gpu/s10
python3 -m pip install -q --no-deps --target /tmp/site $P/*.whl > "$o/pip.log" 2>&1
export PYTHONPATH=/tmp/site
timeout 60 $P/chain/chain 16 6 | tee "$o/chain.txt"
[ -d /tmp/w1b ] || python3 examples/llama/make_weights.py /tmp/w1b --preset 1b > "$o/weights.log" 2>&1
cp $P/llama/sm_load.py examples/llama/
(cd examples/llama && timeout 90 python3 trace_step.py /tmp/w1b 1 --raw "$o/raw_main.npy" > "$o/trace_main.txt" 2>&1; sed -n 1,12p "$o/trace_main.txt"; python3 sm_load.py "$o/raw_main.npy" | tee "$o/sm_load_main.txt")
echo "end $SECONDS s"
